"""The versioned AD-QA-style release shipped inside the package, and its BM25 index (built on first use, cached)."""

from __future__ import annotations

from pathlib import Path

from evalsuite.tasks.adqa.check import read_jsonl
from evalsuite.tasks.adqa.index import CorpusSearcher, cached_bm25
from evalsuite.tasks.packaged import packaged_dir, read_manifest, unpacked_file

PACKAGED_DATA = "adqa/v1"


def shipped_dir() -> Path:
    """evalsuite/tasks/adqa/data/v1: test/train/corpus .jsonl.gz and MANIFEST.json."""
    return packaged_dir(PACKAGED_DATA)


def shipped_manifest() -> dict:
    return read_manifest(PACKAGED_DATA)


def shipped_corpus_path() -> Path:
    """The shipped corpus as plain JSONL (wiki-18 format), unpacked into the cache and checked by hash."""
    path = unpacked_file(PACKAGED_DATA, "corpus.jsonl.gz")
    assert path is not None, "the shipped manifest lists no corpus"
    return path


def adqa_index() -> CorpusSearcher:
    """The BM25 index of the shipped corpus, built into the user cache on first use and reused afterwards."""
    corpus_path = shipped_corpus_path()
    rows, digest = read_jsonl(corpus_path)
    return cached_bm25(rows, digest, name="adqa")


def adqa_index_dir() -> Path:
    """Directory of the cached BM25 index of the shipped corpus (built on first use)."""
    return adqa_index().directory
