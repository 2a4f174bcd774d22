"""Question templates (bridge, comparison, intersection, "which of") composed over 2-4 hops of the knowledge base."""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from evalsuite.tasks.adqa.evidence import PassageLexicon
from evalsuite.tasks.adqa.kb import DOMAIN_OF_KIND, Entity, KnowledgeBase
from evalsuite.tasks.adqa.render import Corpus, fix_articles, mention
from evalsuite.tasks.adqa.schema import (
    ATTRIBUTES,
    KIND_NOUN,
    SET_QUESTIONS,
    SETS,
    AttributeSpec,
    RelationSpec,
    SetSpec,
    relations_from,
)
from evalsuite.tasks.adqa import vocab as V

T = TypeVar("T")

TEMPLATES = ("bridge", "comparison", "intersection", "which_of")
# Share of each (template, hop count) in the generated sets.
MIXTURE: tuple[tuple[str, int, float], ...] = (
    ("bridge", 2, 0.20),
    ("bridge", 3, 0.17),
    ("bridge", 4, 0.08),
    ("comparison", 3, 0.08),
    ("comparison", 4, 0.09),
    ("intersection", 3, 0.10),
    ("intersection", 4, 0.08),
    ("which_of", 4, 0.20),
)
COMPARISON_FORMS = ("Which {p}: {a} or {b}?", "Of {a} and {b}, which {p}?", "Between {a} and {b}, which one {p}?")
WHICH_OF_FORMS = ("Which of {a} and {b} {p}?", "Between {a} and {b}, which one {p}?", "{A} or {b}: which {p}?")


@dataclass(frozen=True)
class Side:
    """A named anchor entity and the relations followed from it."""

    anchor: Entity
    path: tuple[RelationSpec, ...]


@dataclass
class Question:
    """A composed question with its gold answer(s), decomposition and the program that computes the answer."""

    template: str
    pattern: str
    question: str
    answers: list[str]
    answer_type: str
    hops: list[dict[str, str]]
    entities: list[str]
    program: dict
    domains: list[str] = field(default_factory=list)

    def metadata(self) -> dict:
        return {
            "template": self.template,
            "pattern": self.pattern,
            "hops": len(self.hops),
            "domains": self.domains,
            "answer_type": self.answer_type,
            "question_entities": self.entities,
            "decomposition": self.hops,
            "supporting_passage_ids": [hop["passage_id"] for hop in self.hops],
            "program": self.program,
        }


# ---- patterns -----------------------------------------------------------------------------------------


def chains(max_len: int) -> list[tuple[RelationSpec, ...]]:
    """Every relation path of length 0..max_len that never revisits an entity kind, keyed by its start kind."""
    found: list[tuple[RelationSpec, ...]] = []

    def extend(path: tuple[RelationSpec, ...], visited: tuple[str, ...]) -> None:
        if path:
            found.append(path)
        if len(path) == max_len:
            return
        for rel in relations_from(visited[-1]):
            if rel.dst not in visited:
                extend(path + (rel,), visited + (rel.dst,))

    for kind in KIND_NOUN:
        extend((), (kind,))
    return found


def hop_domains(start: str, path: tuple[RelationSpec, ...], terminal_kind: str) -> list[str]:
    return [DOMAIN_OF_KIND[rel.src] for rel in path] + [DOMAIN_OF_KIND[terminal_kind]]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _pattern_name(path: tuple[RelationSpec, ...], final: str) -> str:
    """'ad_group.campaign>campaign.strategy>strategy.max_bid': the facts read, in order."""
    return ">".join([f"{rel.src}.{rel.name}" for rel in path] + [final])


@functools.lru_cache(maxsize=None)
def bridge_patterns() -> dict[int, list[tuple[tuple[RelationSpec, ...], AttributeSpec]]]:
    """(path, attribute) pairs by hop count, restricted to those crossing at least two domains."""
    by_hops: dict[int, list[tuple[tuple[RelationSpec, ...], AttributeSpec]]] = {}
    for path in chains(3):
        for attr in ATTRIBUTES:
            if attr.kind == path[-1].dst and len(_unique(hop_domains(path[0].src, path, attr.kind))) >= 2:
                by_hops.setdefault(len(path) + 1, []).append((path, attr))
    return by_hops


def one_step_paths(to_kind: str) -> list[tuple[RelationSpec, ...]]:
    return [path for path in chains(1) if path[-1].dst == to_kind]


def _by_domain(rng: random.Random, options: Sequence[T], kind_of: Callable[[T], str]) -> T:
    """Pick a domain uniformly, then an option whose asked attribute lies in it: domains stay balanced."""
    domains = _unique([DOMAIN_OF_KIND[kind_of(o)] for o in options])
    domain = rng.choice(domains)
    return rng.choice([o for o in options if DOMAIN_OF_KIND[kind_of(o)] == domain])


# ---- composing text and hops --------------------------------------------------------------------------


def terminal(kb: KnowledgeBase, side: Side) -> Entity:
    entity = side.anchor
    for rel in side.path:
        entity = kb.entities[entity.rels[rel.name]]
    return entity


def noun_phrase(side: Side, rng: random.Random) -> str:
    """'the bidding strategy used by the campaign Aurora Spring Sale' (nested for longer paths)."""
    phrase = mention(side.anchor)
    for rel in side.path:
        phrase = rng.choice(rel.np).format(x=phrase)
    return phrase


def _hop(question: str, entity: Entity, fact: str, corpus: Corpus) -> dict[str, str]:
    """One atomic step: its sub-question, its answer as the passage words it, and that passage."""
    return {
        "question": question,
        "answer": corpus.fact_text[(entity.key, fact)],
        "passage_id": corpus.fact_passage[(entity.key, fact)],
        "entity": entity.name,
        "fact": f"{entity.kind}.{fact}",
        "domain": DOMAIN_OF_KIND[entity.kind],
    }


def relation_hops(kb: KnowledgeBase, corpus: Corpus, side: Side, rng: random.Random) -> list[dict[str, str]]:
    """One atomic sub-question per relation followed, each naming its entity precisely."""
    hops = []
    entity = side.anchor
    for rel in side.path:
        target = kb.entities[entity.rels[rel.name]]
        hops.append(_hop(_cap(rng.choice(rel.sub).format(x=mention(entity))), entity, rel.name, corpus))
        entity = target
    return hops


def attribute_hop(corpus: Corpus, entity: Entity, attr: AttributeSpec, rng: random.Random) -> dict[str, str]:
    return _hop(_cap(rng.choice(attr.sub).format(x=mention(entity))), entity, attr.name, corpus)


def set_hop(corpus: Corpus, entity: Entity, spec: SetSpec, rng: random.Random) -> dict[str, str]:
    return _hop(_cap(rng.choice(spec.sub).format(x=mention(entity))), entity, spec.name, corpus)


def _cap(text: str) -> str:
    return fix_articles(text[0].upper() + text[1:])


def _side_program(side: Side) -> dict:
    return {
        "anchor": {"kind": side.anchor.kind, "name": side.anchor.name},
        "path": [f"{r.src}.{r.name}" for r in side.path],
    }


# ---- the four templates -------------------------------------------------------------------------------


def make_bridge(kb: KnowledgeBase, corpus: Corpus, rng: random.Random, hops: int) -> Question | None:
    """'What is the bid cap of the bidding strategy used by
    the campaign X?': follow 1-3 relations, ask one attribute."""
    path, attr = _by_domain(rng, bridge_patterns()[hops], lambda pattern: pattern[1].kind)
    side = Side(rng.choice(kb.by_kind[path[0].src]), path)
    end = terminal(kb, side)
    if attr.name not in end.attrs:
        return None
    value = end.attrs[attr.name]
    question = _cap(rng.choice(attr.sub).format(x=noun_phrase(side, rng)))
    steps = relation_hops(kb, corpus, side, rng) + [attribute_hop(corpus, end, attr, rng)]
    return Question(
        "bridge",
        _pattern_name(path, f"{attr.kind}.{attr.name}"),
        question,
        value.answers,
        value.kind,
        steps,
        [side.anchor.name],
        {"op": "bridge", "sides": [_side_program(side)], "attribute": f"{attr.kind}.{attr.name}"},
    )


def _comparable(attr: AttributeSpec) -> bool:
    return attr.more is not None


def make_comparison(kb: KnowledgeBase, corpus: Corpus, rng: random.Random, hops: int) -> Question | None:
    """'Which has the longer click-through window: the conversion event of campaign A or that of campaign B?'"""
    attr = _by_domain(rng, [a for a in ATTRIBUTES if _comparable(a)], lambda a: a.kind)
    paths = one_step_paths(attr.kind)
    if not paths:
        return None
    path_b = rng.choice(paths)
    path_a = path_b if hops == 4 else ()
    start_a = path_a[0].src if path_a else attr.kind
    side_a = Side(rng.choice(kb.by_kind[start_a]), path_a)
    side_b = Side(rng.choice(kb.by_kind[path_b[0].src]), path_b)
    end_a, end_b = terminal(kb, side_a), terminal(kb, side_b)
    if side_a.anchor is side_b.anchor or end_a is end_b or attr.name not in end_a.attrs or attr.name not in end_b.attrs:
        return None
    va, vb = end_a.attrs[attr.name].number, end_b.attrs[attr.name].number
    if va is None or vb is None or va == vb:
        return None
    direction = rng.choice(("more", "less"))
    winner = end_a if (va > vb) == (direction == "more") else end_b
    phrase = attr.more if direction == "more" else attr.less
    a_np, b_np = noun_phrase(side_a, rng), noun_phrase(side_b, rng)
    if rng.random() < 0.5 and path_a:
        a_np, b_np, side_a, side_b = b_np, a_np, side_b, side_a
    question = _cap(rng.choice(COMPARISON_FORMS).format(p=phrase, a=a_np, b=b_np))
    steps = relation_hops(kb, corpus, side_a, rng) + relation_hops(kb, corpus, side_b, rng)
    steps += [attribute_hop(corpus, terminal(kb, s), attr, rng) for s in (side_a, side_b)]
    return Question(
        "comparison",
        _pattern_name(side_a.path, f"{attr.kind}.{attr.name}")
        + "|"
        + _pattern_name(side_b.path, f"{attr.kind}.{attr.name}"),
        question,
        [winner.name],
        "entity",
        steps,
        [side_a.anchor.name, side_b.anchor.name],
        {
            "op": "comparison",
            "sides": [_side_program(side_a), _side_program(side_b)],
            "attribute": f"{attr.kind}.{attr.name}",
            "direction": direction,
        },
    )


def make_which_of(kb: KnowledgeBase, corpus: Corpus, rng: random.Random, hops: int) -> Question | None:
    """'Which of the campaign A and the campaign B uses a bidding strategy of type Target ROAS?'"""
    attr = _by_domain(rng, [a for a in ATTRIBUTES if a.clause is not None], lambda a: a.kind)
    paths = [p for p in one_step_paths(attr.kind) if len(_unique(hop_domains(p[0].src, p, attr.kind))) >= 2]
    if not paths:
        return None
    path = rng.choice(paths)
    anchors = rng.sample(kb.by_kind[path[0].src], 2)
    sides = [Side(a, path) for a in anchors]
    ends = [terminal(kb, s) for s in sides]
    values = [e.attrs[attr.name].text if attr.name in e.attrs else None for e in ends]
    if values[0] is None or values[1] is None or values[0] == values[1]:
        return None
    pick = rng.randrange(2)
    assert attr.clause is not None  # the attributes offered above are those with a clause
    predicate = f"{path[0].vp} {attr.clause.format(v=values[pick])}"
    a_m, b_m = mention(anchors[0]), mention(anchors[1])
    question = rng.choice(WHICH_OF_FORMS).format(a=a_m, A=_cap(a_m), b=b_m, p=predicate)
    steps = relation_hops(kb, corpus, sides[0], rng) + relation_hops(kb, corpus, sides[1], rng)
    steps += [attribute_hop(corpus, e, attr, rng) for e in ends]
    return Question(
        "which_of",
        _pattern_name(path, f"{attr.kind}.{attr.name}") + "|" + _pattern_name(path, f"{attr.kind}.{attr.name}"),
        _cap(question),
        [anchors[pick].name],
        "entity",
        steps,
        [a.name for a in anchors],
        {
            "op": "which_of",
            "sides": [_side_program(s) for s in sides],
            "attribute": f"{attr.kind}.{attr.name}",
            "value": values[pick],
        },
    )


def _set_sides(space: str) -> list[tuple[tuple[RelationSpec, ...], SetSpec, str]]:
    """(path, set, start kind) for every way of reaching a set of this value space in 0 or 1 relation."""
    options: list[tuple[tuple[RelationSpec, ...], SetSpec, str]] = []
    for spec in SETS:
        if spec.space != space:
            continue
        options.append(((), spec, spec.kind))
        options += [(p, spec, p[0].src) for p in one_step_paths(spec.kind)]
    return options


def make_intersection(kb: KnowledgeBase, corpus: Corpus, rng: random.Random, hops: int) -> Question | None:
    """'Which interest category do the audience X and the audience targeted by the ad group Y have in common?'"""
    space = rng.choice(("interest", "country"))
    options = _set_sides(space)
    first = rng.choice(options)
    seconds = [o for o in options if len(o[0]) + len(first[0]) + 2 == hops]
    if not seconds:
        return None
    second = rng.choice(seconds)
    (path_a, spec_a, start_a), (path_b, spec_b, start_b) = first, second
    side_a = Side(rng.choice(kb.by_kind[start_a]), path_a)
    side_b = Side(rng.choice(kb.by_kind[start_b]), path_b)
    end_a, end_b = terminal(kb, side_a), terminal(kb, side_b)
    if side_a.anchor is side_b.anchor or end_a is end_b:
        return None
    common = [v for v in end_a.sets[spec_a.name] if v in end_b.sets[spec_b.name]]
    if len(common) != 1:
        return None
    domains = _unique(hop_domains(start_a, path_a, spec_a.kind) + hop_domains(start_b, path_b, spec_b.kind))
    if len(domains) < 2:
        return None
    answer = common[0]
    question = rng.choice(SET_QUESTIONS[space]).format(a=noun_phrase(side_a, rng), b=noun_phrase(side_b, rng))
    steps = relation_hops(kb, corpus, side_a, rng) + relation_hops(kb, corpus, side_b, rng)
    steps += [set_hop(corpus, end_a, spec_a, rng), set_hop(corpus, end_b, spec_b, rng)]
    return Question(
        "intersection",
        _pattern_name(path_a, f"{spec_a.kind}.{spec_a.name}")
        + "|"
        + _pattern_name(path_b, f"{spec_b.kind}.{spec_b.name}"),
        _cap(question),
        [answer, *V.COUNTRY_ALIASES.get(answer, ())],
        space,
        steps,
        [side_a.anchor.name, side_b.anchor.name],
        {
            "op": "intersection",
            "sides": [
                dict(_side_program(side_a), set=f"{spec_a.kind}.{spec_a.name}"),
                dict(_side_program(side_b), set=f"{spec_b.kind}.{spec_b.name}"),
            ],
        },
    )


BUILDERS = {
    "bridge": make_bridge,
    "comparison": make_comparison,
    "intersection": make_intersection,
    "which_of": make_which_of,
}


def generate_questions(
    kb: KnowledgeBase, corpus: Corpus, seed: int, n: int, max_attempts_factor: int = 200
) -> list[Question]:
    """n distinct questions drawn from MIXTURE; those a single passage could answer are rejected (by construction 0)."""
    rng = random.Random(f"adqa-questions-{seed}")
    lexicon = PassageLexicon(corpus.rows)
    weights = [w for _, _, w in MIXTURE]
    seen_text: dict[str, None] = {}
    seen_program: dict[str, None] = {}
    out: list[Question] = []
    attempts = 0
    slot: tuple[str, int] | None = None
    while len(out) < n:
        attempts += 1
        if attempts > max_attempts_factor * max(n, 10):
            raise RuntimeError(f"could only compose {len(out)} of {n} questions")
        # Draw the (template, hops) of each slot first and retry it until it succeeds, so the mixture holds
        # even for templates that are rejected more often (intersections need exactly one common value).
        if slot is None:
            template, hops, _ = rng.choices(MIXTURE, weights=weights)[0]
            slot = (template, hops)
        template, hops = slot
        question = BUILDERS[template](kb, corpus, rng, hops)
        if question is None:
            continue
        question.domains = _unique([hop["domain"] for hop in question.hops])
        if len(question.domains) < 2 or len(set(h["passage_id"] for h in question.hops)) < 2:
            continue
        key = _program_key(question.program)
        if question.question in seen_text or key in seen_program:
            continue
        if lexicon.single_passage_evidence(question.entities, question.answers):
            continue
        seen_text[question.question] = None
        seen_program[key] = None
        out.append(question)
        slot = None
    return out


def _program_key(program: dict) -> str:
    return json.dumps(program, sort_keys=True)
