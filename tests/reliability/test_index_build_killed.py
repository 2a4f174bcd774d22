"""A BM25 build killed with SIGKILL half-way never leaves an index that loads, and a rerun restarts cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from reliability_helpers import in_tmpfs, one_error, run_cli

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


# Out of resources: the disk fills or a worker is killed (the kernel's out-of-memory killer sends SIGKILL). Each is
# one error line saying what ran out and what to do, and the directory left behind does not load.


def generated_corpus(path: Path, passages: int, words: int = 120) -> Path:
    """A corpus of seeded random words from a 20,000-word vocabulary (no shared data needed)."""
    import random

    rng = random.Random(0)
    vocabulary = [f"w{i}x" for i in range(20_000)]
    with path.open("w", encoding="utf-8") as out:
        for i in range(passages):
            text = " ".join(rng.choices(vocabulary, k=words))
            out.write(json.dumps({"id": str(i), "contents": f'"T{i}"\n{text}'}) + "\n")
    return path


def assert_left_no_index(out: Path) -> None:
    assert (out / ".evalsuite-build").exists() and not (out / "index.json").exists()
    assert not (out / "spill").exists() and not (out / "bm25").exists()  # nothing half-written left on the disk
    with pytest.raises(IndexFormatError, match="did not finish"):
        load_retriever(out)


@pytest.mark.parametrize(
    ("size", "where"),
    [
        ("size=80k", "spill/block-"),  # the counting pass's spilled blocks fill the disk
        ("size=6000k", "bm25/"),  # the spill (4.3 MB) fits, the matrix (2.9 MB) does not
    ],
)
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_index(tmp_path, size, where):
    corpus = generated_corpus(tmp_path / "c.jsonl", 3000)  # 2.8 MB, 361,868 postings
    result = run_cli(*build_args(corpus, Path("fs/idx")), cwd=tmp_path, prefix=in_tmpfs(tmp_path, size))
    line = one_error(result, "no space left on the device for ", where, "fs/idx is not an index")
    assert "run the same command again" in result.stderr
    if where == "bm25/":  # 361,868 postings of a 4-byte score and a 4-byte row: 2.76 MiB
        assert "the score matrix needs 2.8 MiB" in line
    assert_left_no_index(tmp_path / "kept" / "idx")


def build_with_two_workers(tmp_path: Path, out: Path) -> tuple[subprocess.Popen, list]:
    """A build of a 10 MB corpus in ten 1 MB blocks over two worker processes, once its first block is spilled."""
    import psutil

    corpus = generated_corpus(tmp_path / "c.jsonl", 12_000)
    build = cli("index", "build", "--corpus", str(corpus), "-o", str(out), "--no-progress", "--workers", "2", "--block-mb", "1")
    deadline = time.monotonic() + 120
    while len(list((out / "spill").glob("block-*.npz"))) < 1:
        assert build.poll() is None and time.monotonic() < deadline, build.communicate()
        time.sleep(0.02)
    workers = [p for p in psutil.Process(build.pid).children() if "spawn_main" in " ".join(p.cmdline())]  # not the resource tracker
    assert len(workers) == 2, workers
    return build, workers


def test_a_worker_killed_like_the_out_of_memory_killer_does_is_one_line(tmp_path):
    out = tmp_path / "idx"
    build, workers = build_with_two_workers(tmp_path, out)
    workers[0].kill()
    _, err = build.communicate(timeout=120)
    assert build.returncode == 2 and "Traceback" not in err, err
    (line,) = [text for text in err.splitlines() if text.startswith("error:")]
    assert "a worker process died while counting the blocks from line" in line and "memory runs out" in line
    assert "fewer --workers" in err
    assert_left_no_index(out)


def test_a_script_building_with_workers_without_a_main_guard_is_told_so(tmp_path):
    """Each spawned worker imports the calling script, which builds again; multiprocessing refuses and the worker
    exits with status 1. That used to be reported as a kill by the out-of-memory killer."""
    corpus = generated_corpus(tmp_path / "c.jsonl", 200)
    script = tmp_path / "build_it.py"
    script.write_text(
        "from evalsuite.errors import EvalsuiteError\n"
        "from evalsuite.retrieval import build_index\n"
        "try:\n"
        f"    build_index({str(corpus)!r}, {str(tmp_path / 'idx')!r}, workers=2, block_bytes=16384)\n"
        "except EvalsuiteError as exc:\n"
        "    print('message:', exc.message)\n"
        "    print('hint:', exc.hint)\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    message, hint = [line.split(": ", 1)[1] for line in done.stdout.splitlines() if line.startswith(("message:", "hint:"))]
    assert message.endswith("from line 1 (it exited with status 1; its own error is printed above)"), message
    assert "memory" not in message and '`if __name__ == "__main__":`' in hint
    assert "bootstrapping phase" in done.stderr  # the worker's own error, which the message points to
    assert_left_no_index(tmp_path / "idx")


def test_memory_running_out_is_one_line(tmp_path):
    """A real MemoryError: the build's address space capped (RLIMIT_AS) at what its imports need plus 150 MiB, and
    one 40 MB block to count in-process (its lines and terms take several times that)."""
    import resource

    corpus = generated_corpus(tmp_path / "c.jsonl", 48_000)
    imports = "import resource, bm25s, Stemmer, numpy, evalsuite.retrieval.bm25, evalsuite.cli.retrieval; "
    peak = subprocess.run(
        [sys.executable, "-c", imports + "print(open('/proc/self/status').read().split('VmPeak:')[1].split()[0])"],
        env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    limit = (int(peak.stdout) << 10) + (150 << 20)

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out = tmp_path / "idx"
    build = cli("index", "build", "--corpus", str(corpus), "-o", str(out), "--no-progress", "--workers", "1", "--block-mb", "64", preexec_fn=cap_memory)
    _, err = build.communicate(timeout=300)
    assert build.returncode == 2 and "Traceback" not in err, err
    (line,) = [text for text in err.splitlines() if text.startswith("error:")]
    assert line == f"error: out of memory while building {out}; it is not an index"
    assert "fewer --workers" in err and "run the same command again" in err
    assert_left_no_index(out)


def test_the_workers_of_a_killed_build_exit_too(tmp_path):
    """SIGKILL reaches the build process only; its pool workers used to wait forever on their task queue."""
    import psutil

    out = tmp_path / "idx"
    build, workers = build_with_two_workers(tmp_path, out)
    build.kill()
    build.wait(timeout=30)
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, f"workers still running 30 s after the build was killed: {alive}"
    with pytest.raises(IndexFormatError, match="did not finish"):
        load_retriever(out)
