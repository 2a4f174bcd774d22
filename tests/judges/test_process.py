"""Rule-based process metrics: SmartSearch novelty, Search Quality rates, Search Efficiency, Search-P1 turn statistics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.metrics.process import (
    doc_key,
    extract_queries,
    novelty_flags,
    overlap_counts,
    search_efficiency,
    search_quality_rates,
    search_rounds,
    turn_statistics,
)
from evalsuite.runs import RunDirectory
from evalsuite.runs.schema import ExampleRecord, Passage, Turn


def _turn(query: str | None, ids: list[str], sub: list[str] | None = None) -> Turn:
    return Turn(text="", query=query, sub_queries=sub or [], passages=[Passage(text=f"text {i}", doc_id=i) for i in ids])


def _record(rid: str, em: float, searches: int, turns: int) -> ExampleRecord:
    return ExampleRecord(id=rid, task="t", question="q", golden_answers=["a"], prediction="a", metrics={"em": em, "n_searches": float(searches), "n_turns": float(turns)})


def test_overlap_counts_documents_seen_in_any_earlier_round() -> None:
    turns = [_turn("q1", ["a", "b", "c"]), Turn(text="thinking"), _turn("q2", ["a", "b", "d"]), _turn("q3", ["e", "f", "a"]), _turn("q4", ["d", "e", "f"])]
    rounds = search_rounds(turns)
    assert [r.query for r in rounds] == ["q1", "q2", "q3", "q4"]
    assert overlap_counts(rounds) == [0, 2, 1, 3]
    assert novelty_flags(rounds, max_overlap=1) == [True, False, True, False]
    assert novelty_flags(rounds, max_overlap=2) == [True, True, True, False]


def test_documents_without_ids_are_identified_by_normalized_title_and_text() -> None:
    assert doc_key(Passage(title="The Beatles", text="Band.")) == doc_key(Passage(title="beatles", text="band"))
    assert doc_key(Passage(title="Beatles", text="band", doc_id="7")) == "id:7"


def test_sub_queries_are_separate_queries_but_one_retrieval_round() -> None:
    turns = [_turn(None, ["a"], sub=["who is x", "when was y"]), _turn("z", ["a"])]
    assert extract_queries(turns) == ["who is x", "when was y", "z"]
    assert [r.query for r in search_rounds(turns)] == ["who is x ## when was y", "z"]


def test_perfect_and_partial_rate() -> None:
    examples = [
        (True, [True, True]),  # correct, all high-quality -> perfect
        (True, [True, False]),  # correct, not all
        (True, []),  # no search: outside both rates
        (False, [False, True]),  # wrong, some high-quality -> partial
        (False, [False]),
        (False, [False, False]),
    ]
    rates = search_quality_rates(examples)
    assert rates == {"perfect_rate": 0.5, "partial_rate": pytest.approx(1 / 3), "n_correct_with_search": 2, "n_wrong_with_search": 3}


def test_search_efficiency_is_correct_answers_per_search_call() -> None:
    assert search_efficiency([1, 0, 1, 1], [1, 2, 3, 2]) == pytest.approx(3 / 8)
    assert search_efficiency([1, 0], [0, 0]) is None


def test_turn_statistics_of_successful_and_failed_trajectories() -> None:
    records = [_record("1", 1.0, 1, 2), _record("2", 1.0, 2, 3), _record("3", 0.0, 3, 4), _record("4", 0.0, 4, 5), _record("5", 0.0, 2, 3)]
    stats = turn_statistics(records)
    assert stats["success"]["mean_searches"] == 1.5 and stats["failure"]["mean_searches"] == 3.0
    assert stats["gap_searches"] == 1.5 and stats["relative_gap_searches"] == 1.0  # +100%, Search-P1's way of quoting it
    assert stats["gap_turns"] == 1.5 and stats["relative_gap_turns"] == pytest.approx(0.6)
    assert stats["failure"]["searches_share"] == {"0": 0.0, "1": 0.0, "2": pytest.approx(1 / 3), "3+": pytest.approx(2 / 3)}


def test_score_reports_novelty_and_turn_statistics_on_real_trajectories(trajectories_dir: Path, tmp_path: Path) -> None:
    (source,) = trajectories_dir.glob("bamboogle_2026_04_24_17_37*.json")
    result = subprocess.run([sys.executable, "-m", "evalsuite", "score", str(source), "-o", str(tmp_path)], capture_output=True, text=True, timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "search process (rule-based)" in result.stdout and "novel rounds" in result.stdout
    run = RunDirectory(tmp_path / source.stem)
    records = {r.id: r for r in run.read_predictions()}
    # test_4 repeats its first query verbatim; all five documents of round 2 were already retrieved (read off the file)
    test_4 = records["test_4"]
    assert [t.query for t in test_4.turns if t.query] == ["last king from Britain's House of Hanover died"] * 2
    assert overlap_counts(search_rounds(test_4.turns)) == [0, 5]
    assert (test_4.metrics["n_novel"], test_4.metrics["n_redundant"]) == (1.0, 1.0)
    process = run.read_metrics().extra["process"]["tasks"]["bamboogle"]
    rounds = sum(r.metrics["n_novel"] + r.metrics["n_redundant"] for r in records.values())
    assert process["n_rounds"] == rounds
    assert process["novelty_rate"] == pytest.approx(sum(r.metrics["n_novel"] for r in records.values()) / rounds)
    recorded = json.loads(source.read_text())
    correct = sum(x["output"]["metric_score"]["em"] for x in recorded)
    assert process["search_efficiency"] == pytest.approx(correct / sum(r.metrics["n_searches"] for r in records.values()))
    turns = process["turns"]
    assert turns["success"]["n"] == correct and turns["success"]["n"] + turns["failure"]["n"] == 125
    failed = [r.metrics["n_searches"] for r in records.values() if r.metrics["em"] < 1]
    assert turns["failure"]["mean_searches"] == pytest.approx(sum(failed) / len(failed))
