"""How each relation and attribute is worded: in passages, in atomic sub-questions and in composed questions."""

from __future__ import annotations

from dataclasses import dataclass

KIND_NOUN = {
    "advertiser": "advertiser",
    "policy": "policy",
    "campaign": "campaign",
    "ad_group": "ad group",
    "strategy": "bidding strategy",
    "audience": "audience",
    "event": "conversion event",
    "pixel": "pixel",
}


@dataclass(frozen=True)
class RelationSpec:
    """A functional relation src -> dst. `{x}` is a noun phrase for the source, `{y}` the target's name."""

    src: str
    name: str
    dst: str
    sub: tuple[str, ...]  # atomic sub-question about a named source
    np: tuple[str, ...]  # noun phrase for the target, given a noun phrase for the source
    vp: str  # "uses a bidding strategy": the predicate head of a "which of" question
    prose: tuple[str, ...]  # passage sentences; {s} is the subject (name or pronoun)
    label: str  # field label in account-documentation passages


@dataclass(frozen=True)
class AttributeSpec:
    """An attribute of one entity kind. `{x}` is a noun phrase for the entity, `{v}` the value."""

    kind: str
    name: str
    sub: tuple[str, ...]
    prose: tuple[str, ...]
    label: str
    more: str | None = None  # comparison: "has the higher daily budget"
    less: str | None = None
    clause: str | None = None  # "which of" filter on a categorical value: "of type {v}"


@dataclass(frozen=True)
class SetSpec:
    """A set-valued attribute (several values in one fact), used by the intersection template."""

    kind: str
    name: str
    space: str  # value space shared across kinds: "interest" or "country"
    sub: tuple[str, ...]
    prose: tuple[str, ...]
    label: str
    np: tuple[str, ...]  # "the interest categories of {x}"


# The tables below are data: one declaration per relation, attribute and set, alike in shape because every entry
# answers the same questions (wording, noun phrase, prose, label); their repetition is the data's, not code's.
RELATIONS: tuple[RelationSpec, ...] = (
    RelationSpec(
        "campaign",
        "advertiser",
        "advertiser",
        sub=("Which advertiser runs {x}?", "Which advertiser account does {x} belong to?"),
        np=("the advertiser that runs {x}", "the advertiser behind {x}", "the advertiser account of {x}"),
        vp="is run by an advertiser",
        prose=(
            "{s} runs in the account of the advertiser {y}.",
            "{s} belongs to the advertiser {y}.",
            "The advertiser running {s_obj} is {y}.",
        ),
        label="Advertiser",
    ),
    RelationSpec(
        "campaign",
        "strategy",
        "strategy",
        sub=("Which bidding strategy does {x} use?", "What bidding strategy is assigned to {x}?"),
        np=(
            "the bidding strategy used by {x}",
            "the bidding strategy assigned to {x}",
            "the portfolio bidding strategy of {x}",
        ),
        vp="uses a bidding strategy",
        prose=(
            "{s} bids with the portfolio bidding strategy {y}.",
            "Bids for {s_obj} are set by the bidding strategy {y}.",
            "{s} is assigned to the bidding strategy {y}.",
        ),
        label="Bidding strategy",
    ),
    RelationSpec(
        "campaign",
        "event",
        "event",
        sub=("Which conversion event does {x} optimize for?", "What is the primary conversion event of {x}?"),
        np=(
            "the conversion event that {x} optimizes for",
            "the primary conversion event of {x}",
            "the conversion goal of {x}",
        ),
        vp="optimizes for a conversion event",
        prose=(
            "{s} optimizes for the conversion event {y}.",
            "The primary conversion event of {s_obj} is {y}.",
            "{s} counts {y} as its conversion event.",
        ),
        label="Primary conversion event",
    ),
    RelationSpec(
        "ad_group",
        "campaign",
        "campaign",
        sub=("Which campaign does {x} belong to?", "Which campaign contains {x}?"),
        np=("the campaign that contains {x}", "the parent campaign of {x}", "the campaign of {x}"),
        vp="belongs to a campaign",
        prose=(
            "{s} is part of the campaign {y}.",
            "{s} sits inside the campaign {y}.",
            "The parent campaign of {s_obj} is {y}.",
        ),
        label="Campaign",
    ),
    RelationSpec(
        "ad_group",
        "audience",
        "audience",
        sub=("Which audience does {x} target?", "What audience is {x} targeting?"),
        np=("the audience targeted by {x}", "the audience of {x}", "the audience that {x} targets"),
        vp="targets an audience",
        prose=(
            "{s} targets the audience {y}.",
            "Ads in {s_obj} are shown to the audience {y}.",
            "The audience targeted by {s_obj} is {y}.",
        ),
        label="Audience",
    ),
    RelationSpec(
        "audience",
        "pixel",
        "pixel",
        sub=("What is the source pixel of {x}?", "Which pixel is the source of {x}?"),
        np=("the pixel that feeds {x}", "the source pixel of {x}", "the pixel behind {x}"),
        vp="is built from a pixel",
        prose=(
            "{s} collects its members from the pixel {y}.",
            "Members of {s_obj} come from visits recorded by the pixel {y}.",
            "The source pixel of {s_obj} is {y}.",
        ),
        label="Source pixel",
    ),
    RelationSpec(
        "event",
        "pixel",
        "pixel",
        sub=("Which pixel records {x}?", "Which pixel tracks {x}?"),
        np=("the pixel that records {x}", "the pixel tracking {x}", "the pixel behind {x}"),
        vp="is recorded by a pixel",
        prose=(
            "{s} is recorded by the pixel {y}.",
            "The pixel {y} fires {s_obj}.",
            "{s} is tracked through the pixel {y}.",
        ),
        label="Tracking pixel",
    ),
    RelationSpec(
        "pixel",
        "owner",
        "advertiser",
        sub=("Which advertiser owns {x}?", "Which advertiser account does {x} belong to?"),
        np=("the advertiser that owns {x}", "the owner of {x}", "the advertiser account holding {x}"),
        vp="is owned by an advertiser",
        prose=(
            "{s} is owned by the advertiser {y}.",
            "The advertiser {y} owns {s_obj}.",
            "{s} was installed for the advertiser {y}.",
        ),
        label="Owner advertiser",
    ),
    RelationSpec(
        "advertiser",
        "policy",
        "policy",
        sub=("Which advertising policy applies to {x}?", "Which policy governs the ads of {x}?"),
        np=("the advertising policy that applies to {x}", "the policy governing {x}", "the ad policy covering {x}"),
        vp="falls under an advertising policy",
        prose=(
            "Ads from {s_obj} are reviewed under the {y}.",
            "{s} falls under the {y}.",
            "The {y} applies to {s_obj}.",
        ),
        label="Applicable policy",
    ),
)

ATTRIBUTES: tuple[AttributeSpec, ...] = (
    # campaign configuration
    AttributeSpec(
        "advertiser",
        "industry",
        ("What is the industry of {x}?", "What industry does {x} operate in?"),
        ("{s} operates in the {v} industry.", "The industry of {s_obj} is {v}."),
        "Industry",
        clause="in the {v} industry",
    ),
    AttributeSpec(
        "advertiser",
        "hq_country",
        ("In which country is {x} headquartered?", "Where is {x} headquartered?"),
        ("{s} is headquartered in {v}.", "The head office of {s_obj} is in {v}."),
        "Headquarters",
        clause="headquartered in {v}",
    ),
    AttributeSpec(
        "advertiser",
        "billing_method",
        ("What billing method does {x} use?", "How is {x} billed?"),
        ("{s} pays by {v}.", "Billing for {s_obj} uses {v}."),
        "Billing method",
        clause="billed by {v}",
    ),
    AttributeSpec(
        "advertiser",
        "account_tier",
        ("What is the account tier of {x}?", "Which service tier is {x} on?"),
        ("{s} is a {v} account.", "The account tier of {s_obj} is {v}."),
        "Account tier",
        clause="on the {v} account tier",
    ),
    AttributeSpec(
        "advertiser",
        "monthly_limit",
        ("What is the monthly spending limit of {x}?", "How much may {x} spend per month?"),
        ("{s} has a monthly spending limit of {v}.", "Spend for {s_obj} is capped at {v} per month."),
        "Monthly spending limit",
        more="has the higher monthly spending limit",
        less="has the lower monthly spending limit",
    ),
    AttributeSpec(
        "policy",
        "industry",
        ("Which industry does {x} cover?", "Advertisers of which industry fall under {x}?"),
        ("{s} covers advertisers in the {v} industry.", "Advertisers in the {v} industry fall under {s_obj}."),
        "Industry covered",
    ),
    AttributeSpec(
        "policy",
        "review_days",
        ("How long does ad review take under {x}?", "What is the review time of {x}?"),
        ("Ad review under {s_obj} takes {v}.", "{s} sets a review time of {v}."),
        "Review time",
        more="has the longer review time",
        less="has the shorter review time",
    ),
    AttributeSpec(
        "policy",
        "min_age",
        ("What is the minimum audience age under {x}?", "What minimum age does {x} require for targeting?"),
        ("{s} requires a minimum audience age of {v}.", "Under {s_obj} audiences must be at least {v}."),
        "Minimum audience age",
        more="requires the higher minimum audience age",
        less="allows the lower minimum audience age",
    ),
    AttributeSpec(
        "policy",
        "certification",
        ("Which certification does {x} require?", "What certification must advertisers hold under {x}?"),
        ("{s} requires the {v}.", "Advertisers covered by {s_obj} must pass the {v}."),
        "Required certification",
    ),
    AttributeSpec(
        "campaign",
        "objective",
        ("What is the objective of {x}?", "Which campaign objective is set for {x}?"),
        ("{s} has the objective {v}.", "The objective of {s_obj} is {v}."),
        "Objective",
        clause="with the objective {v}",
    ),
    AttributeSpec(
        "campaign",
        "daily_budget",
        ("What is the daily budget of {x}?", "How much can {x} spend per day?"),
        ("{s} has a daily budget of {v}.", "The daily budget of {s_obj} is {v}."),
        "Daily budget",
        more="has the larger daily budget",
        less="has the smaller daily budget",
    ),
    AttributeSpec(
        "campaign",
        "start_date",
        ("When did {x} start?", "What is the start date of {x}?"),
        ("{s} started on {v}.", "The start date of {s_obj} is {v}."),
        "Start date",
        more="started later",
        less="started earlier",
    ),
    AttributeSpec(
        "campaign",
        "delivery",
        ("What delivery method does {x} use?", "Is {x} set to standard or accelerated delivery?"),
        ("{s} uses {v} delivery.", "Budget delivery for {s_obj} is {v}."),
        "Delivery method",
        clause="with {v} budget delivery",
    ),
    AttributeSpec(
        "ad_group",
        "max_cpc",
        ("What is the maximum CPC bid of {x}?", "What max CPC is set on {x}?"),
        ("{s} has a maximum CPC bid of {v}.", "The max CPC of {s_obj} is {v}."),
        "Max CPC bid",
        more="has the higher maximum CPC bid",
        less="has the lower maximum CPC bid",
    ),
    AttributeSpec(
        "ad_group",
        "ad_format",
        ("Which ad format does {x} use?", "What ad format runs in {x}?"),
        ("{s} serves {v} ads.", "The ad format of {s_obj} is {v}."),
        "Ad format",
        clause="that serves {v} ads",
    ),
    AttributeSpec(
        "ad_group",
        "device",
        ("Which devices does {x} target?", "What device targeting does {x} use?"),
        ("{s} is shown on {v}.", "Device targeting for {s_obj} is {v}."),
        "Device targeting",
    ),
    # bidding strategies
    AttributeSpec(
        "strategy",
        "type",
        ("What type of bidding strategy is {x}?", "Which bidding type does {x} use?"),
        ("{s} is a {v} strategy.", "The bidding type of {s_obj} is {v}."),
        "Strategy type",
        clause="of type {v}",
    ),
    AttributeSpec(
        "strategy",
        "max_bid",
        ("What is the maximum bid cap of {x}?", "What bid cap does {x} enforce?"),
        ("{s} caps bids at {v}.", "The maximum bid cap of {s_obj} is {v}."),
        "Bid cap",
        more="has the higher bid cap",
        less="has the lower bid cap",
    ),
    AttributeSpec(
        "strategy",
        "learning_days",
        ("How long is the learning period of {x}?", "What is the learning period of {x}?"),
        ("{s} has a learning period of {v}.", "The learning period of {s_obj} lasts {v}."),
        "Learning period",
        more="has the longer learning period",
        less="has the shorter learning period",
    ),
    AttributeSpec(
        "strategy",
        "target_cpa",
        ("What target CPA is set in {x}?", "What is the target CPA of {x}?"),
        ("{s} aims for a target CPA of {v}.", "The target CPA of {s_obj} is {v}."),
        "Target CPA",
        more="has the higher target CPA",
        less="has the lower target CPA",
    ),
    AttributeSpec(
        "strategy",
        "target_roas",
        ("What target ROAS is set in {x}?", "What is the target ROAS of {x}?"),
        ("{s} aims for a target ROAS of {v}.", "The target ROAS of {s_obj} is {v}."),
        "Target ROAS",
        more="has the higher target ROAS",
        less="has the lower target ROAS",
    ),
    # audience targeting
    AttributeSpec(
        "audience",
        "type",
        ("What type of audience is {x}?", "Which audience type is {x}?"),
        ("{s} is a {v} audience.", "The audience type of {s_obj} is {v}."),
        "Audience type",
        clause="of type {v}",
    ),
    AttributeSpec(
        "audience",
        "membership_days",
        ("What is the membership duration of {x}?", "How long do members stay in {x}?"),
        ("Members stay in {s_obj} for {v}.", "{s} has a membership duration of {v}."),
        "Membership duration",
        more="has the longer membership duration",
        less="has the shorter membership duration",
    ),
    AttributeSpec(
        "audience",
        "size",
        ("What is the estimated size of {x}?", "How many users does {x} reach?"),
        ("{s} has an estimated size of {v}.", "The estimated reach of {s_obj} is {v}."),
        "Estimated size",
        more="has the larger estimated size",
        less="has the smaller estimated size",
    ),
    AttributeSpec(
        "audience",
        "age_range",
        ("What age range does {x} cover?", "Which age range is {x} limited to?"),
        ("{s} covers ages {v}.", "The age range of {s_obj} is {v}."),
        "Age range",
        clause="limited to ages {v}",
    ),
    # conversion tracking
    AttributeSpec(
        "event",
        "category",
        ("What category is {x}?", "Which conversion category does {x} belong to?"),
        ("{s} is a {v} conversion.", "The conversion category of {s_obj} is {v}."),
        "Category",
        clause="in the {v} category",
    ),
    AttributeSpec(
        "event",
        "click_window",
        ("What is the click-through attribution window of {x}?", "How long is the click-through window of {x}?"),
        ("{s} uses a click-through attribution window of {v}.", "The click-through window of {s_obj} is {v}."),
        "Click-through window",
        more="has the longer click-through window",
        less="has the shorter click-through window",
    ),
    AttributeSpec(
        "event",
        "view_window",
        ("What is the view-through attribution window of {x}?", "How long is the view-through window of {x}?"),
        ("{s} uses a view-through attribution window of {v}.", "The view-through window of {s_obj} is {v}."),
        "View-through window",
        more="has the longer view-through window",
        less="has the shorter view-through window",
    ),
    AttributeSpec(
        "event",
        "model",
        ("Which attribution model does {x} use?", "What attribution model is applied to {x}?"),
        ("{s} is credited with the {v} attribution model.", "The attribution model of {s_obj} is {v}."),
        "Attribution model",
        clause="credited with {v} attribution",
    ),
    AttributeSpec(
        "event",
        "counting",
        ("How are conversions counted for {x}?", "What counting method does {x} use?"),
        ("{s} counts {v}.", "The counting method of {s_obj} is {v}."),
        "Counting",
    ),
    AttributeSpec(
        "event",
        "default_value",
        ("What default value is assigned to {x}?", "What is the default conversion value of {x}?"),
        ("{s} has a default conversion value of {v}.", "Each {s_obj} conversion is worth {v} by default."),
        "Default value",
        more="has the higher default conversion value",
        less="has the lower default conversion value",
    ),
    AttributeSpec(
        "pixel",
        "pixel_id",
        ("What is the ID of {x}?", "Which pixel ID does {x} have?"),
        ("{s} has the ID {v}.", "The pixel ID of {s_obj} is {v}."),
        "Pixel ID",
    ),
    AttributeSpec(
        "pixel",
        "firing_method",
        ("How does {x} fire?", "Which firing method does {x} use?"),
        ("{s} fires through a {v}.", "The firing method of {s_obj} is {v}."),
        "Firing method",
        clause="that fires through a {v}",
    ),
    AttributeSpec(
        "pixel",
        "created",
        ("When was {x} created?", "What is the creation date of {x}?"),
        ("{s} was created on {v}.", "The creation date of {s_obj} is {v}."),
        "Created",
        more="was created later",
        less="was created earlier",
    ),
    AttributeSpec(
        "pixel",
        "site",
        ("On which website is {x} installed?", "Which site is {x} installed on?"),
        ("{s} is installed on {v}.", "The site running {s_obj} is {v}."),
        "Installed on",
    ),
)

SETS: tuple[SetSpec, ...] = (
    SetSpec(
        "audience",
        "interests",
        "interest",
        sub=("Which interest categories does {x} include?", "What interests define {x}?"),
        prose=("{s} is defined by the interests {v}.", "The interest categories of {s_obj} are {v}."),
        label="Interests",
        np=("{x}",),
    ),
    SetSpec(
        "audience",
        "locations",
        "country",
        sub=("Which countries does {x} cover?", "In which countries are the members of {x}?"),
        prose=("{s} covers users in {v}.", "The locations of {s_obj} are {v}."),
        label="Locations",
        np=("{x}",),
    ),
    SetSpec(
        "campaign",
        "locations",
        "country",
        sub=("Which countries does {x} target?", "In which countries does {x} run?"),
        prose=("{s} targets {v}.", "The target locations of {s_obj} are {v}."),
        label="Target locations",
        np=("{x}",),
    ),
)

# Question wording per value space of the intersection template.
SET_QUESTIONS = {
    "interest": (
        "Which interest category do {a} and {b} have in common?",
        "Which interest is shared by {a} and {b}?",
        "What interest category appears in both {a} and {b}?",
    ),
    "country": (
        "Which country is covered by both {a} and {b}?",
        "Which country do {a} and {b} both target?",
        "In which country do {a} and {b} overlap?",
    ),
}

RELATION = {(r.src, r.name): r for r in RELATIONS}
ATTRIBUTE = {(a.kind, a.name): a for a in ATTRIBUTES}
SET = {(s.kind, s.name): s for s in SETS}


def relations_from(kind: str) -> list[RelationSpec]:
    """Relations whose source is `kind`, in declaration order."""
    return [r for r in RELATIONS if r.src == kind]
