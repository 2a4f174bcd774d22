"""Parsers never crash: random and adversarial text, huge inputs, and every real Search-R1 trajectory we have."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsuite.agent.method import get_method, list_methods
from evalsuite.protocol.tags import TagPair, all_blocks, first_block, last_block
from evalsuite.metrics.answer import extract_answer

MARKERS = [
    "<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>", "<thinking>", "</thinking>", "<information>",
    "</information>", "<result>", "</result>", "<reasoning>", "</reasoning>", "<tool_call>", "</tool_call>", "<plan>",
    "</plan>", "<eval>", "</eval>", "<|begin_of_query|>", "<|end_of_query|>", "<|begin_search_query|>",
    "<|end_search_query|>", "\\boxed{", "{", "}", "##", "So the answer is:", "Step 1:", "\n", " ", "<serach>", "</answr>",
    "<search", "search>", '{"name": "search", "arguments": {"query": "', '"}}', "1. ", ". ",
]
# Text built from the protocols' own markers (unclosed, nested, repeated, empty, misspelled) mixed with free text.
tagged_text = st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=12)), max_size=60).map("".join)
METHODS = list_methods()


def check_method_on(name: str, text: str) -> None:
    method = get_method(name)
    cut = method.postprocess(text)
    assert text.startswith(cut)
    action = method.parse_action(cut)
    assert action.kind in ("search", "answer", "invalid")
    if action.kind == "search":
        assert action.queries and all(isinstance(q, str) for q in action.queries)
        if name != "search-r1":  # Search-R1 itself searches an empty query, as its code does
            assert all(q.strip() for q in action.queries)
        assert len(action.queries) <= 3
    if action.kind == "answer":
        assert isinstance(action.answer, str)
    answer = method.extract_answer(text)
    assert answer is None or isinstance(answer, str)
    assert isinstance(method.invalid_observation(), str)


@pytest.mark.parametrize("name", METHODS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=tagged_text)
def test_parsers_never_crash_on_adversarial_text(name, text):
    check_method_on(name, text)


@pytest.mark.parametrize("name", METHODS)
@settings(max_examples=30, deadline=None)
@given(text=st.text(max_size=300))
def test_parsers_never_crash_on_random_unicode(name, text):
    check_method_on(name, text)


HUGE = [
    "<search>" * 40_000,
    "<answer>" * 40_000 + "</answer>",
    "<|begin_search_query|>" * 20_000,
    "\\boxed{" * 40_000,
    "<reasoning>" + "\n" * 200_000 + "Step 1: x" + " " * 100_000 + "</reasoning><tool_call>" + "[" * 50_000 + "</tool_call>",
    "<search> " + " ## " * 50_000 + " </search>",
    "So the answer is:" * 20_000,
    "x" * 400_000,
]


# Every parser, Search-R1's included, goes through the linear-time helpers of `tags.py`.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", METHODS)
def test_parsers_handle_huge_inputs(name):
    for text in HUGE:
        check_method_on(name, text)


_PAIR_RE = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
SEARCH, ANSWER = TagPair.xml("search"), TagPair.xml("answer")


@settings(max_examples=400, deadline=None)
@given(text=tagged_text)
def test_tag_helpers_agree_with_the_regular_expressions_they_replace(text):
    block = first_block(text, (SEARCH, ANSWER))
    match = _PAIR_RE.search(text)
    assert (block is None) == (match is None)
    if match:
        assert (block.pair.open[1:-1], block.content, block.start) == (match.group(1), match.group(2), match.start())
    assert all_blocks(text, ANSWER) == _ANSWER_RE.findall(text)
    found = _ANSWER_RE.findall(text)
    assert last_block(text, ANSWER) == (found[-1] if found else None)


def real_segments(trajectories_dir):
    """(final_response, model segments) of every recorded trajectory: the text between `<information>` blocks."""
    for path in sorted(trajectories_dir.glob("*.json")):
        for example in json.loads(path.read_text(encoding="utf-8")):
            response = example["output"]["final_response"]
            yield response, re.split(r"<information>.*?</information>", response, flags=re.DOTALL)


def test_parsers_on_every_real_trajectory(trajectories_dir):
    methods = {name: get_method(name) for name in METHODS}
    reference = methods["search-r1"]
    counts = {"segments": 0, "search": 0, "answer": 0, "invalid": 0}
    for response, segments in real_segments(trajectories_dir):
        for name in METHODS:
            methods[name].extract_answer(response)
        for segment in segments:
            counts["segments"] += 1
            expected = reference.parse_action(reference.postprocess(segment))
            counts[expected.kind] += 1
            for name, method in methods.items():
                action = method.parse_action(method.postprocess(segment))
                if name in ("subsearch", "smartsearch") and not (expected.kind == "search" and ("##" in expected.queries[0] or not expected.queries[0])):
                    # Same tags as Search-R1: the same action on real Search-R1 output.
                    assert (action.kind, action.queries, action.answer) == (expected.kind, expected.queries, expected.answer)
        assert methods["subsearch"].extract_answer(response) == extract_answer(response)
    # The recordings hold thousands of turns of every kind, so this covered real searches, answers and invalid turns.
    assert counts["segments"] > 5000 and min(counts["search"], counts["answer"], counts["invalid"]) > 100, counts
