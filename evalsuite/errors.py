"""User-facing errors: each says what is wrong, where, and what to do."""

from __future__ import annotations


class EvalsuiteError(Exception):
    """An error caused by user input or environment; the CLI prints it without a traceback."""

    def __init__(self, message: str, hint: str | None = None):
        self.message = message
        self.hint = hint
        super().__init__(message if hint is None else f"{message}\n  hint: {hint}")


class DataError(EvalsuiteError):
    """A data file (task rows, corpus, predictions) is malformed."""


class RequestRejected(EvalsuiteError):
    """A server refused one request (a 4xx other than 429): retrying the same request cannot help, but the other
    requests of a run may still succeed."""


class MissingExtraError(EvalsuiteError):
    """An optional dependency is not installed."""

    def __init__(self, package: str, extra: str, purpose: str):
        super().__init__(
            f"{purpose} needs the Python package '{package}', which is not installed.",
            hint=f'pip install "evalsuite[{extra}]"',
        )


def require(module: str, extra: str, purpose: str):
    """Import an optional dependency lazily, or raise an error naming the extra that provides it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(module.split(".")[0], extra, purpose) from exc
