"""Answer metrics pinned on hand-computed cases (docs/metrics.md, FlashRAG conventions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from text_definitions import normalize_answer_by_definition

from evalsuite.metrics import (
    cover_exact_match,
    exact_match,
    extract_answer,
    f1_score,
    normalize_answer,
    precision_score,
    recall_score,
    retrieval_hit,
)
from evalsuite.protocol.search_r1 import parse_trajectory


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("a cat and an apple", "cat and apple"),
        ("  Paris,   France! ", "paris france"),
        ("U.S.A.", "usa"),
        ("theatre", "theatre"),  # 'the' only removed as a whole word
        ("Anne", "anne"),
        ("Röntgen", "röntgen"),  # non-ASCII letters are kept, only ASCII punctuation goes
        ("“quoted”", "“quoted”"),  # typographic quotes are not in string.punctuation (SQuAD behaviour)
        ("tab\tand\nnewline", "tab and newline"),
        ("", ""),
        ("The", ""),
        ("a the an", ""),
        ("the\x00end", "\x00end"),  # a control character is no word character: 'the' before it is a whole word
        ("l’the war–a x", "l’ war– x"),  # likewise the typographic apostrophe and the dash
        ("\u212aelvin the", "kelvin"),  # the Kelvin sign lower-cases to ASCII
        ("Éa\u3000the\u00a0an b", "éa b"),  # ideographic and no-break spaces are white space
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert normalize_answer(text) == expected
    assert normalize_answer_by_definition(text) == expected


# Pieces of every kind the fast roads tell apart: articles, word characters, ASCII punctuation, white space in and out
# of ASCII, control characters, non-ASCII marks and letters, characters whose lower case changes length or script.
_PIECES = ["a", "an", "the", "The", "x", "0", "_", "é", "\u212a", "\u0130"]  # articles, word characters
_PIECES += [" ", "\t", "\x1f", "\u3000", "\u00a0", ".", "'", "\x00", "\x7f", "–", "’"]  # white space, marks
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)
_ASCII_TEXT = st.lists(st.sampled_from([p for p in _PIECES if p.isascii()]), max_size=30).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_TEXT | _ASCII_TEXT | st.text())
def test_normalize_answer_is_its_definition_on_any_text(text: str) -> None:
    assert normalize_answer(text) == normalize_answer_by_definition(text)


def test_normalize_answer_is_its_definition_on_recorded_trajectories(trajectories_dir: Path) -> None:
    texts = []
    for path in sorted(trajectories_dir.glob("*.json")):
        for example in json.loads(path.read_text(encoding="utf-8")):
            texts += [example["question"], example["output"]["final_response"], *example["golden_answers"]]
    assert [normalize_answer(t) for t in texts] == [normalize_answer_by_definition(t) for t in texts]


def retrieval_hit_by_definition(passages: list[str], golds: list[str]) -> float:
    refs = [normalize_answer_by_definition(g) for g in golds]
    return float(any(ref in normalize_answer_by_definition(p) for p in passages for ref in refs))


@settings(max_examples=400, deadline=None)
@given(st.lists(_TEXT | _ASCII_TEXT, max_size=3), st.lists(_TEXT | _ASCII_TEXT | st.sampled_from(_PIECES), max_size=3))
def test_retrieval_hit_is_its_definition_on_any_text(passages: list[str], golds: list[str]) -> None:
    # (SQuAD's retrieval hit passes over a passage that lacks a word of every gold before its slower steps)
    assert retrieval_hit(passages, golds) == retrieval_hit_by_definition(passages, golds)


def test_retrieval_hit_is_its_definition_on_recorded_trajectories(trajectories_dir: Path) -> None:
    hits = []
    for path in sorted(trajectories_dir.glob("*.json")):
        for example in json.loads(path.read_text(encoding="utf-8")):
            turns = parse_trajectory(example["output"]["final_response"]).turns
            texts = [f"{p.title} {p.text}" for turn in turns for p in turn.passages]
            hit = retrieval_hit(texts, example["golden_answers"])
            assert hit == retrieval_hit_by_definition(texts, example["golden_answers"]), example["id"]
            hits.append(hit)
    assert 0 < sum(hits) < len(hits)


def test_exact_match_ignores_case_articles_punctuation_and_space() -> None:
    assert exact_match("the  Beatles.", ["Beatles"]) == 1.0
    assert exact_match("Beatles band", ["Beatles"]) == 0.0


def test_exact_match_any_of_several_golds() -> None:
    assert exact_match("NYC", ["New York City", "nyc"]) == 1.0
    assert exact_match("Boston", ["New York City", "nyc"]) == 0.0


def test_empty_gold_list_scores_zero_everywhere() -> None:
    assert exact_match("x", []) == 0.0
    assert cover_exact_match("x", []) == 0.0
    assert f1_score("x", []) == 0.0
    assert precision_score("x", []) == 0.0
    assert recall_score("x", []) == 0.0
    assert retrieval_hit(["x y"], []) == 0.0


def test_empty_prediction() -> None:
    assert exact_match("", ["Paris"]) == 0.0
    assert f1_score("", ["Paris"]) == 0.0
    assert cover_exact_match("", ["Paris"]) == 0.0


def test_cover_exact_match_is_normalized_substring() -> None:
    assert cover_exact_match("It was Paris, France.", ["paris"]) == 1.0
    assert cover_exact_match("Parisian", ["paris"]) == 1.0  # substring, not token match (FlashRAG acc)
    assert cover_exact_match("London", ["paris"]) == 0.0


def test_f1_token_overlap_hand_computed() -> None:
    # pred tokens: [barack, obama, jr] ; gold tokens: [barack, obama] -> P=2/3, R=1, F1=0.8
    assert f1_score("Barack Obama Jr.", ["Barack Obama"]) == pytest.approx(0.8)
    assert precision_score("Barack Obama Jr.", ["Barack Obama"]) == pytest.approx(2 / 3)
    assert recall_score("Barack Obama Jr.", ["Barack Obama"]) == pytest.approx(1.0)


def test_f1_counts_repeated_tokens_as_a_multiset() -> None:
    # pred [new, new, york], gold [new, york]: common = {new:1, york:1} = 2 -> P=2/3, R=1, F1=0.8
    assert f1_score("new new york", ["new york"]) == pytest.approx(0.8)


def test_f1_is_max_over_golds_and_precision_recall_maxed_independently() -> None:
    golds = ["a b c d", "b"]  # normalized: "b c d" (article a removed) and "b"
    pred = "b c x"
    # vs "b c d": same=2, P=2/3, R=2/3, F1=2/3 ; vs "b": same=1, P=1/3, R=1, F1=0.5
    assert f1_score(pred, golds) == pytest.approx(2 / 3)
    assert precision_score(pred, golds) == pytest.approx(2 / 3)
    assert recall_score(pred, golds) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("pred", "golds", "expected"),
    [
        ("yes", ["no"], 0.0),
        ("yes", ["yes"], 1.0),
        ("yes it is", ["yes"], 0.0),  # gold is special and differs from the prediction -> 0, no token credit
        ("no", ["no way"], 0.0),  # prediction is special and differs -> 0
        ("noanswer", ["noanswer"], 1.0),
        ("yes", ["no", "yes"], 1.0),  # the rule is applied per gold
    ],
)
def test_f1_yes_no_rule(pred: str, golds: list[str], expected: float) -> None:
    assert f1_score(pred, golds) == pytest.approx(expected)


def test_unicode_predictions() -> None:
    assert exact_match("Wilhelm Conrad Röntgen", ["wilhelm conrad röntgen"]) == 1.0
    assert exact_match("Wilhelm Conrad Rontgen", ["Wilhelm Conrad Röntgen"]) == 0.0  # no accent folding
    assert f1_score("Conrad Röntgen", ["Wilhelm Conrad Röntgen"]) == pytest.approx(0.8)


def test_bare_string_gold_is_one_gold() -> None:
    assert exact_match("Paris", "Paris") == 1.0  # type: ignore[arg-type]


def test_retrieval_hit() -> None:
    passages = ["Doc about the Eiffel Tower in Paris.", "Another passage."]
    assert retrieval_hit(passages, ["PARIS"]) == 1.0
    assert retrieval_hit(passages, ["London", "berlin"]) == 0.0
    assert retrieval_hit([], ["Paris"]) == 0.0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<answer> Paris </answer>", "Paris"),
        ("<answer>first</answer> then <answer> second </answer>", "second"),  # the LAST tag
        ("<answer></answer>", ""),
        ("<answer>   </answer>", ""),
        ("no tag at all", None),
        ("<answer> unclosed", None),
        ("<answer>a</answer> <answer> unclosed", "a"),
        ("<answer>multi\nline</answer>", "multi\nline"),
        ("", None),
    ],
)
def test_extract_answer(text: str, expected: str | None) -> None:
    assert extract_answer(text) == expected
