"""The `evalsuite` command line. Each module in this package registers its own commands through `register(app)`."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from rich.console import Console
from rich.markup import escape

from evalsuite.cli._options import normalize_option_name
from evalsuite.errors import user_error

app = typer.Typer(
    name="evalsuite",
    help="Evaluate, compare and publish search-augmented LLM agents (Search-R1 and successors).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"token_normalize_func": normalize_option_name},  # retired option names (cli/_options.py)
)
err_console = Console(stderr=True, soft_wrap=True)  # soft_wrap: a message stays one line in a log, never wrapped


def _version_callback(value: bool) -> None:
    if value:
        from evalsuite import __version__

        typer.echo(f"evalsuite {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """Evaluate, compare and publish search-augmented LLM agents (Search-R1 and successors)."""


def _register_commands() -> None:
    # Command modules import their heavy dependencies inside the command bodies, so discovery stays cheap.
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)


_register_commands()


def main() -> None:
    """Console entry point: user errors (bad input, full disk, unwritable path, busy port) print as one clear message
    and exit 2, without a traceback; anything else is a bug and keeps its traceback."""
    try:
        app()
    except Exception as exc:  # noqa: BLE001 - classified by user_error; bugs are re-raised
        error = user_error(exc)
        if error is None:
            raise
        err_console.print(f"[bold red]error:[/] {escape(error.message)}", highlight=False, soft_wrap=True)
        if error.hint:
            err_console.print(f"  [yellow]hint:[/] {escape(error.hint)}", highlight=False, soft_wrap=True)
        sys.exit(2)
