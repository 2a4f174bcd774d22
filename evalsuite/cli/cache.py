"""`evalsuite cache`: what evalsuite keeps on disk, where, and how big (`evalsuite.cache_usage`)."""

from __future__ import annotations

import typer
from rich.table import Table

from evalsuite.console import echo_json, out_console, print_table


def human_bytes(size: int) -> str:
    """`1.2 GB`, `253.1 MB`, `12 B`: sizes as people read them (powers of 1000, as `du --si`)."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def cache_command(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Show what evalsuite has cached, where, and how big ($EVALSUITE_CACHE_DIR moves all of it)."""
    from evalsuite.cache_usage import cache_usage

    usage = cache_usage()
    if as_json:
        echo_json(usage)
        return
    table = Table(
        title=f"evalsuite cache: {usage['root']} ({human_bytes(usage['bytes'])}; ${usage['variable']} moves it)"
    )
    table.add_column("entry")
    table.add_column("size", justify="right")
    table.add_column("holds")
    for entry in usage["entries"]:
        table.add_row(entry["name"], human_bytes(entry["bytes"]), entry["holds"])
    print_table(table)
    hub = usage["hub_cache"]
    out_console().print(
        f"Hugging Face hub downloads (transformers, vLLM): {hub['path']} "
        f"({human_bytes(hub['bytes'])}; $HF_HOME moves it)"
    )


def register(app: typer.Typer) -> None:
    app.command("cache")(cache_command)
