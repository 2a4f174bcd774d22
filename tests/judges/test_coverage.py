"""Coverage (Progress eq. 3-4) and teacher queries from real MuSiQue decompositions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.metrics.coverage import coverage, matched_pairs, musique_teacher_queries, teacher_queries_from_metadata


def test_precision_recall_f1_from_a_match_matrix() -> None:
    # 3 policy queries, 2 teacher queries; p0 matches both, p1 matches t0 -> one-to-one matching of size 2
    result = coverage([[1, 1], [1, 0], [0, 0]], 3, 2)
    assert (result.matched, result.precision, result.recall) == (2, pytest.approx(2 / 3), 1.0)
    assert result.f1 == pytest.approx(0.8)


def test_repeating_one_good_query_covers_one_teacher_query_only() -> None:
    assert matched_pairs([[1, 0, 0], [1, 0, 0], [1, 0, 0]]) == 1
    assert coverage([[1, 0, 0]] * 3, 3, 3).f1 == pytest.approx(1 / 3)


def test_no_policy_queries_scores_zero_and_no_teacher_queries_is_an_error() -> None:
    assert coverage([], 0, 2).f1 == 0.0
    with pytest.raises(ValueError, match="teacher"):
        coverage([], 0, 0)


def test_musique_decomposition_steps_resolve_hop_references(benchmarks_dir: Path) -> None:
    with (benchmarks_dir / "musique.dev_ctx.jsonl").open() as handle:
        first = json.loads(handle.readline())
    assert first["id"] == "2hop__673655_316668"
    queries, source = teacher_queries_from_metadata(first["metadata"])
    assert source == "question_decomposition"
    assert queries == ["The Blackout All-Stars >> has part", "Ray Barretto >> instrument"]


def test_every_musique_dev_ctx_row_yields_teacher_queries(benchmarks_dir: Path) -> None:
    rows = [json.loads(line) for line in (benchmarks_dir / "musique.dev_ctx.jsonl").open()]
    found = [teacher_queries_from_metadata(r["metadata"]) for r in rows]
    assert len(rows) == 292 and all(f is not None for f in found)
    # hop counts come from the ids (2hop__, 3hop1__, 4hop2__ ...) and every #k reference is resolved
    for row, (queries, _) in zip(rows, found):
        assert len(queries) == int(row["id"][0])
        assert not any("#" in q and q.split("#")[1][:1].isdigit() for q in queries)


def test_adqa_style_decomposition_is_read_as_is() -> None:
    meta = {"decomposition": [{"question": "Which plan includes feature X?", "answer": "Pro"}, {"question": "What does Pro cost?", "answer": "$9"}]}
    assert teacher_queries_from_metadata(meta) == (["Which plan includes feature X?", "What does Pro cost?"], "decomposition")
    assert teacher_queries_from_metadata({}) is None
    assert musique_teacher_queries([{"question": "#2 >> x", "answer": "a"}]) == ["#2 >> x"]  # a dangling reference is kept
