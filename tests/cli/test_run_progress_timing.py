"""Honest progress (issue 39.7): read the lines `evalsuite run` writes to a piped stderr, each with the time it came.

The replay backend waits 12 s per generation call (`delay_s`, the shape of one GPU batch), longer than the 10 s a
log may go without a line: the heartbeat must fill the wait, the lines before the examples must say what loads,
and the tokens generated must show while the examples are not yet finished. The bar's columns label elapsed and left."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

from rich.console import Console
from rich.progress import Progress

from evalsuite.cli._progress import bar_columns
from evalsuite.console import ProgressLine
from tests.agent.test_run_directory import NQ_RECORDING

DELAY_S = 12


def timed_lines(args: list[str]) -> tuple[int, list[tuple[float, str]]]:
    """Run `evalsuite ARGS`; its stderr lines with the seconds since the start at which each arrived."""
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "evalsuite", *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "300", "NO_COLOR": "1"})
    lines: list[tuple[float, str]] = []

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append((time.monotonic() - started, line.rstrip("\n")))

    reader = threading.Thread(target=read)
    reader.start()
    code = process.wait(timeout=300)
    reader.join()
    return code, lines


def test_a_logged_run_writes_a_line_at_least_every_10_s_and_says_what_loads(tmp_path, trajectories_dir, benchmarks_dir):
    code, lines = timed_lines(
        ["run", "--backend", "replay", "--model", str(trajectories_dir / NQ_RECORDING), "--retriever", "replay",
         "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--limit", "2",
         "--schedule", "sync", "--batch-size", "2", "--max-turns", "1", "--backend-option", f"delay_s={DELAY_S}",
         "-o", str(tmp_path / "run")]
    )
    text = "\n".join(f"{at:6.1f} {line}" for at, line in lines)
    assert code == 0, text
    said = [line for _, line in lines]
    # what loads, in order, before the examples start
    stages = [line.split(" · ")[0] for line in said[: said.index("examples: 2 to run")]]
    assert stages == ["checking the model", "loading the tasks", "loading the model (replay)", "loading the retriever"], text
    # never more than 10 s without a line (plus the heartbeat's 1 s tick and a scheduling margin), from the start
    times = [0.0] + [at for at, _ in lines]
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(gaps) <= 10 + 1 + 2, text
    # while the first batch's first call is in flight (12 s), a heartbeat line says how long it has been
    started_at = next(at for at, line in lines if line == "examples: 2 to run")
    in_flight = [line for at, line in lines if started_at < at < started_at + DELAY_S and line.startswith("examples 0/2 ·")]
    assert in_flight and in_flight[0].startswith("examples 0/2 · 0:1"), text
    # tokens show before any example has finished (the first call returned, the second is in flight)
    assert any(line.startswith("examples 0/2 ·") and "tokens generated" in line for line in said), text
    assert said[-1].startswith("examples 2/2 · ") and " elapsed · about 0:00 left · " in said[-1], text


def test_the_progress_line_labels_and_heartbeat_by_the_clock():
    """Hand-computed with a clock the test moves: the heartbeat writes only when 10 s passed without a line."""
    now = [100.0]
    written: list[str] = []
    line = ProgressLine("examples", written.append, every_s=10, clock=lambda: now[0])
    line.stage("loading the model (hf)")
    now[0] += 9.5
    line.heartbeat()
    assert written == ["loading the model (hf) · 0:00 elapsed"]
    now[0] += 0.5
    line.heartbeat()
    assert written[-1] == "loading the model (hf) · 0:10 elapsed"
    line.start(4, 0)
    now[0] += 30
    line.generated(1234)
    line.heartbeat()
    assert written[-1] == "examples 0/4 · 0:30 elapsed · 1,234 tokens generated"
    now[0] += 5
    line.advance(1, "nq EM 100.0")  # 5 s after the last line: not written (at most one line per 10 s)
    assert written[-1] == "examples 0/4 · 0:30 elapsed · 1,234 tokens generated"
    now[0] += 5
    line.advance(1, "nq EM 50.0")  # 40 s for 2 of 4: 20 s each, 2 left
    assert written[-1] == "examples 2/4 · 0:40 elapsed · about 0:40 left · 1,234 tokens generated · nq EM 50.0"
    now[0] += 10
    line.advance(2, "nq EM 25.0")
    assert written[-1] == "examples 4/4 · 0:50 elapsed · about 0:00 left · 1,234 tokens generated · nq EM 25.0"


def test_the_finished_bar_labels_elapsed_and_left():
    """The bar once read `6/6 0:01:49 left 0:00:00` (the elapsed time labelled "left")."""
    now = [0.0]
    bars = Progress(*bar_columns(), console=Console(file=io.StringIO(), width=200), get_time=lambda: now[0])
    task = bars.add_task("examples", total=6, detail="adqa EM 33.3")
    now[0] = 109.0
    bars.update(task, completed=6)
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(bars.make_tasks_table(bars.tasks))
    rendered = " ".join(out.getvalue().split())
    assert "6/6 0:01:49 elapsed 0:00:00 left adqa EM 33.3" in rendered, rendered
