"""Render the knowledge base as a wiki-18-format corpus of account-documentation and help-centre passages."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalsuite.tasks.adqa.helpcentre import ARTICLES
from evalsuite.tasks.adqa.kb import Entity, KnowledgeBase, Value
from evalsuite.tasks.adqa.schema import ATTRIBUTE, KIND_NOUN, RELATION, SET, AttributeSpec, RelationSpec, SetSpec

# Which facts share a passage. Every fact lives in exactly one passage; each passage holds several facts, so most
# of what a retrieved passage says is unrelated to the question at hand.
LAYOUT: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "policy": (("advertising policy", ("industry", "review_days", "min_age", "certification")),),
    "advertiser": (
        ("advertiser account", ("industry", "hq_country", "billing_method", "account_tier", "monthly_limit", "policy")),
    ),
    "campaign": (
        ("campaign settings", ("advertiser", "objective", "daily_budget", "start_date", "delivery")),
        ("campaign bidding and measurement", ("strategy", "event", "locations")),
    ),
    "ad_group": (("ad group", ("campaign", "audience", "max_cpc", "ad_format", "device")),),
    "strategy": (("bidding strategy", ("type", "max_bid", "learning_days", "target_cpa", "target_roas")),),
    "audience": (
        ("audience profile", ("type", "membership_days", "size", "age_range")),
        ("audience sources and interests", ("interests", "locations", "pixel")),
    ),
    "event": (
        (
            "conversion event",
            ("category", "click_window", "view_window", "model", "counting", "default_value", "pixel"),
        ),
    ),
    "pixel": (("pixel", ("pixel_id", "firing_method", "created", "site", "owner")),),
}


@dataclass
class Corpus:
    """Corpus rows in id order and, for each (entity key, fact name), the id of the passage stating it."""

    rows: list[dict[str, str]] = field(default_factory=list)
    fact_passage: dict[tuple[str, str], str] = field(default_factory=dict)
    fact_text: dict[tuple[str, str], str] = field(default_factory=dict)  # the value exactly as the passage words it
    text_by_id: dict[str, str] = field(default_factory=dict)


def join_list(items: tuple[str, ...] | list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def mention(entity: Entity) -> str:
    """How questions and passages name an entity: 'the campaign Aurora Spring Sale'."""
    if entity.kind == "policy":
        return f"the {entity.name}"
    return f"the {KIND_NOUN[entity.kind]} {entity.name}"


def _value_text(value: Value, rng: random.Random) -> str:
    # Dates appear in either written form; both forms are gold aliases.
    if value.kind == "date":
        return rng.choice((value.text, value.aliases[0]))
    return value.text


def _fact_value(kb: KnowledgeBase, entity: Entity, fact: str, rng: random.Random) -> tuple[str, str] | None:
    """(kind of fact, rendered value) or None when the entity lacks this optional fact."""
    if fact in entity.rels:
        return "rel", kb.entities[entity.rels[fact]].name
    if fact in entity.attrs:
        return "attr", _value_text(entity.attrs[fact], rng)
    if fact in entity.sets:
        return "set", join_list(entity.sets[fact])
    return None


def _spec(entity: Entity, fact: str, fact_kind: str) -> RelationSpec | AttributeSpec | SetSpec:
    """The declaration of one fact; every kind of spec has the `label` and `prose` a passage is worded from."""
    tables: dict[str, Mapping[tuple[str, str], RelationSpec | AttributeSpec | SetSpec]] = {
        "rel": RELATION,
        "attr": ATTRIBUTE,
        "set": SET,
    }
    return tables[fact_kind][(entity.kind, fact)]


_A_BEFORE_VOWEL = re.compile(r"\b([Aa]) (?=[aeiouAEIO])")


def fix_articles(text: str) -> str:
    """'a image pixel' -> 'an image pixel' (values are slotted into templates that say 'a')."""
    return _A_BEFORE_VOWEL.sub(lambda m: m.group(1) + "n ", text)


def _capitalize(text: str) -> str:
    return fix_articles(text[0].upper() + text[1:])


def render_entity_passage(
    kb: KnowledgeBase, entity: Entity, section: str, facts: tuple[str, ...], rng: random.Random
) -> tuple[str, str, list[tuple[str, str]]]:
    """(title, text, [(fact, value as worded)]) for one section of an entity, in prose or in field-list style."""
    present = [(fact, fv) for fact in facts if (fv := _fact_value(kb, entity, fact, rng)) is not None]
    rng.shuffle(present)
    title = f"{entity.name} ({section})"
    noun = "the policy" if entity.kind == "policy" else f"the {KIND_NOUN[entity.kind]}"
    if rng.random() < 0.35:
        parts = [f"{_capitalize(section)} {entity.name}."]
        for fact, (fact_kind, value) in present:
            parts.append(f"{_spec(entity, fact, fact_kind).label}: {value}.")
        return title, " ".join(parts), [(fact, value) for fact, (_, value) in present]
    sentences = []
    for index, (fact, (fact_kind, value)) in enumerate(present):
        subject = mention(entity) if index == 0 else noun
        template = rng.choice(_spec(entity, fact, fact_kind).prose)
        sentence = template.format(s=subject, s_obj=subject, y=value, v=value)
        sentences.append(_capitalize(sentence))
    return title, " ".join(sentences), [(fact, value) for fact, (_, value) in present]


def render_corpus(kb: KnowledgeBase, seed: int) -> Corpus:
    """All passages (entity sections plus help-centre articles), shuffled by the seed and numbered."""
    rng = random.Random(f"adqa-corpus-{seed}")
    drafts: list[tuple[str, str, list[tuple[tuple[str, str], str]]]] = []
    for kind, sections in LAYOUT.items():
        for entity in kb.by_kind[kind]:
            for section, facts in sections:
                title, text, stated = render_entity_passage(kb, entity, section, facts, rng)
                drafts.append((title, text, [((entity.key, fact), value) for fact, value in stated]))
    for title, text in ARTICLES:
        drafts.append((title, text, []))
    rng.shuffle(drafts)
    corpus = Corpus()
    for number, (title, text, stated_facts) in enumerate(drafts, start=1):
        pid = f"adqa-{number:05d}"
        contents = f'"{title}"\n{text}'
        corpus.rows.append({"id": pid, "contents": contents, "title": title, "text": text})
        corpus.text_by_id[pid] = contents
        for fact, value in stated_facts:
            if fact in corpus.fact_passage:
                raise AssertionError(f"fact {fact} rendered twice")
            corpus.fact_passage[fact] = pid
            corpus.fact_text[fact] = value
    return corpus
