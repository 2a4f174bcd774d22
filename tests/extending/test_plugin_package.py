"""A plugin extends evalsuite without touching its files: a small external distribution, built and installed by pip
into a folder of its own, adds a task (a YAML declaration it ships), a metric and a method through the entry-point
groups `evalsuite.tasks`, `evalsuite.metrics` and `evalsuite.methods`; `evalsuite score` → `table` →
`leaderboard build` then run with them in a fresh process, which imports evalsuite from this tree unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "evalsuite-toyqa"
version = "0.1.0"
description = "ToyQA for evalsuite: a task, its metric and a method, as a plugin"

[project.entry-points."evalsuite.tasks"]
toyqa = "evalsuite_toyqa:TASK"

[project.entry-points."evalsuite.metrics"]
year_match = "evalsuite_toyqa.metrics:YEAR_MATCH"

[project.entry-points."evalsuite.methods"]
toy-r1 = "evalsuite_toyqa.method:ToyR1"

[tool.setuptools]
packages = ["evalsuite_toyqa"]

[tool.setuptools.package-data]
evalsuite_toyqa = ["*.yaml"]
"""

TASK_YAML = """
name: toyqa
display_name: ToyQA
category: general
description: years and capitals, from a plugin
splits: {eval: test}
method: toy-r1
metrics: {add: [year_match]}
"""

INIT = '''
from importlib import resources

from evalsuite.tasks.registry import tasks_from_yaml

TASK, = tasks_from_yaml(resources.files(__name__).joinpath("toyqa.yaml").read_text(), "evalsuite_toyqa/toyqa.yaml")
'''

METRICS = '''
import re

from evalsuite.metrics.registry import MetricInput, MetricSpec

YEAR = re.compile(r"\\b\\d{4}\\b")


def year_match(example: MetricInput) -> float:
    said = set(YEAR.findall(example.answer))
    return float(any(YEAR.findall(g) and said == set(YEAR.findall(g)) for g in example.golds))


YEAR_MATCH = MetricSpec("year_match", "Year match", "binary", year_match, default=False, description="the years named match a gold's")
'''

METHOD = '''
from evalsuite.methods.search_r1.method import SearchR1


class ToyR1(SearchR1):
    """Search-R1's tags; the answer loses a trailing full stop."""

    name = "toy-r1"

    def extract_answer(self, response):
        answer = super().extract_answer(response)
        return answer.rstrip(".") if answer is not None else None
'''

ROWS = [
    ("When did Apollo 11 land on the Moon?", ["July 1969", "1969"], "1969.", "in 1968"),
    ("When did the Berlin Wall fall?", ["1989"], "November 1989", "1989"),
    ("Which city is the capital of France?", ["Paris"], "Paris.", "Lyon"),
    ("When did the Titanic sink?", ["1912"], "April 1912", "1912"),
]


def _response(question: str, answer: str) -> str:
    return (f"<think>I should look this up.</think>\n<search> {question} </search>\n\n<information>Doc 1(Title: Notes) "
            f"A page about {question.lower()}</information>\n\n<answer> {answer} </answer>")


def _build_plugin(root: Path) -> Path:
    source = root / "plugin"
    package = source / "evalsuite_toyqa"
    package.mkdir(parents=True)
    (source / "pyproject.toml").write_text(PYPROJECT)
    for name, text in (("__init__.py", INIT), ("metrics.py", METRICS), ("method.py", METHOD), ("toyqa.yaml", TASK_YAML)):
        (package / name).write_text(textwrap.dedent(text).lstrip())
    target = root / "site"
    # pip builds the wheel with the setuptools already installed (offline) and installs it into a folder of its own
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "--target", str(target), str(source)], check=True, timeout=300,
                   capture_output=True)
    return target


def _evalsuite_files() -> dict[str, bytes]:
    """evalsuite's own files (the package, its shipped data folders and pyproject.toml), by content."""
    paths = [REPO / "pyproject.toml", *(p for folder in ("evalsuite", "baselines") for p in (REPO / folder).rglob("*")
                                        if p.is_file() and "__pycache__" not in p.parts)]
    return {str(p.relative_to(REPO)): p.read_bytes() for p in paths}


@requires_extra("site", "jinja2")  # the site's templates
def test_a_plugin_package_adds_a_task_a_metric_and_a_method_through_entry_points(tmp_path):
    before = _evalsuite_files()
    site = _build_plugin(tmp_path)
    assert (site / "evalsuite_toyqa-0.1.0.dist-info" / "entry_points.txt").is_file()
    data = tmp_path / "data"
    data.mkdir()
    (data / "toyqa.test.jsonl").write_text("".join(json.dumps({"id": f"t{i}", "question": q, "golden_answers": g}) + "\n"
                                                   for i, (q, g, *_) in enumerate(ROWS)))
    for name, column in (("toyqa_a.json", 0), ("toyqa_b.json", 1)):
        items = [{"id": f"t{i}", "question": q, "golden_answers": g, "output": {"final_response": _response(q, row[column])}}
                 for i, (q, g, *row) in enumerate(ROWS)]
        (tmp_path / name).write_text(json.dumps(items))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    env.pop("EVALSUITE_DATA_DIR", None)

    def evalsuite(*args: object) -> str:
        result = subprocess.run([sys.executable, "-m", "evalsuite", *map(str, args)], capture_output=True, text=True,
                                cwd=tmp_path, env=env, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    evalsuite("score", tmp_path / "toyqa_a.json", tmp_path / "toyqa_b.json", "-o", tmp_path / "scored", "--data-dir", data)
    manifest = json.loads((tmp_path / "scored" / "toyqa_a" / "manifest.json").read_text())
    assert manifest["method"] == "toy-r1"  # the plugin task's method, from the plugin
    records = [json.loads(line) for line in (tmp_path / "scored" / "toyqa_a" / "predictions.jsonl").read_text().splitlines()]
    by_id = {r["id"]: r for r in records}
    # the plugin's metric is added to the defaults (precision and recall kept); the method dropped the full stops
    assert [by_id[f"t{i}"]["metrics"]["year_match"] for i in range(4)] == [1.0, 1.0, 0.0, 1.0]
    assert {"em", "f1", "precision", "recall", "year_match"} <= set(by_id["t0"]["metrics"])
    assert by_id["t0"]["metrics"]["em"] == 1.0 and by_id["t2"]["metrics"]["em"] == 1.0

    table = evalsuite("table", tmp_path / "scored" / "toyqa_a", tmp_path / "scored" / "toyqa_b", "--metric", "year_match",
                      "--format", "markdown")
    assert "75.00" in table and "50.00" in table

    board = tmp_path / "board"
    for name in ("a", "b"):
        packed = tmp_path / f"sub-{name}"
        evalsuite("submit", tmp_path / "scored" / f"toyqa_{name}", "-o", packed, "--name", f"Toy {name.upper()}",
                  "--method", "toy-r1", "--model", f"toy-{name}")
        evalsuite("leaderboard", "add", packed, "--leaderboard", board, "--data-dir", data)
    evalsuite("leaderboard", "build", "-o", tmp_path / "site_out", "--leaderboard", board, "--data-dir", data)
    index = (tmp_path / "site_out" / "index.html").read_text(encoding="utf-8")
    assert 'data-metric="year_match"' in index and ">ToyQA<" in index

    # nothing of evalsuite was touched: the plugin lives only in its own folder
    assert _evalsuite_files() == before
