"""Ctrl-C during `evalsuite run`: stop at once, say what was kept and the command that continues.

A run appends each finished record to predictions.jsonl in one unbuffered write as soon as it finishes
(`runs.store.PredictionWriter`), so nothing finished waits in memory and the process may end at any moment. Waiting
for the work in flight is what made Ctrl-C take 10-44 s: a llama.cpp or vLLM generation runs in C in a worker thread,
which Python cannot interrupt, and asyncio's shutdown and the thread pools join those threads before the process can
exit. So the first Ctrl-C writes one line (how many examples are kept, the exact command that continues the run) and
ends the process with `os._exit` (no thread is joined) with exit code 130, the shell's code for SIGINT; a second
Ctrl-C while that line is being written exits at once.

The signal is taken by a thread of its own, through the wakeup pipe of Python's signal module: the kernel hands a
process's SIGINT to any of its threads (llama.cpp's and OpenBLAS's included), Python's C-level handler then writes the
signal's number to the wakeup file descriptor from whichever thread that is, and the watching thread reads it. A
Python-level handler alone runs only when the main thread next runs Python code, which it does not while it waits in
epoll or on a lock that a signal to another thread does not interrupt (measured: Ctrl-C right after an example
finished took 10-14 s, until the next generation returned).
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

EXIT_INTERRUPTED = 130
OUTPUT_FLAGS = ("-o", "--output", "--out")


def resume_command(argv: Sequence[str], out: Path) -> str:
    """The command line that continues the run `argv` (the arguments after `evalsuite`) writes to `out`."""
    args = list(argv)
    given_out = any(arg in OUTPUT_FLAGS or arg.startswith(tuple(f"{flag}=" for flag in OUTPUT_FLAGS)) for arg in args)
    if not given_out:
        args += ["-o", str(out)]  # the default -o is a timestamp: the continuation must name it
    if "--resume" not in args:
        args.append("--resume")
    return shlex.join(["evalsuite", *args])


def interrupted_line(out: Path, kept: int, argv: Sequence[str]) -> str:
    """What the first Ctrl-C prints."""
    if not (out / "manifest.json").is_file():
        return "interrupted before the first example started; nothing was written"
    return (
        f"interrupted: {kept} finished example{'s' if kept != 1 else ''} kept in {out}; "
        f"continue with: {resume_command(argv, out)}"
    )


@dataclass
class Kept:
    """How many finished (status ok) records the run has on disk; the progress hooks keep it up to date."""

    count: int = 0


@contextmanager
def stop_at_once(out: Path, argv: Sequence[str]) -> Iterator[Kept]:
    """While the block runs, Ctrl-C ends the process within moments (see the module's docstring). Outside the main
    thread (a library caller's thread) nothing changes."""
    kept = Kept()
    if threading.current_thread() is not threading.main_thread():
        yield kept
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the signal module writes to it from a C signal handler: it must never block

    def watch() -> None:
        pressed = 0
        while True:
            received = os.read(read_end, 1)
            if received != bytes([signal.SIGINT]):
                return  # the block ended (its sentinel) or the pipe closed
            pressed += 1
            if pressed > 1:
                os._exit(EXIT_INTERRUPTED)
            if os.isatty(2):
                os.write(2, b"\x1b[?25h\n")  # the progress bar hid the cursor; its own cleanup will not run
            # os.write, not print: the main thread may be inside a write to stderr
            os.write(2, (interrupted_line(out, kept.count, argv) + "\n").encode("utf-8", "replace"))
            os._exit(EXIT_INTERRUPTED)

    watcher = threading.Thread(target=watch, name="ctrl-c", daemon=True)
    watcher.start()
    # a Python-level handler makes the C-level one catch SIGINT (and write the pipe); the watcher does the work
    previous_handler = signal.signal(signal.SIGINT, lambda signum, frame: None)
    previous_fd = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    try:
        yield kept
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGINT, previous_handler)
        os.write(write_end, b"\0")  # the sentinel: the watcher returns
        watcher.join()
        os.close(read_end)
        os.close(write_end)
