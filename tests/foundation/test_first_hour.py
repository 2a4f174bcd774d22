"""A stranger's first hour, in a fresh `python -m venv` (nothing inherited) on a fresh copy of the tree: the README's
first command (`pip install -e ".[demo]" && evalsuite run`), then every `evalsuite` command the demo prints, run in
that venv; then what the user tries next with their own things: an `hf` run on a missing path and on a folder that
is not a model (one `error:` line, exit 2, no traceback), and `data download --from DIR` on a plain local folder
with no `datasets` installed. Slow (a real install from PyPI and the demo's real model): `.ci/run` runs it.

The venv (`first_hour` fixture, module-scoped) is where a Ctrl-C test of the running demo belongs too (issue 39).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
# a command the demo prints: from `evalsuite` to the end of its line (or the closing backtick of a code span)
PRINTED_COMMAND = re.compile(r"(evalsuite [^`\n]+?)\s*(?:`|$)", re.M)


@dataclass
class FirstHour:
    tree: Path  # the fresh copy, where the user works
    venv: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=self.tree, env=self.env, capture_output=True, text=True, timeout=timeout)


def copy_tree(target: Path) -> None:
    """The repository's files as a fresh clone has them (tracked and new, nothing ignored), as `.ci/run` copies it."""
    target.mkdir(parents=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout
    files = subprocess.run(["tar", "--null", "-T", "-", "-cf", "-"], cwd=REPO, input=listed, capture_output=True,
                           check=True).stdout
    subprocess.run(["tar", "-xf", "-", "-C", str(target)], input=files, check=True)


@pytest.fixture(scope="module")
def first_hour(tmp_path_factory) -> FirstHour:
    root = tmp_path_factory.mktemp("first-hour")
    tree, venv = root / "evalsuite", root / "venv"
    copy_tree(tree)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # no --system-site-packages
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSUITE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", VIRTUAL_ENV=str(venv), EVALSUITE_CACHE_DIR=str(root / "cache"),
               BROWSER="true",  # `view --open` hands the page to a "browser" that exists and does nothing
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    # the README's first command is `pip install -e ".[demo]" && evalsuite run`: its install here, its run below
    install = subprocess.run(["pip", "install", "-q", "-e", ".[demo]"], cwd=tree, env=env, capture_output=True,
                             text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-3000:]
    return FirstHour(tree, venv, env)


def test_the_demo_runs_and_every_command_it_prints_works_in_its_venv(first_hour):
    demo = first_hour.run("evalsuite", "run", timeout=1800)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    printed = PRINTED_COMMAND.findall(demo.stdout)
    assert any(c.startswith("evalsuite view ") and c.endswith(" --open") for c in printed), demo.stdout
    for command in printed:
        result = first_hour.run("bash", "-c", command)
        assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        assert "error:" not in result.stderr, f"{command}\n{result.stderr}"


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The run was refused as the README promises: exit 2, an `error:` line (and at most a hint), no traceback."""
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and lines and lines[0].startswith("error: "), result.stderr[-3000:]
    assert len(lines) <= 2 and all(line.startswith("  hint: ") for line in lines[1:]), result.stderr
    return lines[0]


def test_an_hf_run_on_a_missing_path_or_a_folder_that_is_not_a_model_is_one_line(first_hour, tmp_path):
    not_a_model = tmp_path / "notes"
    not_a_model.mkdir()
    (not_a_model / "readme.txt").write_text("not a model\n")
    for model in ("/nonexistent/model", str(not_a_model)):
        result = first_hour.run("evalsuite", "run", "--backend", "hf", "--model", model, "--tasks", "adqa",
                                "--retriever", "adqa", "--limit", "1", "-o", str(tmp_path / "run"), timeout=120)
        error = one_error_line(result)
        # `[demo]` has neither torch nor transformers: what the backend lacks is named first; with them, the model
        assert model in error or error.startswith("error: the hf backend needs the Python package "), error
        assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_data_download_from_a_local_folder_works_without_datasets(first_hour, tmp_path, benchmarks_dir):
    assert first_hour.run("python", "-c", "import datasets").returncode != 0  # `[demo]` does not bring it
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    (mirror / "bamboogle").mkdir(parents=True)
    with (benchmarks_dir / "bamboogle.test.jsonl").open(encoding="utf-8") as rows:
        (mirror / "bamboogle" / "test.jsonl").write_text("".join(next(rows) for _ in range(8)), encoding="utf-8")
    result = first_hour.run("evalsuite", "data", "download", "--tasks", "bamboogle", "--from", str(mirror),
                            "--data-dir", str(data), timeout=120)
    assert result.returncode == 0, result.stderr
    record = json.loads((data / "evalsuite-data.json").read_text())["files"]["bamboogle.test.jsonl"]
    assert record["rows"] == 8 and (data / "bamboogle.test.jsonl").read_bytes() == (mirror / "bamboogle" / "test.jsonl").read_bytes()
    tasks = first_hour.run("evalsuite", "tasks", "--data-dir", str(data), "--json", timeout=120)
    assert tasks.returncode == 0, tasks.stderr
