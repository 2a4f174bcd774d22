"""Calls run in worker processes, results yielded in order, and a worker's death always reported, never a hang.

`ProcessPoolExecutor` notices a worker killed from outside (the kernel's out-of-memory killer sends SIGKILL) in most
cases, but not all. A worker killed while it sends a large result leaves half a message in the result pipe; the
pool's manager thread then waits forever for the rest (the main process holds the pipe's write end open), no future
ever fails, and the interpreter's exit waits on that thread too. So the main process checks its workers itself while
it waits, and on a death kills the rest and closes its own write end, which ends the manager thread's read.
"""

from __future__ import annotations

import os
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
    that call's arguments (None when no call was pending)."""

    def __init__(self, call: int, arguments: tuple[Any, ...] | None = None):
        super().__init__(f"a worker process died before call {call} returned")
        self.call, self.arguments = call, arguments


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
    try:
        for call in calls:
            pending.append((pool.submit(function, *call), submitted, call))
            submitted += 1
            if len(pending) >= in_flight_per_worker * workers:
                yield _next_result(pool, pending)
        while pending:
            yield _next_result(pool, pending)
    except (BrokenProcessPool, WorkerDied):  # from submit() or a result
        broken = True
        raise (WorkerDied(*pending[0][1:]) if pending else WorkerDied(submitted)) from None
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
