"""BM25 over an AD-QA corpus, built once into a user cache directory and reused.

Uses bm25s directly (English stop words, Snowball stemmer) behind `build_bm25`/`Bm25Index`, so it can be swapped
for `evalsuite.retrieval` without touching the check.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from evalsuite.tasks.packaged import cache_root


def _tokenize(texts: list[str]) -> list[list[str]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)


class Bm25Index:
    """A loaded bm25s index plus the passage ids in index order."""

    def __init__(self, directory: Path):
        import bm25s

        self.directory = directory
        self.ids: list[str] = json.loads((directory / "ids.json").read_text(encoding="utf-8"))
        self.model = bm25s.BM25.load(str(directory), load_corpus=False, show_progress=False)

    def search_ids(self, queries: list[str], k: int) -> list[list[str]]:
        """Top-k passage ids for each query, best first."""
        docs, _ = self.model.retrieve(_tokenize(queries), k=min(k, len(self.ids)), show_progress=False, n_threads=1)
        return [[self.ids[int(i)] for i in row] for row in docs]


def build_bm25(rows: list[dict], out_dir: Path) -> Path:
    """Index corpus rows (`id`, `contents`) with BM25 into out_dir, atomically (a half-built index never appears)."""
    import bm25s

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    try:
        model = bm25s.BM25()
        model.index(_tokenize([row["contents"] for row in rows]), show_progress=False)
        model.save(str(staging), show_progress=False)
        (staging / "ids.json").write_text(json.dumps([str(row["id"]) for row in rows]), encoding="utf-8")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        try:
            staging.rename(out_dir)
        except OSError:
            # Another process finished the same build first: keep its complete index.
            if not (out_dir / "ids.json").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return out_dir


def cached_bm25(rows: list[dict], corpus_sha256: str, name: str = "adqa") -> Bm25Index:
    """The BM25 index of this corpus from the cache, building it on first use (keyed by the corpus hash)."""
    directory = cache_root() / name / f"bm25-{corpus_sha256[:16]}"
    if not (directory / "ids.json").is_file():
        build_bm25(rows, directory)
    return Bm25Index(directory)
