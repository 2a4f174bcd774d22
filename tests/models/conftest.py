"""Fixtures shared by the backend tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def wiki_bm25(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> Path:
    """A BM25 index of ../shared/data/corpus/wiki18_sample.jsonl (10,813 passages), built once per session."""
    from evalsuite.retrieval import build_index

    return build_index(shared_data / "corpus" / "wiki18_sample.jsonl", tmp_path_factory.mktemp("wiki18") / "bm25")
