"""The BM25 index of an AD-QA corpus: an ordinary `evalsuite.retrieval` index, built once into the user cache.

Because it is a normal index directory, `evalsuite run --retriever <dir>`, `serve-retriever` and `load_retriever`
all take it; the multi-hop check only needs the ranked passage ids.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from evalsuite.files import cache_root


class CorpusSearcher:
    """Ranked passage ids over a loaded retrieval index (what `evalsuite adqa check` needs)."""

    def __init__(self, directory: Path):
        from evalsuite.retrieval import load_retriever

        self.directory = directory
        self.retriever = load_retriever(directory)

    def search_ids(self, queries: list[str], k: int) -> list[list[str]]:
        """Top-k passage ids for each query, best first."""
        return [[hit.doc_id for hit in hits] for hits in self.retriever.search(queries, k)]


def build_bm25(rows: list[dict], out_dir: Path) -> Path:
    """Index corpus rows (`id`, `contents`) with BM25 into out_dir, atomically (a half-built index never appears)."""
    from evalsuite.retrieval import build_index

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # The corpus file stays beside the index: the index manifest records its path and hash.
    corpus = out_dir.parent / f"{out_dir.name}.corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": str(r["id"]), "contents": r["contents"]}) + "\n" for r in rows), encoding="utf-8"
    )
    staging = Path(tempfile.mkdtemp(prefix=out_dir.name + ".", dir=out_dir.parent))
    try:
        build_index(corpus, staging, overwrite=True)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        try:
            staging.rename(out_dir)
        except OSError:
            # Another process finished the same build first: keep its complete index.
            if not (out_dir / "index.json").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return out_dir


def cached_bm25(rows: list[dict], corpus_sha256: str, name: str = "adqa") -> CorpusSearcher:
    """The BM25 index of this corpus from the cache, building it on first use (keyed by the corpus hash)."""
    directory = cache_root() / name / f"bm25-{corpus_sha256[:16]}"
    if not (directory / "index.json").is_file():
        build_bm25(rows, directory)
    return CorpusSearcher(directory)
