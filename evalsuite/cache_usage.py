"""What evalsuite keeps on disk, where, and how big: the entries of its cache root and the Hugging Face hub's cache.

Everything evalsuite makes lives under one root, `$EVALSUITE_CACHE_DIR` (else `$XDG_CACHE_HOME/evalsuite`, else
`~/.cache/evalsuite`; `evalsuite.files.cache_root`): downloaded benchmarks, indexes, the demo's model, dequantized
models, score columns, viewer pages. Models that transformers or vLLM download from the Hugging Face hub go to the
hub's own cache (`$HF_HUB_CACHE`, else `$HF_HOME/hub`), shown beside it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def hub_cache() -> Path:
    """Where the Hugging Face clients keep downloaded models, by their own rule (huggingface_hub.constants):
    `$HF_HUB_CACHE`, else the legacy `$HUGGINGFACE_HUB_CACHE`, else `$HF_HOME/hub`, else
    `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`. Read from the environment on each call, and
    without importing huggingface_hub (not installed without the hf, vllm or train extras)."""
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    hub = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE") or os.path.join(home, "hub")
    return Path(os.path.expandvars(os.path.expanduser(hub)))


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


def cache_usage() -> dict[str, Any]:
    """The cache root, the variable that moves it, its size, each entry, and the hub's cache (as `evalsuite cache
    --json` prints it)."""
    from evalsuite.files import CACHE_ENV, cache_root

    root = cache_root()
    entries = cache_entries(root)
    hub = hub_cache()
    return {
        "root": str(root),
        "variable": CACHE_ENV,
        "bytes": sum(entry["bytes"] for entry in entries),
        "entries": entries,
        "hub_cache": {"path": str(hub), "bytes": tree_bytes(hub) if hub.is_dir() else 0},
    }
