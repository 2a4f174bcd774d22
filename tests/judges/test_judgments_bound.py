"""Judgments bound to what they judged, agreement among judges, and who judged (issue 37 item 6, issue 38 item 8).

A verdict counts only for the answer it judged: its recorded input (question, golds, prediction) is what the record
shows a judge now. A table of acc_judge names the panel and says "judged by the submitter's panel" unless the
judgments.jsonl was written by `evalsuite judge` on this machine; it never claims the registry's golds rescored it.

The attack: a hand-written judgments.jsonl, every verdict true, each judging a different prediction, gave
`table --metric acc_judge` 100.00 with the footnote "rescored against the registry's gold answers".
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import DataError
from evalsuite.judges.accuracy import accuracy_input, accuracy_scores
from evalsuite.judges.evaluate import _judged_here_marker, accuracy_verdicts
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, summarize
from evalsuite.runs.schema import ExampleRecord as Record
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with, and what evalsuite's Fleiss' kappa runs on (the [stats]
# extra); without it the whole file is skipped, naming the extra
aggregate_raters = import_extra("stats", "statsmodels.stats.inter_rater").aggregate_raters
statsmodels_fleiss = import_extra("stats", "statsmodels.stats.inter_rater").fleiss_kappa

PREDICTIONS = ["Jefferson", "Adams", "Madison", "Monroe"]  # gold Jefferson: EM 1, 0, 0, 0


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))  # no "judged here" record from elsewhere


def _run(path: Path) -> Path:
    run = RunDirectory(path)
    run.write_manifest(Manifest(tasks=["nq"], **provenance_fields()))
    records = [Record(id=f"q{i}", task="nq", question=f"president {i}?", golden_answers=["Jefferson"], prediction=p,
                      metrics={"em": float(p == "Jefferson")}) for i, p in enumerate(PREDICTIONS)]
    run.rewrite_predictions(records)
    run.write_metrics(summarize(records))
    return path


def _line(record: ExampleRecord, judge: str, verdict, **changes) -> dict:
    return {"example_id": record.id, "task": record.task, "metric": "accuracy", "item": "answer", "judge": judge,
            "model": f"{judge}-model", "template": "answer_accuracy", "template_hash": "h", "verdict": verdict,
            "input": {**accuracy_input(record), **changes}}


def _write(run: Path, lines: list[dict]) -> None:
    (run / "judgments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def _table(run: Path, *extra: str):
    return CliRunner().invoke(app, ["table", str(run), "--metric", "acc_judge", *extra], catch_exceptions=False)


def test_verdicts_on_other_predictions_never_score_this_one(tmp_path):
    run = _run(tmp_path / "forged")
    records = RunDirectory(run).read_predictions()
    # every verdict true, each about "Jefferson" while the records say Adams, Madison, Monroe (q0 is Jefferson)
    _write(run, [_line(r, "j1", True, prediction="Jefferson") for r in records[1:]])
    with pytest.raises(DataError, match="has no metric 'acc_judge'"):
        _table(run)
    judged = accuracy_verdicts(run)
    assert judged is not None and judged.verdicts == {} and judged.unbound == 3
    # a real verdict on q0's own answer counts; the three forged ones still do not
    _write(run, [_line(records[0], "j1", True)] + [_line(r, "j2", True, prediction="Jefferson") for r in records[1:]]
           + [_line(r, "j1", False) for r in records[1:]])
    out = _table(run).output
    assert "| forged   | **25.00** |" in out  # 1 of 4 judged right: not 100.00
    assert "rescored against the registry's gold answers" not in out
    assert "acc_judge judged by the submitter's panel (j1 (j1-model))" in out
    assert "3 verdicts on another answer than the record's not counted" in out


def test_a_verdict_with_other_golds_or_question_is_not_this_answers(tmp_path):
    run = _run(tmp_path / "r")
    records = RunDirectory(run).read_predictions()
    _write(run, [_line(records[0], "j1", True, golds="Adams"), _line(records[1], "j1", True, question="other?"),
                 _line(records[2], "j1", False), _line(records[3], "j1", False)])
    judged = accuracy_verdicts(run)
    assert judged.verdicts == {("nq", "q2", "answer"): False, ("nq", "q3", "answer"): False} and judged.unbound == 2


def test_judged_here_is_a_record_outside_the_run_of_what_evalsuite_judge_wrote(tmp_path):
    run = _run(tmp_path / "r")
    records = RunDirectory(run).read_predictions()
    _write(run, [_line(r, "j1", r.prediction == "Jefferson") for r in records])
    assert "judged by the submitter's panel" in _table(run).output
    marker = _judged_here_marker(run / "judgments.jsonl")  # what judge_run writes after writing judgments.jsonl
    marker.parent.mkdir(parents=True)
    marker.write_text("{}")
    out = _table(run).output
    assert "acc_judge judged here by the panel j1 (j1-model)" in out and "submitter" not in out
    with (run / "judgments.jsonl").open("a") as handle:  # any change to the file: no longer what was judged here
        handle.write("\n")
    assert "judged by the submitter's panel" in _table(run).output


@pytest.mark.parametrize(("line", "field"), [
    ({"example_id": "q0", "metric": "accuracy", "item": "answer", "judge": "j1", "verdict": True}, "'task'"),
    ({"task": "nq", "example_id": 3, "metric": "accuracy", "item": "answer", "judge": "j1"}, "'example_id'"),
    ({"task": "nq", "example_id": "q0", "metric": "accuracy", "item": "answer", "judge": "j1", "verdict": "yes"},
     "'verdict' is 'yes'"),
    ([1, 2], "a JSON list"),
])
def test_a_bad_judgment_line_is_one_line_naming_it(tmp_path, line, field):
    run = _run(tmp_path / "r")
    (run / "judgments.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(DataError) as caught:  # main() prints it as `error:` / `hint:` lines, exit code 2
        _table(run)
    message = caught.value.message
    assert "\n" not in message and message.startswith(f"{run / 'judgments.jsonl'}:1:") and field in message


def test_acc_judge_reports_each_judges_rate_and_fleiss_kappa_as_statsmodels():
    rng = np.random.default_rng(7)
    truth = rng.random(40) < 0.5
    verdicts = np.array([[t if rng.random() < 0.8 else not t for t in truth] for _ in range(3)]).T  # 40 × 3 judges
    records = [Record(id=f"q{i}", task="nq", question="?", golden_answers=["a"], prediction="a", metrics={"em": 1.0})
               for i in range(40)]
    rows = [list(map(bool, row)) for row in verdicts]
    rows[0][1] = None  # one unparsed verdict: its answer leaves κ, the judge's rate is over its parsed verdicts
    table = {("nq", f"q{i}", "accuracy", "answer"): row for i, row in enumerate(rows)}
    result, _ = accuracy_scores(records, table, ["a", "b", "c"])
    judges = result["judges"]
    counts, _ = aggregate_raters(verdicts[1:].astype(int))
    assert judges["fleiss_kappa"] == pytest.approx(statsmodels_fleiss(counts, method="fleiss"))
    assert judges["n_kappa_items"] == 39
    assert judges["per_judge_rate"]["a"] == pytest.approx(verdicts[:, 0].mean())
    assert judges["per_judge_rate"]["b"] == pytest.approx(verdicts[1:, 1].mean())
    # hand-computed: 2 judges on 4 answers, agreeing on 3 (yes, yes, no), split on one
    small = {("nq", f"q{i}", "accuracy", "answer"): row
             for i, row in enumerate([[True, True], [True, True], [False, False], [True, False]])}
    result, _ = accuracy_scores(records[:4], small, ["a", "b"])
    # P_o = 3/4; category shares: yes 5/8, no 3/8 → P_e = 34/64; κ = (3/4 − 34/64) / (1 − 34/64) = 14/30
    assert result["judges"]["fleiss_kappa"] == pytest.approx(14 / 30)
    assert result["judges"]["per_judge_rate"] == {"a": 0.75, "b": 0.5}
    assert accuracy_scores(records[:4], small, ["a", "b"])[0]["judges"]["n_kappa_items"] == 4
    one, _ = accuracy_scores(records[:1], {("nq", "q0", "accuracy", "answer"): [True]}, ["a"])
    assert one["judges"]["fleiss_kappa"] is None  # one judge: no agreement among judges


def test_evalsuite_judge_prints_each_judges_rate_and_kappa_for_acc_judge():
    from rich.console import Console

    from evalsuite.cli.judge import _results_table

    records = [Record(id=f"q{i}", task="nq", question="?", golden_answers=["a"], prediction="a", metrics={"em": 1.0})
               for i in range(4)]
    table = {("nq", f"q{i}", "accuracy", "answer"): row
             for i, row in enumerate([[True, True], [True, True], [False, False], [True, False]])}
    result, _ = accuracy_scores(records, table, ["a", "b"])
    console = Console(record=True, width=200)
    console.print(_results_table({"nq": {"accuracy": result}}))
    row = next(line for line in console.export_text().splitlines() if "acc_judge" in line)
    assert "a=0.750, b=0.500" in row and f"{14 / 30:.3f}" in row  # the rates and Fleiss' κ computed by hand above


# Bounded and seen (issue 37 item 8): every reader of judgments.jsonl (tables' acc_judge, `evalsuite judge` reading
# the earlier verdicts) goes through evalsuite.files.read_untrusted_bytes: regular files only, size and lines bounded.
def _readers(run: Path):
    from evalsuite.judges.evaluate import _read_judgments

    return [lambda: _table(run), lambda: accuracy_verdicts(run), lambda: _read_judgments(run / "judgments.jsonl")]


@pytest.mark.timeout(30)
def test_a_fifo_judgments_file_is_refused_not_waited_on(tmp_path):
    import os

    run = _run(tmp_path / "r")
    os.mkfifo(run / "judgments.jsonl")  # no writer: an open without O_NONBLOCK, or a read, would block for ever
    for read in _readers(run):
        with pytest.raises(DataError) as caught:
            read()
        assert caught.value.message == f"{run / 'judgments.jsonl'}: the judgments file is not a regular file"


def test_a_folder_named_judgments_is_refused_not_skipped(tmp_path):
    run = _run(tmp_path / "r")
    (run / "judgments.jsonl").mkdir()
    with pytest.raises(DataError, match="the judgments file is not a regular file"):
        _table(run)


def test_a_judgments_link_to_nothing_is_one_line(tmp_path):
    run = _run(tmp_path / "r")
    (run / "judgments.jsonl").symlink_to(tmp_path / "absent.jsonl")
    for read in _readers(run):
        with pytest.raises(DataError, match="judgments.jsonl: the judgments file is a link to a file that does not"):
            read()


def test_judgments_over_the_size_or_line_bound_are_refused_before_parsing(tmp_path, monkeypatch):
    from evalsuite.judges import evaluate

    run = _run(tmp_path / "r")
    records = RunDirectory(run).read_predictions()
    _write(run, [_line(r, "j1", True) for r in records])
    size = (run / "judgments.jsonl").stat().st_size
    monkeypatch.setattr(evaluate, "MAX_JUDGMENTS_BYTES", size - 1)
    for read in _readers(run):
        with pytest.raises(DataError, match=f"judgments.jsonl: the judgments file is over {size - 1:,} bytes"):
            read()
    monkeypatch.setattr(evaluate, "MAX_JUDGMENTS_BYTES", size)
    assert accuracy_verdicts(run).verdicts[("nq", "q0", "answer")] is True
    monkeypatch.setattr(evaluate, "MAX_JUDGMENT_LINES", 3)  # 4 lines
    for read in _readers(run):
        with pytest.raises(DataError, match="judgments.jsonl: more than 3 lines"):
            read()
    (run / "judgments.jsonl").write_bytes(b"\r" * 10)  # other line ends are counted too
    with pytest.raises(DataError, match="more than 3 lines"):
        _table(run)


@pytest.mark.parametrize(("data", "lineno", "what"), [
    (b"\n\xff\xfe\n", 2, "not UTF-8"),
    (b"\n\n{\"task\": \n", 3, "not a judgment line (not JSON)"),
    (b"null\n", 1, "a JSON NoneType"),
])
def test_a_malformed_judgments_line_is_one_line_naming_file_and_line(tmp_path, data, lineno, what):
    run = _run(tmp_path / "r")
    (run / "judgments.jsonl").write_bytes(data)
    for read in _readers(run):
        with pytest.raises(DataError) as caught:
            read()
        message = caught.value.message
        assert "\n" not in message and message.startswith(f"{run / 'judgments.jsonl'}:{lineno}:") and what in message
