"""`evalsuite cache`: what evalsuite keeps on disk, where, and how big.

Everything evalsuite makes lives under one root, `$EVALSUITE_CACHE_DIR` (else `$XDG_CACHE_HOME/evalsuite`, else
`~/.cache/evalsuite`; `evalsuite.files.cache_root`): downloaded benchmarks, indexes, the demo's model, dequantized
models, score columns, viewer pages. Models that transformers or vLLM download from the Hugging Face hub go to the
hub's own cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`), shown beside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from evalsuite.console import echo_json, out_console, print_table

# what each entry of the cache root holds, by the name the code that writes it gives it
CACHE_ENTRIES = {
    "data": "benchmark files (evalsuite data download)",
    "models": "model files: the demo's GGUF, packaged models made into folders (evalsuite models prepare)",
    "adqa": "the AD-QA corpus and its BM25 index",
    "scores": "per-metric score columns of scored runs",
    "view": "pages of the run viewer (evalsuite view)",
    "judges.sqlite": "LLM judge verdicts",
    "file_hashes.json": "sha256 of model files, by path, size and time",
}


def tree_bytes(path: Path) -> int:
    """The bytes of the files under `path` (links not followed, so nothing outside it is counted)."""
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size if path.exists() or path.is_symlink() else 0
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass  # removed while counting
    return total


def human_bytes(size: int) -> str:
    """`1.2 GB`, `253.1 MB`, `12 B`: sizes as people read them (powers of 1000, as `du --si`)."""
    value = float(size)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"


def hub_cache() -> Path:
    """Where the Hugging Face clients keep downloaded models (their own variables, as they read them)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def cache_entries(root: Path) -> list[dict[str, Any]]:
    """Each entry of the evalsuite cache root with what it holds and its size."""
    if not root.is_dir():
        return []
    return [
        {
            "name": entry.name,
            "path": str(entry),
            "bytes": tree_bytes(entry),
            "holds": CACHE_ENTRIES.get(entry.name, ""),
        }
        for entry in sorted(root.iterdir(), key=lambda e: e.name)
    ]


def cache_command(as_json: bool = typer.Option(False, "--json", help="Print one JSON object.")) -> None:
    """Show what evalsuite has cached, where, and how big ($EVALSUITE_CACHE_DIR moves all of it)."""
    from evalsuite.files import CACHE_ENV, cache_root

    root = cache_root()
    entries = cache_entries(root)
    hub = hub_cache()
    hub_bytes = tree_bytes(hub) if hub.is_dir() else 0
    total = sum(entry["bytes"] for entry in entries)
    if as_json:
        echo_json(
            {
                "root": str(root),
                "variable": CACHE_ENV,
                "bytes": total,
                "entries": entries,
                "hub_cache": {"path": str(hub), "bytes": hub_bytes},
            }
        )
        return
    table = Table(title=f"evalsuite cache: {root} ({human_bytes(total)}; ${CACHE_ENV} moves it)")
    table.add_column("entry")
    table.add_column("size", justify="right")
    table.add_column("holds")
    for entry in entries:
        table.add_row(entry["name"], human_bytes(entry["bytes"]), entry["holds"])
    print_table(table)
    out_console().print(
        f"Hugging Face hub downloads (transformers, vLLM): {hub} ({human_bytes(hub_bytes)}; $HF_HOME moves it)"
    )


def register(app: typer.Typer) -> None:
    app.command("cache")(cache_command)
