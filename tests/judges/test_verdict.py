"""The tolerant verdict parser: JSON, fenced, embedded, truncated, labelled or leading yes/no; otherwise recorded as unparseable."""

from __future__ import annotations

import pytest

from evalsuite.judges.verdict import parse_query_list, parse_verdict


@pytest.mark.parametrize(
    ("reply", "value", "rationale"),
    [
        ('{"verdict": true, "rationale": "one fact"}', True, "one fact"),
        ('```json\n{"verdict": "no", "rationale": "two facts"}\n```', False, "two facts"),
        ('Sure! Here is my judgment: {"answer": 1, "reason": "ok"} Hope it helps.', True, "ok"),
        ('{"verdict": false, "rationale": "the query bund', False, "the query bund"),  # cut by max_tokens
        ("Verdict: YES\nThe query names one entity.", True, ""),
        ("No, the search query does not ask for exactly one", False, "the search query does not ask for exactly one"),
    ],
)
def test_parseable_replies(reply: str, value: bool, rationale: str) -> None:
    verdict = parse_verdict(reply)
    assert (verdict.value, verdict.rationale, verdict.error) == (value, rationale, None)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("", "empty reply"),
        ('{\n  "query": {"type": "search", "params": [', "no verdict found in the reply"),
        ('{"verdict": "maybe"}', "'verdict' is 'maybe', not a boolean"),
        ('"verdict": true ... "verdict": false', "contradictory verdicts in the reply"),
        ("The query is about Obama's birthplace.", "no verdict found in the reply"),
    ],
)
def test_unparseable_replies_are_recorded_never_guessed(reply: str, error: str) -> None:
    verdict = parse_verdict(reply)
    assert verdict.value is None and verdict.error == error


def test_teacher_query_lists() -> None:
    assert parse_query_list('{"queries": ["who founded X", "when was Y born"]}') == (["who founded X", "when was Y born"], None)
    assert parse_query_list('Queries:\n["a b", "c d"]') == (["a b", "c d"], None)
    assert parse_query_list("1. who founded X\n2. when") == ([], "no JSON list of queries found in the reply")
