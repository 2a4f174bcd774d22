"""On a narrow terminal no identifying name is cut: the run names of `evalsuite table` (results and paired
differences) and the rows of `evalsuite tasks` fold onto more lines instead of ending in `…`. The commands run in
a real pseudo-terminal (`script`), as a user sees them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def on_a_terminal(columns: int, *args: str) -> str:
    if shutil.which("script") is None:
        pytest.skip("needs util-linux `script` for a pseudo-terminal")
    command = " ".join([sys.executable, "-m", "evalsuite", *args])
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "50", "NO_COLOR": "1"}
    result = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout[-2000:]
    return ANSI.sub("", result.stdout).replace("\r", "")


def first_cells(text: str) -> str:
    """The first column of every table row, concatenated: a folded name reads whole again."""
    return "".join(line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│") and line.count("│") > 2)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_run_names_fold_instead_of_being_cut(bamboogle_runs, columns):
    runs = sorted(bamboogle_runs.values())
    text = on_a_terminal(columns, "table", *map(str, runs), "--metric", "em")
    assert "…" not in text
    assert "Paired differences" in text
    joined = first_cells(text)
    # a table too wide for its words prints one block per row (issue 39: never split inside a word), its first cell
    # on a line of its own: the name is whole there too
    blocks = "\n".join(line for line in text.splitlines() if line.startswith("System: "))
    for run in runs:
        # in the results table and in the paired differences
        assert joined.count(run.name) + blocks.count(run.name) >= 2, run.name


def test_tasks_at_80_columns_cuts_nothing():
    text = on_a_terminal(80, "tasks")
    assert "…" not in text
    # at 80 columns the listing's words do not fit side by side: one block per task, its name on the first line
    assert "2wikimultihopqa" in first_cells(text) or "name: 2wikimultihopqa" in text.splitlines()
