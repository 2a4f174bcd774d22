"""The pre-registered analysis of a learning run (scripts/learning_run_analysis.py) on hand-built runs: the one-sided
exact McNemar p, the flip classes and the collapse check, against values computed by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from evalsuite.runs.schema import ExampleRecord

REPO = Path(__file__).resolve().parents[2]


def load_analysis():
    spec = importlib.util.spec_from_file_location(
        "learning_run_analysis", REPO / "scripts" / "learning_run_analysis.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their annotations through it
    spec.loader.exec_module(module)
    return module


def record(i: int, prediction: str, gold: str, em: float, cover: float, set_valued: bool = False) -> ExampleRecord:
    return ExampleRecord(
        id=f"q{i}",
        task="t",
        question=f"question {i}",
        golden_answers=[gold],
        prediction=prediction,
        metrics={"em": em, "cover_em": cover, "f1": em},
        metadata={"set_valued": set_valued},
    )


def write_run(path: Path, records: list[ExampleRecord]) -> Path:
    path.mkdir()
    (path / "predictions.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    return path


def test_flip_classes_and_one_sided_mcnemar(tmp_path):
    analysis = load_analysis()
    base = [
        record(0, "Paris", "Paris", 1, 1),  # right → right
        record(1, "the city of Lyon in France", "Lyon", 0, 1),  # verbosity, then right
        record(2, "Nice", "Lyon", 0, 0),  # entity, then right
        record(3, "A, B", "A and B", 0, 0, set_valued=True),  # set-valued but no gold inside: entity, then right
        record(4, "Rome", "Rome", 1, 1),  # right → wrong (checkpoint names another entity)
        record(5, "x", "y", 0, 0),  # wrong → wrong
    ]
    trained = [
        record(0, "Paris", "Paris", 1, 1),
        record(1, "Lyon", "Lyon", 1, 1),
        record(2, "Lyon", "Lyon", 1, 1),
        record(3, "A and B", "A and B", 1, 1, set_valued=True),
        record(4, "Milan", "Rome", 0, 0),
        record(5, "x", "y", 0, 0),
    ]
    paired = analysis.pair_runs(write_run(tmp_path / "base", base), write_run(tmp_path / "trained", trained))
    by_direction = analysis.flips(paired)
    assert by_direction["wrong → right"] == {"answer style: verbosity": 1, "entity": 2}
    assert by_direction["right → wrong"] == {"entity": 1}
    b, c, p_one, p_two = analysis.one_sided_mcnemar(paired.metric("base", "em"), paired.metric("trained", "em"))
    # b = 3, c = 1: P(X ≥ 3 | X ~ Bin(4, ½)) = (4 + 1) / 16; two-sided: min(1, 2 × 5/16)
    assert (b, c) == (3, 1)
    assert p_one == pytest.approx(5 / 16) and p_two == pytest.approx(10 / 16)
    assert analysis.most_frequent_share(paired.trained)[1] == pytest.approx(2 / 6)  # "lyon" twice


def test_runs_on_different_examples_are_refused(tmp_path):
    analysis = load_analysis()
    base = write_run(tmp_path / "base", [record(0, "a", "a", 1, 1)])
    trained = write_run(tmp_path / "trained", [record(1, "a", "a", 1, 1)])
    with pytest.raises(SystemExit, match="not on the same examples"):
        analysis.pair_runs(base, trained)
