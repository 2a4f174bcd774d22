"""Calls run in worker processes, results yielded in order, and a worker's death always reported, never a hang.

`ProcessPoolExecutor` notices a worker killed from outside (the kernel's out-of-memory killer sends SIGKILL) in most
cases, but not all. A worker killed while it sends a large result leaves half a message in the result pipe; the
pool's manager thread then waits forever for the rest (the main process holds the pipe's write end open), no future
ever fails, and the interpreter's exit waits on that thread too. So the main process checks its workers itself while
it waits, and on a death kills the rest and closes its own write end, which ends the manager thread's read.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

POLL_SECONDS = 0.5


class WorkerDied(Exception):
    """A worker process died. `call` is the index of the oldest call whose result was not yet yielded, `arguments`
    that call's arguments (None when no call was pending), `exitcode` the dead worker's (negative: the signal that
    killed it; None: not known)."""

    def __init__(self, call: int, arguments: tuple[Any, ...] | None = None, exitcode: int | None = None):
        super().__init__(f"a worker process died before call {call} returned ({how_it_died(exitcode)})")
        self.call, self.arguments, self.exitcode = call, arguments, exitcode


def how_it_died(exitcode: int | None) -> str:
    """A dead worker's exit code in words."""
    if exitcode is None:
        return "how is not known"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"killed by {name}"
    return f"it exited with status {exitcode}"


def ordered_map(
    function: Callable[..., Any],
    calls: Iterable[tuple[Any, ...]],
    *,
    workers: int,
    initializer: Callable[..., None],
    initargs: tuple[Any, ...] = (),
    in_flight_per_worker: int = 2,
) -> Iterator[Any]:
    """`function(*call)` for each call in `workers` spawned processes, yielded in the calls' order, with at most
    `in_flight_per_worker` calls a worker submitted ahead (the calls can be large: blocks of a corpus)."""
    pool = ProcessPoolExecutor(
        workers, mp_context=get_context("spawn"), initializer=_start_worker, initargs=(initializer, initargs)
    )
    # (a call's result, its index, its arguments: the pool's work item holds them until it is done anyway)
    pending: deque[tuple[Future, int, tuple[Any, ...]]] = deque()
    submitted = 0
    broken = False
    # the workers, kept here: a broken pool forgets its processes, and with them which one died and how
    workers_seen: dict[int | None, Any] = {}
    try:
        for call in calls:
            pending.append((pool.submit(function, *call), submitted, call))
            submitted += 1
            workers_seen.update((process.pid, process) for process in _processes(pool))
            if len(pending) >= in_flight_per_worker * workers:
                yield _next_result(pool, pending)
        while pending:
            yield _next_result(pool, pending)
    except (BrokenProcessPool, WorkerDied):  # from submit() or a result
        broken = True
        exitcode = _dead_worker_exitcode(list(workers_seen.values()))
        raise (WorkerDied(*pending[0][1:], exitcode) if pending else WorkerDied(submitted, None, exitcode)) from None
    finally:
        for future, _, _ in pending:
            future.cancel()
        if broken:
            _stop_broken(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _next_result(pool: ProcessPoolExecutor, pending: deque[tuple[Future, int, tuple[Any, ...]]]) -> Any:
    """The oldest call's result; the call stays pending until it has one (an error names it)."""
    future = pending[0][0]
    while True:
        try:
            result = future.result(timeout=POLL_SECONDS)
            break
        except FutureTimeout:
            if any(process.exitcode is not None for process in _processes(pool)):
                raise WorkerDied(*pending[0][1:]) from None
    pending.popleft()
    return result


def _dead_worker_exitcode(processes: list[Any], wait_s: float = 5.0) -> int | None:
    """The exit code of the worker that died first (None: none found). A broken pool sends SIGTERM to the workers
    still alive, so the first death is an ended worker's own status or another signal; and a dying process closes
    its sentinel, which tells the pool, a moment before it can be reaped, so that code is waited for a little."""
    deadline = time.monotonic() + wait_s
    while True:
        codes = [p.exitcode for p in processes if p.exitcode is not None]
        first = [code for code in codes if code != -signal.SIGTERM]
        if first or time.monotonic() > deadline:
            return first[0] if first else (codes[0] if codes else None)
        time.sleep(0.02)


def _processes(pool: ProcessPoolExecutor) -> list[Any]:
    # the executor keeps its worker processes in a private dict (pid -> Process), the same from 3.9 to 3.13
    return list((getattr(pool, "_processes", None) or {}).values())


def _stop_broken(pool: ProcessPoolExecutor) -> None:
    """Kill every worker; if the manager thread still waits on a half-sent result, end its read with end of file."""
    processes = _processes(pool)
    for process in processes:
        process.kill()
    for process in processes:
        process.join(timeout=10)
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(timeout=2 * POLL_SECONDS)
        result_queue = getattr(pool, "_result_queue", None)
        if manager.is_alive() and result_queue is not None:  # every writer but ours is dead: closing ours ends its read
            result_queue._writer.close()


def _start_worker(initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    initializer(*initargs)


def _exit_with_parent(parent: int) -> None:
    """A pool worker outlives a main process killed with SIGKILL (it holds both ends of its task queue's pipe, so it
    waits forever, holding its memory and the main process's output pipes): it exits once it has another parent."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(1)
