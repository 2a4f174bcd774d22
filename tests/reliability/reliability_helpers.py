"""Helpers of the reliability tests: replay recordings and task files written for one test, and the real
`evalsuite` CLI in a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

TOPICS = [
    ("Big Fish", "Big Fish is a 1998 novel by Daniel Wallace, filmed by Tim Burton in 2003."),
    ("Prodigal Son", "The parable of the Prodigal Son is told by Jesus in the Gospel of Luke, chapter 15."),
    ("Paris", "Paris is the capital and most populous city of France, on the river Seine."),
    ("Mount Everest", "Mount Everest is Earth's highest mountain above sea level, in the Himalayas."),
    ("Ada Lovelace", "Ada Lovelace wrote the first published algorithm for Charles Babbage's Analytical Engine."),
    ("Nile", "The Nile is a major north-flowing river in northeastern Africa, draining into the Mediterranean."),
    ("Marie Curie", "Marie Curie won Nobel Prizes in physics (1903) and chemistry (1911) for research on radioactivity."),
    ("Jupiter", "Jupiter is the fifth planet from the Sun and the largest in the Solar System."),
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def write_recording(path: Path, examples: list[tuple[str, str, str]]) -> Path:
    """A replay recording (FlashRAG intermediate_data) in which example (id, query, answer) searches `query` once,
    reads the observation and answers `answer`."""
    items = []
    for example_id, query, answer in examples:
        response = (
            f"<think> I need to look this up. </think>\n<search> {query} </search>\n\n<information>Doc 1(Title: \"x\") x</information>\n\n"
            f"<think> Found it. </think>\n<answer> {answer} </answer>"
        )
        items.append({"id": example_id, "question": f"question {example_id}?", "golden_answers": [answer], "output": {"query": "", "final_response": response, "stop_reason": "stop"}})
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def write_tasks(data_dir: Path, ids: list[str], answers: list[str]) -> Path:
    """`<data_dir>/nq.test.jsonl` with one row per id (the questions of `write_recording`)."""
    return write_jsonl(data_dir / "nq.test.jsonl", [{"id": i, "question": f"question {i}?", "golden_answers": [a]} for i, a in zip(ids, answers)])


def run_cli(*args: str, cwd: Path, timeout: float = 180, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The real `evalsuite` command in a subprocess (optionally under `prefix`, e.g. an unshare wrapper)."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([*prefix, sys.executable, "-m", "evalsuite", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    """The `error:` lines of a command's stderr (after asserting it failed cleanly, without a traceback)."""
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("error:")]


def one_error(result: subprocess.CompletedProcess, *expected: str) -> str:
    """The single error line, after checking it says each of `expected` and comes with a hint."""
    (line,) = error_lines(result)
    for text in expected:
        assert text in line, line
    assert "hint:" in result.stderr or "expected a JSON object" in line, result.stderr
    return line


def in_tmpfs(tmp_path: Path, options: str) -> tuple[str, ...]:
    """A command prefix running the command with `tmp_path/fs` a fresh tmpfs mounted with `options` (in a private
    mount namespace, so no privileges are needed), then copying what it wrote to `tmp_path/kept`."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a small tmpfs")
    (tmp_path / "fs").mkdir()
    script = f'mount -t tmpfs -o {options} tmpfs fs || exit 99; "$@"; status=$?; cp -r fs kept; exit $status'
    prefix = ("unshare", "--user", "--map-root-user", "--mount", "sh", "-c", script, "sh")
    if subprocess.run([*prefix, "true"], cwd=tmp_path, capture_output=True).returncode == 99:
        pytest.skip("unprivileged user namespaces are disabled here: cannot mount a small tmpfs")
    shutil.rmtree(tmp_path / "kept", ignore_errors=True)
    return prefix


class Running:
    """`evalsuite ARGS` in a subprocess whose stderr lines are read as they come, each with its time. `command` is
    what runs `evalsuite` (this interpreter's module by default; another venv's `evalsuite` script), `env` its
    environment (this process's by default)."""

    def __init__(self, args: list[str], cwd: Path, command: Sequence[str] = (sys.executable, "-m", "evalsuite"),
                 env: Mapping[str, str] | None = None):
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [*command, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env={**(os.environ if env is None else env), "COLUMNS": "300", "NO_COLOR": "1"},
        )
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append((time.monotonic() - self.started, line.rstrip("\n")))

    def wait_for(self, predicate, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            assert self.process.poll() is None, self.text()
            assert time.monotonic() < deadline, self.text()
            time.sleep(0.05)

    def text(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def interrupt(self, presses: int = 1, timeout_s: float = 10) -> tuple[int, float]:
        """Ctrl-C, as a terminal sends it (SIGINT), `presses` times in a row: the exit code and the seconds from the
        first press to the exit; the stderr reader is then done."""
        pressed = time.monotonic()
        for _ in range(presses):
            self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=timeout_s)
        stopped_in = time.monotonic() - pressed
        self.reader.join(timeout=5)
        return code, stopped_in


def ok_records(out: Path) -> list[dict]:
    """The finished (status ok) records of the run directory `out`, in file order."""
    path = out / "predictions.jsonl"
    if not path.exists():
        return []
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in records if r["status"] == "ok"]
