"""`ordered_map` yields results in order and reports a dead worker as `WorkerDied`, wherever the worker died.

Each scenario runs in its own Python process: a pool that hangs would also hang the interpreter's exit.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.retrieval.worker_pool import WorkerDied, ordered_map

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def no_setup() -> None:
    pass


def square(x: int) -> int:
    return x * x


def square_or_die(x: int, die_at: int) -> int:
    if x == die_at:
        time.sleep(0.5)  # the calls after it are submitted and waiting
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def die_half_way_through_a_result(x: int, die_at: int) -> bytes:
    """At `die_at`, what the out-of-memory killer does to a worker sending a large result: the pipe holds a message
    header and part of its bytes, then the sender is gone."""
    if x != die_at:
        return b"x" * 10
    result_queue = sys._getframe(1).f_locals["result_queue"]  # the pool's worker loop called this function
    with result_queue._wlock:
        result_queue._writer._send(struct.pack("!i", 1 << 20) + b"x" * 1000)
        os.kill(os.getpid(), signal.SIGKILL)
    return b""


def scenario(name: str) -> None:
    """Runs in a child process; prints what it saw."""
    calls = {
        "fine": (square, [(x,) for x in range(12)]),
        "killed": (square_or_die, [(x, 5) for x in range(12)]),
        "half-sent": (die_half_way_through_a_result, [(x, 5) for x in range(12)]),
    }
    function, arguments = calls[name]
    seen = []
    try:
        for result in ordered_map(function, arguments, workers=2, initializer=no_setup):
            seen.append(result if isinstance(result, int) else len(result))
    except WorkerDied as died:
        print(f"died at {died.call} ({died.exitcode}) after {seen}")
    else:
        print(f"results {seen}")


def run_scenario(name: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(REPO)])}
    code = f"import test_worker_pool; test_worker_pool.scenario({name!r})"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_results_come_in_the_calls_order():
    assert run_scenario("fine") == f"results {[x * x for x in range(12)]}"


@pytest.mark.parametrize("name", ["killed", "half-sent"])
def test_a_dead_worker_is_worker_died_naming_the_first_call_without_a_result(name):
    """`half-sent` hung forever with a bare ProcessPoolExecutor: no future failed, and the exit waited too."""
    out = run_scenario(name)
    assert out.startswith(f"died at 5 ({-signal.SIGKILL}) after "), out
    assert out.endswith("[0, 1, 4, 9, 16]") or out.endswith("[10, 10, 10, 10, 10]"), out
