"""The synthetic ad-platform knowledge base: entities, their attributes and their (functional) relations."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from evalsuite.tasks.adqa import vocab as V

# Which of AD-QA's four knowledge domains each entity kind belongs to (Search-P1, appendix A).
DOMAIN_OF_KIND = {
    "advertiser": "campaign configuration",
    "policy": "campaign configuration",
    "campaign": "campaign configuration",
    "ad_group": "campaign configuration",
    "strategy": "bidding strategies",
    "audience": "audience targeting",
    "event": "conversion tracking",
    "pixel": "conversion tracking",
}
DOMAINS = ("campaign configuration", "bidding strategies", "audience targeting", "conversion tracking")


@dataclass(frozen=True)
class Value:
    """One attribute value: its canonical text, accepted aliases, and a number when values are ordered."""

    text: str
    aliases: tuple[str, ...] = ()
    number: float | None = None
    kind: str = "category"  # answer type: money, duration, percentage, date, count, identifier, category, country, ...

    @property
    def answers(self) -> list[str]:
        return [self.text, *[a for a in self.aliases if a != self.text]]


@dataclass
class Entity:
    """A node of the knowledge base; `rels` maps a relation name to the key of its single target."""

    kind: str
    key: str
    name: str
    attrs: dict[str, Value] = field(default_factory=dict)
    sets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)


@dataclass
class KnowledgeBase:
    """All entities by key, with per-kind lists in creation order (deterministic)."""

    entities: dict[str, Entity] = field(default_factory=dict)
    by_kind: dict[str, list[Entity]] = field(default_factory=dict)

    def add(self, entity: Entity) -> Entity:
        if entity.key in self.entities:
            raise ValueError(f"duplicate entity key {entity.key}")
        self.entities[entity.key] = entity
        self.by_kind.setdefault(entity.kind, []).append(entity)
        return entity

    def named(self, kind: str, name: str) -> Entity:
        for entity in self.by_kind[kind]:
            if entity.name == name:
                return entity
        raise KeyError(f"no {kind} named {name!r}")


@dataclass(frozen=True)
class KBSize:
    """How many entities of each kind to generate."""

    advertisers: int = 110
    campaigns_per_advertiser: tuple[int, int] = (6, 14)
    ad_groups_per_campaign: tuple[int, int] = (1, 3)
    strategies: int = 420
    audiences: int = 620
    events: int = 560
    pixels: int = 300


# ---- value constructors -------------------------------------------------------------------------------


def money(cents: int) -> Value:
    """$1,250 or $2.40, with word and currency-code aliases."""
    dollars, rest = divmod(cents, 100)
    amount = f"{dollars:,}" if rest == 0 else f"{dollars:,}.{rest:02d}"
    plain = amount.replace(",", "")
    aliases = (f"{amount} dollars", f"USD {amount}", f"{plain} USD", f"${plain}")
    return Value(f"${amount}", aliases, cents / 100, "money")


def days(n: int, unit: str = "days") -> Value:
    label = f"{n} {unit if n != 1 else unit[:-1]}"
    return Value(label, (f"{n}-day", f"{n} {'days' if n != 1 else 'day'}"), float(n), "duration")


def percent(n: int) -> Value:
    return Value(f"{n}%", (f"{n} percent", f"{n / 100:g}x"), float(n), "percentage")


def count(n: int, unit: str) -> Value:
    return Value(f"{n:,} {unit}", (f"{n:,}", str(n)), float(n), "count")


def date(year: int, month: int, day: int) -> Value:
    iso = f"{year:04d}-{month:02d}-{day:02d}"
    words = f"{V.MONTHS[month - 1]} {day}, {year}"
    return Value(iso, (words, f"{day} {V.MONTHS[month - 1]} {year}"), float(year * 10000 + month * 100 + day), "date")


def category(text: str, aliases: tuple[str, ...] = (), kind: str = "category") -> Value:
    return Value(text, aliases, None, kind)


def country(name: str) -> Value:
    return Value(name, V.COUNTRY_ALIASES.get(name, ()), None, "country")


# ---- name generation ----------------------------------------------------------------------------------


def _unique_names(rng: random.Random, n: int, parts: tuple[tuple[str, ...], ...], taken: dict[str, None]) -> list[str]:
    names: list[str] = []
    while len(names) < n:
        name = " ".join(rng.choice(p) for p in parts)
        if name not in taken:
            taken[name] = None
            names.append(name)
    return names


def _campaign_names(rng: random.Random, n: int, taken: dict[str, None]) -> list[list[str]]:
    """Families of near-identical campaign names ("Aurora Spring
    Sale", "Aurora Spring Sale UK", "Aurora Spring Promo")."""
    families: list[list[str]] = []
    total = 0
    while total < n:
        base = f"{rng.choice(V.CAMPAIGN_THEMES)} {rng.choice(V.CAMPAIGN_OCCASIONS)}"
        family: list[str] = []
        purposes = rng.sample(V.CAMPAIGN_PURPOSES, 2)
        candidates = [
            f"{base} {purposes[0]}",
            f"{base} {purposes[0]} {rng.choice(V.CAMPAIGN_MARKETS)}",
            f"{base} {purposes[1]}",
        ]
        for name in candidates[: rng.randint(1, 3)]:
            if name not in taken:
                taken[name] = None
                family.append(name)
        if family:
            families.append(family)
            total += len(family)
    return families


# ---- the generator ------------------------------------------------------------------------------------


def build_kb(seed: int, size: KBSize = KBSize()) -> KnowledgeBase:
    """Generate the knowledge base; the same seed always gives the same entities in the same order."""
    rng = random.Random(f"adqa-kb-{seed}")
    kb = KnowledgeBase()
    taken: dict[str, None] = {}
    # One block per entity kind, in a fixed order (the seed's draws depend on it): the blocks look alike because each
    # builds an Entity, but their attributes, value draws and relations are each kind's own.

    for i, (industry, (policy_name, certification)) in enumerate(zip(V.INDUSTRIES, V.POLICIES)):
        kb.add(
            Entity(
                "policy",
                f"policy:{i:02d}",
                policy_name,
                attrs={
                    "industry": category(industry),
                    "review_days": days(rng.choice((1, 2, 3, 4, 5, 7, 10)), "business days"),
                    "min_age": Value(
                        f"{(years := rng.choice((18, 21, 25)))} years",
                        (f"{years}+", f"{years} years old", str(years)),
                        float(years),
                        "age",
                    ),
                    "certification": category(certification, kind="name"),
                },
            )
        )
    policy_of_industry = {p.attrs["industry"].text: p for p in kb.by_kind["policy"]}

    brands = list(V.ADVERTISER_BRANDS)
    rng.shuffle(brands)
    advertiser_names: list[str] = []
    for brand in brands:
        # Some brands have two accounts with near-identical names ("Northwind Labs" and "Northwind Brands").
        for suffix in rng.sample(V.ADVERTISER_SUFFIXES, 2 if rng.random() < 0.85 else 1):
            advertiser_names.append(f"{brand} {suffix}")
    for i, name in enumerate(advertiser_names[: size.advertisers]):
        taken[name] = None
        industry = rng.choice(V.INDUSTRIES)
        kb.add(
            Entity(
                "advertiser",
                f"advertiser:{i:03d}",
                name,
                attrs={
                    "industry": category(industry),
                    "hq_country": country(rng.choice(V.COUNTRIES)),
                    "billing_method": category(rng.choice(V.BILLING_METHODS)),
                    "account_tier": category(rng.choice(V.ACCOUNT_TIERS)),
                    "monthly_limit": money(100 * rng.choice(V.MONTHLY_LIMITS)),
                },
                rels={"policy": policy_of_industry[industry].key},
            )
        )

    sites: dict[str, None] = {}
    for i, name in enumerate(_unique_names(rng, size.pixels, (V.PIXEL_TREES, V.PIXEL_PLACES), taken)):
        while True:
            site = f"{rng.choice(V.SITE_WORDS)}.{rng.choice(V.SITE_STEMS)}.{rng.choice(V.SITE_TLDS)}"
            if site not in sites:
                sites[site] = None
                break
        pixel_id = f"PX-{rng.randint(100000, 999999)}"
        kb.add(
            Entity(
                "pixel",
                f"pixel:{i:03d}",
                name,
                attrs={
                    "pixel_id": Value(pixel_id, (pixel_id.replace("-", ""), pixel_id[3:]), None, "identifier"),
                    "firing_method": category(m := rng.choice(V.FIRING_METHODS), V.FIRING_ALIASES[m]),
                    "created": date(rng.choice((2021, 2022, 2023, 2024)), rng.randint(1, 12), rng.randint(1, 28)),
                    "site": Value(site, (f"https://{site}",), None, "website"),
                },
                rels={"owner": rng.choice(kb.by_kind["advertiser"]).key},
            )
        )

    for i, name in enumerate(_unique_names(rng, size.strategies, (V.STRATEGY_WORDS_A, V.STRATEGY_WORDS_B), taken)):
        kind = rng.choice(V.STRATEGY_TYPES)
        attrs = {
            "type": category(kind, V.STRATEGY_TYPE_ALIASES[kind]),
            "max_bid": money(rng.choice(V.MAX_BID_CENTS)),
            "learning_days": days(rng.choice(V.LEARNING_DAYS)),
        }
        if kind == "Target CPA":
            attrs["target_cpa"] = money(100 * rng.choice(V.TARGET_CPA_DOLLARS))
        if kind == "Target ROAS":
            attrs["target_roas"] = percent(rng.choice(V.TARGET_ROAS_PERCENT))
        kb.add(Entity("strategy", f"strategy:{i:03d}", name, attrs=attrs))

    for i, name in enumerate(_unique_names(rng, size.events, (V.EVENT_MINERALS, V.EVENT_STARS), taken)):
        kb.add(
            Entity(
                "event",
                f"event:{i:03d}",
                name,
                attrs={
                    "category": category(rng.choice(V.EVENT_CATEGORIES)),
                    "click_window": days(rng.choice(V.CLICK_WINDOWS)),
                    "view_window": days(rng.choice(V.VIEW_WINDOWS)),
                    "model": category(
                        m := rng.choice(V.ATTRIBUTION_MODELS), (m.replace("-", " "),) if "-" in m else ()
                    ),
                    "counting": category(rng.choice(V.COUNTING_METHODS)),
                    "default_value": money(100 * rng.choice(V.EVENT_VALUES)),
                },
                rels={"pixel": rng.choice(kb.by_kind["pixel"]).key},
            )
        )

    for i, name in enumerate(
        _unique_names(rng, size.audiences, (V.AUDIENCE_DESCRIPTORS, V.AUDIENCE_PERSONAS, V.AUDIENCE_GROUPS), taken)
    ):
        kind = rng.choice(V.AUDIENCE_TYPES)
        kb.add(
            Entity(
                "audience",
                f"audience:{i:03d}",
                name,
                attrs={
                    "type": category(kind, V.AUDIENCE_TYPE_ALIASES[kind]),
                    "membership_days": days(rng.choice(V.MEMBERSHIP_DAYS)),
                    "size": count(rng.choice(V.AUDIENCE_SIZES), "users"),
                    "age_range": Value(
                        ages := rng.choice(V.AGE_RANGES), (ages.replace("-", " to "),), None, "age range"
                    ),
                },
                sets={
                    "interests": tuple(rng.sample(V.INTERESTS, 3)),
                    "locations": tuple(rng.sample(V.COUNTRIES, rng.randint(2, 3))),
                },
                rels={"pixel": rng.choice(kb.by_kind["pixel"]).key},
            )
        )

    # Strategies and events are shared by several campaigns: similar settings across campaigns are hard distractors.
    n_campaigns = sum(rng.randint(*size.campaigns_per_advertiser) for _ in kb.by_kind["advertiser"])
    families = _campaign_names(rng, n_campaigns, taken)
    rng.shuffle(families)
    campaign_index = 0
    advertisers = kb.by_kind["advertiser"]
    for f_index, family in enumerate(families):
        advertiser = advertisers[f_index % len(advertisers)]
        for name in family:
            kb.add(
                Entity(
                    "campaign",
                    f"campaign:{campaign_index:04d}",
                    name,
                    attrs={
                        "objective": category(rng.choice(V.CAMPAIGN_OBJECTIVES)),
                        "daily_budget": money(100 * rng.choice(V.DAILY_BUDGETS)),
                        "start_date": date(rng.choice((2023, 2024, 2025)), rng.randint(1, 12), rng.randint(1, 28)),
                        "delivery": category(rng.choice(V.DELIVERY_METHODS)),
                    },
                    sets={"locations": tuple(rng.sample(V.COUNTRIES, rng.randint(2, 4)))},
                    rels={
                        "advertiser": advertiser.key,
                        "strategy": rng.choice(kb.by_kind["strategy"]).key,
                        "event": rng.choice(kb.by_kind["event"]).key,
                    },
                )
            )
            campaign_index += 1

    ad_group_names = iter(
        _unique_names(
            rng,
            len(kb.by_kind["campaign"]) * size.ad_groups_per_campaign[1],
            (V.ADGROUP_COLORS, V.ADGROUP_ANIMALS, V.ADGROUP_KEYWORDS),
            taken,
        )
    )
    index = 0
    for campaign in kb.by_kind["campaign"]:
        for _ in range(rng.randint(*size.ad_groups_per_campaign)):
            kb.add(
                Entity(
                    "ad_group",
                    f"ad_group:{index:04d}",
                    next(ad_group_names),
                    attrs={
                        "max_cpc": money(rng.choice(V.MAX_CPC_CENTS)),
                        "ad_format": category(rng.choice(V.AD_FORMATS)),
                        "device": category(rng.choice(V.DEVICE_TARGETS)),
                    },
                    rels={"campaign": campaign.key, "audience": rng.choice(kb.by_kind["audience"]).key},
                )
            )
            index += 1
    return kb
