"""Dense search: encode the queries (with the prefix the index was built with) and search the faiss index.

An index directory holds the faiss index (one file, or several shards searched together), the corpus offsets and
`index.json`; `evalsuite.retrieval.dense_build` writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.errors import require
from evalsuite.retrieval.manifest import IndexMismatchError, SavedIndexRetriever
from evalsuite.retrieval.types import Hit, check_k

FAISS_FILE = "faiss.index"


def load_faiss():
    return require("faiss", "dense", "dense retrieval")


def read_faiss(path: Path, mmap: bool) -> Any:
    """A faiss index from disk; with `mmap`, flat and SQ vector
    codes stay in the file, shared through the page cache."""
    faiss = load_faiss()
    # IO_FLAG_MMAP_IFC maps the codes of flat and scalar-quantized storage; faiss's IVF mmap hook refuses some
    # files ("mmap only supported for File objects"), so IVF lists are read into memory.
    return faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mmap else 0)


def shard_names(shards: int) -> list[str]:
    return [FAISS_FILE] if shards == 1 else [f"faiss-{i:05d}.index" for i in range(shards)]


def _apply_search_params(index: Any, params: dict[str, Any]) -> None:
    faiss = load_faiss()
    if params.get("ef_search") is not None:
        try:
            faiss.downcast_index(index).hnsw.efSearch = int(params["ef_search"])
        except AttributeError:
            pass
    if params.get("nprobe") is not None:
        try:
            faiss.extract_index_ivf(index).nprobe = int(params["nprobe"])
        except (RuntimeError, AttributeError):
            pass


class DenseRetriever(SavedIndexRetriever):
    """Batched dense search: encode queries (with the recorded prefix), search faiss, read passages from the corpus."""

    kind = "dense"

    def __init__(
        self,
        index_dir: str | Path,
        manifest: dict[str, Any],
        *,
        corpus: str | Path | None = None,
        verify: str = "auto",
        device: str | None = None,
        encoder: str | None = None,
        batch_size: int = 64,
        mmap: bool = False,
        faiss_gpu: bool = False,
        ef_search: int | None = None,
        nprobe: int | None = None,
    ):
        from evalsuite.retrieval.encoders import Encoder

        faiss = load_faiss()
        super().__init__(index_dir, manifest, corpus, verify)
        params = manifest["params"]
        search_params = {k: params["faiss"].get(k) for k in ("ef_search", "nprobe")}
        if ef_search is not None:
            search_params["ef_search"] = ef_search
        if nprobe is not None:
            search_params["nprobe"] = nprobe
        self._parts = [
            read_faiss(self.index_dir / name, mmap) for name in shard_names(int(params["faiss"].get("shards", 1)))
        ]
        for part in self._parts:
            _apply_search_params(part, search_params)
        if len(self._parts) == 1:
            self.index = self._parts[0]
        else:  # searched in parallel, results merged; ids run on from one shard to the next
            self.index = faiss.IndexShards(self._parts[0].d, True, True)
            for part in self._parts:
                self.index.add_shard(part)
        self.memory_mapped = mmap
        if self.index.ntotal != len(self.docstore):
            raise IndexMismatchError(
                f"{self.index_dir}: faiss holds {self.index.ntotal} vectors, the corpus {len(self.docstore)} documents"
            )
        if faiss_gpu and hasattr(faiss, "get_num_gpus") and faiss.get_num_gpus() > 0:
            options = faiss.GpuMultipleClonerOptions()
            options.shard = True
            self.index = faiss.index_cpu_to_all_gpus(self.index, co=options)
        recorded = params["encoder"]
        # The recorded local model directory when it is still there, else the recorded name (hub, or a package alias).
        source = encoder or (recorded["source"] if Path(recorded["source"]).is_dir() else recorded["name"])
        self.encoder = Encoder(
            source,
            device=device,
            query_prefix=recorded["query_prefix"],
            passage_prefix=recorded["passage_prefix"],
            max_length=recorded.get("max_length"),
            normalize=recorded.get("normalize", True),
            fingerprint=False,
        )
        if self.encoder.dim != self.index.d:
            raise IndexMismatchError(
                f"encoder {self.encoder.name!r} gives {self.encoder.dim}-dimensional "
                f"vectors but the faiss index holds {self.index.d}",
                hint="load the index with the encoder it was built with",
            )
        self.batch_size = batch_size
        self.higher_is_better = params["faiss"].get("metric", "inner_product") != "l2"

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-`k` passages per query by inner product of normalized embeddings (cosine similarity)."""
        kk = min(check_k(k), len(self.docstore))
        if not queries:
            return []
        parts = []
        for start in range(0, len(queries), self.batch_size):
            with self._lock:  # one encoder batch at a time, so a large request does not hold the lock throughout
                vectors = self.encoder.encode_queries(
                    list(queries[start : start + self.batch_size]), batch_size=self.batch_size
                )
                parts.append(self.index.search(vectors, kk))
        scores = np.concatenate([p[0] for p in parts])
        rows = np.concatenate([p[1] for p in parts])
        results: list[list[Hit]] = []
        for score_row, id_row in zip(scores, rows):
            hits: list[Hit] = []
            for score, row in zip(score_row, id_row):
                if row < 0:
                    continue
                doc = self.docstore.document(int(row))
                hits.append(Hit(doc_id=doc.id, contents=doc.contents, score=float(score), rank=len(hits) + 1))
            results.append(hits)
        return results
