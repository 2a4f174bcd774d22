"""User-facing errors: each says what is wrong, where, and what to do."""

from __future__ import annotations

import errno
from collections.abc import Iterable


class EvalsuiteError(Exception):
    """An error caused by user input or environment; the CLI prints it without a traceback."""

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")


def did_you_mean(
    name: str, known: Iterable[str], otherwise: str | None = None, *, n: int = 3, cutoff: float = 0.5
) -> str | None:
    """The one did-you-mean hint: `did you mean A, B?` naming the known names closest to `name`, else `otherwise`."""
    import difflib

    close = difflib.get_close_matches(str(name), list(known), n=n, cutoff=cutoff)
    return f"did you mean {', '.join(close)}?" if close else otherwise


def unknown_name(kind: str, name: str, known: Iterable[str]) -> EvalsuiteError:
    """`unknown <kind> 'name'`, hinting the closest known names (else all of them): registries' lookup error."""
    known = list(known)
    return EvalsuiteError(
        f"unknown {kind} {name!r}", hint=did_you_mean(name, known, f"known {kind}s: {', '.join(known)}")
    )


class DataError(EvalsuiteError):
    """A data file (task rows, corpus, predictions) is malformed."""


class RequestRejected(EvalsuiteError):
    """A server refused one request (a 4xx other than 429): retrying the same request cannot help, but the other
    requests of a run may still succeed."""


# The extras that bring torch. pip given one of them alone installs the default torch wheel, on Linux the CUDA build
# with gigabytes of NVIDIA libraries, even on a machine without a GPU (measured: `[hf]` in a `[demo]` venv took 208 s
# and 6.5 GB); their hints say to install the machine's torch build first, as the README's install does.
TORCH_EXTRAS = frozenset({"hf", "dense", "train", "lmeval", "vllm-cpu", "test", "all"})
TORCH_FIRST = "install the torch build for this machine first (CPU: pip install torch==2.13.0), then "


def install_hint(extra: str) -> str:
    """The line that installs `extra`, torch's own build first where the extra brings torch."""
    line = f'pip install "evalsuite[{extra}]"'
    return TORCH_FIRST + line if extra in TORCH_EXTRAS else line


class MissingExtraError(EvalsuiteError):
    """An optional dependency is not installed, or is installed but does not import (`broken`: why)."""

    def __init__(self, package: str, extra: str, purpose: str, hint: str | None = None, broken: str | None = None):
        state = "which is not installed" if broken is None else f"which is installed but does not import ({broken})"
        super().__init__(f"{purpose} needs the Python package '{package}', {state}.", hint=hint or install_hint(extra))


def first_line(exc: BaseException) -> str:
    """An exception as its first non-blank line (its type's name when it has no text): libraries whose errors span
    many lines (vLLM's engine, the hub clients, Ray) are reported in one."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def require(module: str, extra: str, purpose: str, hint: str | None = None):
    """Import an optional dependency lazily, or raise an error naming the extra that provides it (or `hint`)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        # "not installed" only when the module itself is missing: a package whose own imports fail (a dependency
        # missing or built for another torch, a process running another Python) says so with the first line
        missing = (
            isinstance(exc, ModuleNotFoundError) and exc.name is not None and (module + ".").startswith(exc.name + ".")
        )
        broken = None if missing else first_line(exc)
        raise MissingExtraError(module.split(".")[0], extra, purpose, hint, broken=broken) from exc


def require_installed(module: str, extra: str, purpose: str, hint: str | None = None) -> None:
    """Check, without importing it, that an optional dependency is installed (before slow work that would need it)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise MissingExtraError(module.split(".")[0], extra, purpose, hint)


def user_error(exc: BaseException) -> EvalsuiteError | None:
    """A failure caused by the user's input or machine (full disk, unwritable path, busy port, undecodable file) as
    one message with a hint; None for anything else, which is a bug and keeps its traceback."""
    if isinstance(exc, EvalsuiteError):
        return exc
    if isinstance(exc, UnicodeDecodeError):
        return DataError(f"a file is not valid UTF-8 ({exc.reason} at byte {exc.start})", hint="save the file as UTF-8")
    if isinstance(exc, RecursionError):
        return DataError("the input is nested too deeply to process", hint="flatten the nested JSON")
    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    where = exc.filename if exc.filename is not None else "a file"
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return EvalsuiteError(
            "no space left on the device"
            + (f" for {exc.filename}" if exc.filename is not None else ": a file could not be written"),
            hint=(
                "free some space and run the same command again "
                "(`evalsuite run --resume -o DIR` keeps finished examples)"
            ),
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return EvalsuiteError(
            f"cannot write {where}: {reason}",
            hint="choose a location you can write to (e.g. -o under your home directory)",
        )
    if exc.errno == errno.EADDRINUSE:
        return EvalsuiteError(
            f"cannot listen: {reason}",
            hint="another program uses that port: choose another --port, or --port 0 for a free one",
        )
    if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
        return EvalsuiteError(
            f"{where}: {reason}", hint="give a path whose parent folders are directories (e.g. a new -o directory)"
        )
    return EvalsuiteError(f"{where}: {reason}" if exc.filename is not None else reason)
