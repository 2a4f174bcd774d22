"""Output read through a pipe (logs, CI, SLURM files): real `evalsuite` subprocesses with stdout and stderr piped.

Tables print as Markdown with every cell in full, `--json` prints one object and nothing else, progress bars stay
off both streams, and user text holding rich markup prints literally.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.reported import load_reported

NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"
# A narrow terminal width, as a pipe gets: nothing may be wrapped or cut to fit it.
ENV = {**os.environ, "COLUMNS": "60", "TERM": "dumb"}


def cli(*args):
    """The CLI in-process (for --json output, which needs no terminal to differ from)."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def evalsuite(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalsuite", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=ENV, cwd=cwd)


def markdown_rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]


def test_piped_reported_table_prints_every_printed_number_in_full():
    result = evalsuite("table", "--reported", "oases:table1")
    assert result.returncode == 0, result.stderr
    cells = [value.printed for value in load_reported("oases:table1").cells.values() if value.value is not None]
    flat = " ".join(cell for row in markdown_rows(result.stdout) for cell in row)
    assert "…" not in result.stdout
    missing = [c for c in cells if c not in flat]
    assert not missing and len(cells) >= 36


def test_piped_run_prints_the_results_table_in_full_and_progress_only_on_stderr(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = evalsuite("run", "--backend", "replay", "--model", trajectories_dir / NQ_RECORDING, "--retriever", "replay",
                       "--tasks", "nq", "--split", "test_sub1000", "--data-dir", benchmarks_dir, "--subset", "first:40",
                       "-o", out)
    assert result.returncode == 0, result.stderr
    metrics = json.loads((out / "metrics.json").read_text())["tasks"]["nq"]["metrics"]
    rows = {row[0]: row for row in markdown_rows(result.stdout)}
    header, nq = rows["task"], rows["nq"]
    assert header == ["task", "n", "failed", "EM", "95% CI", "cover-EM", "F1", "retrieval hit", "searches", "answered"]
    em = metrics["em"]
    assert nq[1] == "40" and nq[3] == f"{em['mean'] * 100:.1f}"
    assert nq[4] == f"[{em['ci_low'] * 100:.1f}, {em['ci_high'] * 100:.1f}]" and nq[6] == f"{metrics['f1']['mean'] * 100:.1f}"
    assert f"run directory: {out}" in result.stdout
    # stderr is a pipe too: progress lines there (no bar), nothing of it in stdout
    assert "examples 40/40 ·" in result.stderr and "━" not in result.stderr
    assert "examples" not in result.stdout and "elapsed" not in result.stdout


def test_json_flags_print_one_object(tmp_path, trajectories_dir, benchmarks_dir):
    run = cli("run", "--backend", "replay", "--model", trajectories_dir / NQ_RECORDING, "--retriever", "replay",
              "--tasks", "nq", "--split", "test_sub1000", "--data-dir", benchmarks_dir, "--subset", "first:8",
              "-o", tmp_path / "run", "--json")
    payload = json.loads(run.stdout)
    assert payload["run_directory"] == str(tmp_path / "run") and payload["metrics"]["tasks"]["nq"]["n"] == 8
    scored = json.loads(cli("score", tmp_path / "run", "-o", tmp_path / "scored", "--json").stdout)["inputs"][0]
    assert scored["metrics"]["tasks"]["nq"]["metrics"]["em"] == payload["metrics"]["tasks"]["nq"]["metrics"]["em"]
    table = json.loads(cli("table", "--reported", "progress:table1", "--json").stdout)
    assert table["tables"][0]["title"].startswith("Table 1")
    only_bamboogle = tmp_path / "data"
    only_bamboogle.mkdir()
    (only_bamboogle / "bamboogle.test.jsonl").symlink_to(benchmarks_dir / "bamboogle.test.jsonl")
    tasks = json.loads(cli("tasks", "--data-dir", only_bamboogle, "--json").stdout)["tasks"]
    assert {t["name"]: t["rows"].get("test") for t in tasks}["bamboogle"] == 125


def test_an_error_naming_user_text_prints_it_literally_on_one_line(tmp_path):
    missing = tmp_path / ("long-directory-name-[/]-[bold]-" * 4) / "data"
    result = evalsuite("tasks", "--data-dir", missing)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == f"error: data directory {missing} does not exist"


@pytest.mark.parametrize("fmt", ["markdown", "terminal"])
def test_print_table_markdown_keeps_long_cells_and_escapes_pipes(capsys, fmt, monkeypatch):
    from rich.table import Table

    from evalsuite.console import print_table

    table = Table(title="t")
    table.add_column("name")
    table.add_column("value", justify="right")
    table.add_row("a|b [/] " + "x" * 200, "0.0612345")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    print_table(table, None if fmt == "terminal" else fmt)
    text = capsys.readouterr().out
    assert "a\\|b [/] " + "x" * 200 in text and "0.0612345 |" in text and "--:" in text
