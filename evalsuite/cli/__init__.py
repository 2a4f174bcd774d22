"""The `evalsuite` command line. Each module in this package registers its own commands through `register(app)`."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import typer
from rich.console import Console
from rich.markup import escape

from evalsuite.errors import EvalsuiteError

app = typer.Typer(
    name="evalsuite",
    help="Evaluate, compare and publish search-augmented LLM agents (Search-R1 and successors).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True, soft_wrap=True)  # soft_wrap: a message stays one line in a log, never wrapped


def _version_callback(value: bool) -> None:
    if value:
        from evalsuite import __version__

        typer.echo(f"evalsuite {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True, help="Print the version."),
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
    """Console entry point: user errors print as one clear message and exit 2, without a traceback."""
    try:
        app()
    except EvalsuiteError as exc:
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.hint:
            err_console.print(f"  [yellow]hint:[/] {escape(exc.hint)}", highlight=False)
        sys.exit(2)
