"""Ctrl-C during `evalsuite run`: stop at once, say what was kept and the command that continues.

A run appends each finished record to predictions.jsonl in one unbuffered write as soon as it finishes
(`runs.store.PredictionWriter`), so nothing finished waits in memory and the process may end at any moment. Waiting
for the work in flight is what made Ctrl-C take 10-44 s: a llama.cpp or vLLM generation runs in C in a worker thread,
which Python cannot interrupt, and asyncio's shutdown and the thread pools join those threads before the process can
exit. So the first Ctrl-C writes one line (how many examples are kept, the exact command that continues the run) and
ends the process with `os._exit` (no thread is joined) with exit code 130, the shell's code for SIGINT; a second
Ctrl-C while that line is being written exits at once.
"""

from __future__ import annotations

import os
import shlex
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

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


@contextmanager
def stop_at_once(out: Path, kept: Callable[[], int], argv: Sequence[str]) -> Iterator[None]:
    """While the block runs, Ctrl-C ends the process within moments (see the module's docstring); `kept` says how
    many finished records are on disk. Outside the main thread (a library caller's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            os._exit(EXIT_INTERRUPTED)
        stopping = True
        if os.isatty(2):
            os.write(2, b"\x1b[?25h\n")  # the progress bar hid the cursor; its own cleanup will not run
        # os.write, not print: the handler may run while the main thread is inside a write to stderr
        os.write(2, (interrupted_line(out, kept(), argv) + "\n").encode("utf-8", "replace"))
        os._exit(EXIT_INTERRUPTED)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
