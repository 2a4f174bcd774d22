"""Trajectory parsing on real Search-R1 outputs and on malformed text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.protocol.passages import parse_passages
from evalsuite.protocol.search_r1 import INVALID_ACTION, parse_trajectory, response_protocol
from evalsuite.protocol.trajectory import response_errors
from evalsuite.metrics.answer import extract_answer


def _load(trajectories_dir: Path, prefix: str) -> list[dict]:
    (path,) = sorted(trajectories_dir.glob(f"{prefix}*.json"))
    return json.loads(path.read_text())


def test_real_nq_trajectory_turns(trajectories_dir: Path) -> None:
    item = next(x for x in _load(trajectories_dir, "nq_") if x["id"] == "test_3283")
    parsed = parse_trajectory(item["output"]["final_response"])
    assert len(parsed.turns) == 2
    first, second = parsed.turns
    assert first.query == "story of the prodigal son"
    assert first.think and first.think[0].startswith("The story of the Prodigal Son")
    assert [p.title for p in first.passages] == ["Parable of the Prodigal Son", "The Prodigal", "The Prodigal Trilogy"]
    assert first.passages[1].text.startswith("The Prodigal The Prodigal is a 1955 Eastmancolor")
    assert second.query is None and second.answer == "Jesus Christ"
    assert parsed.answer == "Jesus Christ"
    assert parsed.errors == []


@pytest.mark.parametrize(
    "prefix",
    ["bamboogle_2026_04_24_16_17", "bamboogle_2026_04_24_17_37", "bamboogle_2026_04_28", "bamboogle_2026_04_29", "nq_", "triviaqa_"],
)
def test_parsed_answer_equals_recorded_prediction_on_every_question(trajectories_dir: Path, prefix: str) -> None:
    items = _load(trajectories_dir, prefix)
    mismatches = [x["id"] for x in items if (parse_trajectory(x["output"]["final_response"]).answer or "") != x["output"]["pred"]]
    assert mismatches == []
    responses = [x["output"]["final_response"] for x in items]
    errors = [response_errors(response, response_protocol()) for response in responses]
    assert errors == [parse_trajectory(response).errors for response in responses]


def test_three_passages_per_search_in_seed1_runs(trajectories_dir: Path) -> None:
    for item in _load(trajectories_dir, "nq_")[:200]:
        for turn in parse_trajectory(item["output"]["final_response"]).turns:
            if turn.query is not None and turn.passages:
                assert len(turn.passages) == 3
                assert all(p.title for p in turn.passages)


def test_blank_line_passage_layout_from_older_flashrag_template() -> None:
    block = '\n"Exploration of Uranus"\nExploration of Uranus The exploration...\n\n"Space exploration"\nthe only object...\n\nUranus\nthe outer rings\n'
    passages = parse_passages(block)
    assert [p.title for p in passages] == ["Exploration of Uranus", "Space exploration", "Uranus"]
    assert passages[2].text == "the outer rings"


def test_title_with_parentheses() -> None:
    (passage,) = parse_passages('Doc 1(Title: "Big Fish (novel)") Big Fish is a 1998 novel by Daniel Wallace.')
    assert passage.title == "Big Fish (novel)"
    assert passage.text == "Big Fish is a 1998 novel by Daniel Wallace."


def test_unclosed_tags_are_protocol_errors() -> None:
    parsed = parse_trajectory("<think> hmm <search> capital of France")
    assert "turn 1: unclosed <think>" in parsed.errors
    assert "turn 1: unclosed <search>" in parsed.errors
    assert parsed.answer is None


def test_search_without_information_and_text_after_answer() -> None:
    parsed = parse_trajectory("<search> q </search>")
    assert parsed.errors == ["turn 1: search without information"]
    parsed = parse_trajectory("<answer> Paris </answer> and more text")
    assert "text after the answer" in parsed.errors
    assert parsed.answer == "Paris"


def test_information_without_search_and_unclosed_information() -> None:
    parsed = parse_trajectory("I will look.\n<information>Year</information>\n<answer>1812</answer>")
    assert "turn 1: information without a search" in parsed.errors
    assert parsed.passages == [] and len(parsed.turns) == 1  # the model's own <information> is model text
    parsed = parse_trajectory("<search>q</search><information>Doc 1(Title: A) text")
    assert "unclosed <information>" in parsed.errors
    assert parsed.turns[0].passages[0].title == "A"


def test_prediction_is_the_last_answer_tag_of_the_whole_response_as_search_r1_records_it() -> None:
    # Search-R1 and FlashRAG extract over the whole response, observations included; the model's turn answered nothing.
    text = "<search>q</search><information>Doc 1(Title: A) <answer>leak</answer></information>"
    parsed = parse_trajectory(text)
    assert parsed.answer == extract_answer(text) == "leak"
    assert parsed.turns[0].answer is None and parsed.turns[0].passages[0].text == "<answer>leak</answer>"


def test_invalid_action_message_marks_the_previous_turn() -> None:
    text = f"I think it is Paris.{INVALID_ACTION}<answer> Paris </answer>"
    parsed = parse_trajectory(text)
    assert [t.text for t in parsed.turns] == ["I think it is Paris.", "<answer> Paris </answer>"]
    assert parsed.turns[0].invalid_action and not parsed.turns[1].invalid_action
    assert parsed.answer == "Paris"
    # Ended by the invalid-action message, the prediction is what Search-R1 records: the message's own "and".
    assert parse_trajectory(f"I think it is Paris.{INVALID_ACTION}").answer == "and"


def test_empty_text() -> None:
    parsed = parse_trajectory("")
    assert parsed.turns == [] and parsed.answer is None and parsed.errors == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<search>", "</search>", "<answer>", "</answer>", "<information>", "</information>", "Doc 1(Title: ", '"', ")", " text ", "\n\n", "My previous action is invalid."]), max_size=40))
def test_parser_never_raises_on_tag_soup(pieces: list[str]) -> None:
    parsed = parse_trajectory("".join(pieces))
    assert isinstance(parsed.errors, list)
    # the errors alone (what every record asks for) are the full parse's
    assert response_errors("".join(pieces), response_protocol()) == parsed.errors
