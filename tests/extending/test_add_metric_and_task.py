"""Extending evalsuite without editing it: a metric and a task declared in scratch registries flow through
`evalsuite score` → `evalsuite table` → `evalsuite leaderboard add/build`, and a metric added after entries were
filed leaves every existing entry verified while the site shows the new metric for them.

Nothing here edits a file of the package: the metric is one `register_metric` call and one function, the task one
`register_task` call naming its metric, normalization and method.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard import SubmissionInfo, add_submission, pack_submission, verify_submission
from evalsuite.leaderboard.site import build_site, load_entries
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.metrics import registry as metrics
from evalsuite.metrics.answer import extract_answer, normalize_answer
from evalsuite.metrics.registry import MetricInput, MetricSpec, register_metric
from evalsuite.metrics.standard import STANDARD_METRICS
from evalsuite.runs import RunDirectory
from evalsuite.runs.schema import LEGACY_METRICS
from evalsuite.tasks import registry as tasks
from evalsuite.tasks.registry import Task, default_method, register_task
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]
YEAR = re.compile(r"\b\d{4}\b")


def year_match(example: MetricInput) -> float:
    """1.0 when the prediction names exactly the years of some gold answer (a gold without a year never matches)."""
    said = set(YEAR.findall(example.answer))
    return float(any(YEAR.findall(g) and said == set(YEAR.findall(g)) for g in example.golds))


def short_answer(example: MetricInput) -> float:
    """1.0 when the normalized prediction is one to three tokens long."""
    return float(1 <= len(normalize_answer(example.answer).split()) <= 3)


# A task's own metric: not a default one, so only the tasks that name it are scored with it.
YEAR_MATCH = MetricSpec("year_match", "Year match", "binary", year_match, default=False,
                        description="the years named match a gold's")
DEFAULT_METRICS = tuple(m.name for m in STANDARD_METRICS)
SHORT_ANSWER = MetricSpec("short_answer", "Short answer", "binary", short_answer, description="1-3 tokens")
TOYQA = Task("toyqa", "ToyQA", "general", "test", hub_path=None, method="smartsearch",
             metrics=(*DEFAULT_METRICS, "year_match"), normalization="whitespace")

# (question, golds, answer of system A, answer of system B)
ROWS = [
    ("When did Apollo 11 land on the Moon?", ["July 1969", "1969"], "1969", "in 1968"),
    ("When did the Berlin Wall fall?", ["1989"], "November 1989", "1989"),
    ("Which city is the capital of France?", ["Paris"], "Paris", "paris"),
    ("When was the Eiffel Tower finished?", ["1889"], "1889", "1887"),
    ("When did the Titanic sink?", ["1912"], "April 1912", "1912"),
    ("Who wrote Hamlet?", ["William Shakespeare"], "Shakespeare", "William Shakespeare"),
]


def _response(question: str, answer: str) -> str:
    return (f"<think>I should look this up.</think>\n<search> {question} </search>\n\n<information>Doc 1(Title: Notes) "
            f"A page about {question.lower()}</information>\n\n<think>I know it now.</think>\n<answer> {answer} </answer>")


def _result_file(path: Path, column: int) -> Path:
    items = [{"id": f"test_{i}", "question": q, "golden_answers": golds,
              "output": {"final_response": _response(q, row[column])}}
             for i, (q, golds, *row) in enumerate(ROWS)]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture
def scratch():
    """Fresh copies of the metric and task registries for one test; whatever it registers is gone afterwards."""
    with metrics.scratch_registry(), tasks.scratch_registry():
        yield


def _declare_toyqa(tmp_path: Path) -> Path:
    """Register the year_match metric and the toyqa task naming it; returns a data folder with toyqa's test split."""
    register_metric(YEAR_MATCH)
    register_task(TOYQA)
    data = tmp_path / "data"
    data.mkdir()
    (data / "toyqa.test.jsonl").write_text("".join(json.dumps({"id": f"test_{i}", "question": q, "golden_answers": g}) + "\n"
                                                   for i, (q, g, *_) in enumerate(ROWS)), encoding="utf-8")
    return data


def _info(name: str) -> SubmissionInfo:
    return SubmissionInfo(name=name, method="SmartSearch", model={"name": name}, setting={"corpus": "toy", "topk": 1})


@requires_extra("site", "jinja2")  # the site's templates
def test_a_metric_and_a_task_go_through_score_table_and_the_leaderboard(scratch, tmp_path):
    data = _declare_toyqa(tmp_path)

    # score: no --task, no --method: the file name names the task, the task names its method, metrics and normalization
    scored = tmp_path / "scored"
    _cli("score", _result_file(tmp_path / "toyqa_a.json", 0), _result_file(tmp_path / "toyqa_b.json", 1), "-o", scored,
         "--data-dir", data)
    records = {r.id: r for r in RunDirectory(scored / "toyqa_a").read_predictions()}
    assert [records[f"test_{i}"].metrics["year_match"] for i in range(6)] == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    b = {r.id: r.metrics for r in RunDirectory(scored / "toyqa_b").read_predictions()}
    assert [b[f"test_{i}"]["year_match"] for i in range(6)] == [0.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    # the task's normalization (white space only, case kept): "paris" is not "Paris", unlike under SQuAD's
    assert b["test_2"]["em"] == 0.0 and records["test_2"].metrics["em"] == 1.0
    assert set(records["test_0"].metrics) >= {*DEFAULT_METRICS, "year_match"}
    summary = RunDirectory(scored / "toyqa_a").read_metrics()
    assert summary.metric_versions["year_match"] == 1 and summary.averages["all"]["year_match"] == pytest.approx(4 / 6)
    assert RunDirectory(scored / "toyqa_a").read_manifest().method == "smartsearch"  # the task's, as no --method was given

    # table: the new metric's declared kind (binary) picks the Wilson interval and McNemar's test
    stats = tmp_path / "stats.json"
    table = _cli("table", scored / "toyqa_a", scored / "toyqa_b", "--metric", "year_match", "--ci", "--format", "markdown",
                 "--stats-json", stats)
    comparison = json.loads(stats.read_text())["year_match"]
    difference = comparison["differences"]["toyqa_b/toyqa"]
    assert difference["test"] == "mcnemar-exact" and (difference["only_system"], difference["only_baseline"]) == (0, 2)
    assert comparison["interval_methods"] == ["Wilson score interval"]
    assert "| toyqa_a " in table.output and "66.67" in table.output and "33.33" in table.output

    # leaderboard: both verify against the task's gold answers, and the site shows the task and the metric
    board = tmp_path / "leaderboard"
    for name in ("a", "b"):
        packed = pack_submission([scored / f"toyqa_{name}"], tmp_path / f"sub-{name}", _info(f"Toy system {name.upper()}"))
        _, report = add_submission(packed, board, data_dir=data)
        assert report.tasks["toyqa"].verified_metrics["year_match"] == 1
    site = tmp_path / "site"
    assert build_site(board, site, data_dir=data).entries == 2
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'data-metric="year_match"' in index and ">ToyQA<" in index
    block = index[index.index('id="setting-1-year_match"'):]
    assert re.search(r">66\.7<sup class=\"grp\">a</sup>", block) and re.search(r">33\.3<sup", block)


@requires_extra("site", "jinja2")  # the site's templates
def test_a_metric_added_later_keeps_the_existing_entries_verified_and_reaches_the_site(scratch, tmp_path, benchmarks_dir):
    board = tmp_path / "leaderboard"
    shutil.copytree(REPO / "leaderboard" / "entries", board / "entries")
    register_metric(SHORT_ANSWER)

    entries, _, _ = load_entries(board, benchmarks_dir)
    assert len(entries) == len(list((REPO / "leaderboard" / "entries").iterdir()))
    for entry in entries:
        imported = all(m.kind == "import" for m in entry.report.manifests.values())
        for task, verified in entry.report.tasks.items():
            # verified: what the entry was scored with; the new metric is computed, not held against it
            assert "short_answer" not in verified.verified_metrics
            if imported:  # the seeded entries: outputs rescored with the metrics of their time
                assert set(verified.verified_metrics) == set(LEGACY_METRICS)
            path = next(p for p in (entry.path / "runs" / verified.run).iterdir() if p.name.startswith("predictions"))
            lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
            # imported outputs: the answer tag of the response; an evalsuite run: its method's own answer (naive-rag's
            # first line), which verification checks against the trajectory separately
            answers = [(extract_answer(r["trajectory"]) if imported else r["prediction"], r) for r in lines]
            expected = sum(short_answer(MetricInput(a, r["golden_answers"]))
                           for a, r in answers if r["task"] == task) / verified.summary.n
            assert verified.summary.metrics["short_answer"].mean == pytest.approx(expected)
    site = tmp_path / "site"
    assert build_site(board, site, data_dir=benchmarks_dir).entries == len(entries)
    assert 'data-metric="short_answer"' in (site / "index.html").read_text(encoding="utf-8")


def test_an_entry_scored_with_a_metric_this_evalsuite_lacks_is_refused_naming_it(scratch, tmp_path):
    data = _declare_toyqa(tmp_path)
    _cli("score", _result_file(tmp_path / "toyqa_a.json", 0), "-o", tmp_path / "scored", "--data-dir", data)
    packed = pack_submission([tmp_path / "scored" / "toyqa_a"], tmp_path / "sub", _info("Toy"))
    assert verify_submission(packed, data).accepted
    register_metric(MetricSpec("year_match", "Year match", "binary", year_match, default=False, version=2), replace=True)
    lines = verify_submission(packed, data).problem_lines()
    assert any("scored with year_match version 1, this evalsuite computes version 2" in line for line in lines), lines


def test_a_claimed_metric_the_run_does_not_record_scoring_with_is_refused(scratch, tmp_path):
    """Dropping a metric from metric_versions must not exempt its claimed (here: falsified) mean from verification."""
    data = _declare_toyqa(tmp_path)
    _cli("score", _result_file(tmp_path / "toyqa_a.json", 0), "-o", tmp_path / "scored", "--data-dir", data)
    packed = pack_submission([tmp_path / "scored" / "toyqa_a"], tmp_path / "sub", _info("Toy"))
    claimed = packed / "runs" / "toyqa_a" / "metrics.json"
    summary = json.loads(claimed.read_text())
    del summary["metric_versions"]["f1"]
    summary["tasks"]["toyqa"]["metrics"]["f1"]["mean"] = 0.99
    claimed.write_text(json.dumps(summary))
    write_checksums(packed)
    lines = verify_submission(packed, data).problem_lines()
    assert any("claims f1 but its metric_versions do not record scoring with it" in line for line in lines), lines
    assert any("gives f1, which its run's metrics.json does not record scoring with" in line for line in lines), lines


def test_score_metrics_overrides_the_tasks_choice_and_refuses_unknown_names(scratch, tmp_path):
    data = _declare_toyqa(tmp_path)
    result_file = _result_file(tmp_path / "toyqa_a.json", 0)
    _cli("score", result_file, "-o", tmp_path / "scored", "--data-dir", data, "--metrics", "year_match,em")
    records = RunDirectory(tmp_path / "scored" / "toyqa_a").read_predictions()
    assert all(set(r.metrics) - {"n_novel", "n_redundant"} == {"year_match", "em"} for r in records)
    result = CliRunner().invoke(app, ["score", str(result_file), "-o", str(tmp_path / "again"), "--metrics", "year-match"])
    # (`evalsuite` prints an EvalsuiteError as `error:` / `hint:` lines and exits 2)
    assert isinstance(result.exception, EvalsuiteError) and result.exception.message == "unknown metric 'year-match'"
    assert "did you mean year_match" in result.exception.hint


def test_tasks_that_declare_different_methods_need_an_explicit_one(scratch):
    mine = register_task(Task("mine", "Mine", "general", "test", hub_path=None, method="direct"))
    theirs = register_task(Task("theirs", "Theirs", "general", "test", hub_path=None, method="search-r1"))
    plain = tasks.get_task("nq")
    assert default_method([mine, plain], "search-r1") == "direct"
    assert default_method([plain], "search-r1") == "search-r1"
    with pytest.raises(EvalsuiteError, match="different default methods"):
        default_method([mine, theirs], "search-r1")
