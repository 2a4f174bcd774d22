"""Evaluate a question's program against the knowledge base: every answer it admits (uniqueness = exactly one)."""

from __future__ import annotations

from evalsuite.tasks.adqa.kb import Entity, KnowledgeBase


def _end(kb: KnowledgeBase, side: dict) -> Entity:
    entity = kb.named(side["anchor"]["kind"], side["anchor"]["name"])
    for step in side["path"]:
        kind, relation = step.split(".")
        if entity.kind != kind:
            raise ValueError(f"path step {step} does not start at a {entity.kind}")
        entity = kb.entities[entity.rels[relation]]
    return entity


def solve(kb: KnowledgeBase, program: dict) -> list[str]:
    """All answers the knowledge base gives for a program (bridge, comparison, which_of, intersection)."""
    op = program["op"]
    ends = [_end(kb, side) for side in program["sides"]]
    if op == "bridge":
        return [ends[0].attrs[program["attribute"].split(".")[1]].text]
    if op == "comparison":
        name = program["attribute"].split(".")[1]
        values = [e.attrs[name].number for e in ends]
        numbers = [v for v in values if v is not None]
        if len(numbers) != len(values):
            raise ValueError(f"comparison of {name}: a side has no numeric value")
        best = max(numbers) if program["direction"] == "more" else min(numbers)
        return [e.name for e, v in zip(ends, values) if v == best]
    if op == "which_of":
        name = program["attribute"].split(".")[1]
        return [
            side["anchor"]["name"]
            for side, e in zip(program["sides"], ends)
            if e.attrs.get(name) and e.attrs[name].text == program["value"]
        ]
    if op == "intersection":
        sets = [e.sets[side["set"].split(".")[1]] for side, e in zip(program["sides"], ends)]
        return [v for v in sets[0] if all(v in other for other in sets[1:])]
    raise ValueError(f"unknown program op {op!r}")
