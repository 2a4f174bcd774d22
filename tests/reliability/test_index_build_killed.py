"""A BM25 build killed with SIGKILL half-way never leaves an index that loads, and a rerun restarts cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.retrieval import IndexFormatError, build_index, load_retriever

REPO = Path(__file__).resolve().parents[2]
N_PASSAGES = 8000  # about 9 MB: 1 MB blocks make the build long enough to kill in the middle


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data) -> Path:
    source = shared_data / "corpus" / "multihop_contexts.jsonl"
    path = tmp_path_factory.mktemp("corpus") / "c.jsonl"
    with source.open("rb") as handle, path.open("wb") as out:
        for _, line in zip(range(N_PASSAGES), handle):
            out.write(line)
    return path


def cli(*args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "evalsuite", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def kill_once_blocks_are_spilled(process: subprocess.Popen, out: Path, blocks: int = 2, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(list((out / "spill").glob("block-*.npz"))) < blocks:
        assert process.poll() is None, f"the build ended before it could be killed: {process.communicate()}"
        assert time.monotonic() < deadline, "the build never spilled a block"
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL


def build_args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["index", "build", "--corpus", str(corpus), "-o", str(out), "--no-progress", "--workers", "1", "--block-mb", "1", *extra]


def test_killed_build_does_not_load_and_a_rerun_restarts_cleanly(tmp_path, corpus):
    out = tmp_path / "idx"
    kill_once_blocks_are_spilled(cli(*build_args(corpus, out)), out)
    with pytest.raises(IndexFormatError, match="did not finish"):
        load_retriever(out)
    search = cli("index", "search", str(out), "Shirley Temple")
    _, err = search.communicate(timeout=120)
    assert search.returncode == 2 and "did not finish" in err and "Traceback" not in err
    # the same command again, without --overwrite: restarts and gives what an uninterrupted build gives
    rerun = cli(*build_args(corpus, out))
    _, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    clean = build_index(corpus, tmp_path / "clean", workers=2)
    assert load_retriever(out).info()["index_hash"] == load_retriever(clean).info()["index_hash"]
    assert not (out / "spill").exists() and not (out / ".evalsuite-build").exists()


def test_a_killed_overwrite_leaves_no_loadable_index_behind(tmp_path, corpus, shared_data):
    out = tmp_path / "idx"
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"".join(corpus.read_bytes().splitlines(keepends=True)[:50]))
    build_index(small, out)
    assert load_retriever(out).num_documents == 50
    kill_once_blocks_are_spilled(cli(*build_args(corpus, out, "--overwrite")), out, blocks=1)
    with pytest.raises(IndexFormatError):
        load_retriever(out)  # neither the old index nor half of the new one
