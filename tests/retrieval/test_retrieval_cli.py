"""The `evalsuite index build|import|info|search` commands."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.retrieval import IndexMismatchError, load_retriever

runner = CliRunner()


def test_index_build_bm25_writes_a_loadable_index(tmp_path, small_corpus):
    result = runner.invoke(app, ["index", "build", "--corpus", str(small_corpus), "--retriever", "bm25", "-o", str(tmp_path / "idx"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "built bm25 index of 300 documents" in result.output
    manifest = json.loads((tmp_path / "idx" / "index.json").read_text())
    assert manifest["corpus"]["num_documents"] == 300
    assert load_retriever(tmp_path / "idx").search(["Shirley Temple"], 1)[0][0].title == "Shirley Temple"


def test_index_build_passes_bm25_parameters(tmp_path, small_corpus):
    result = runner.invoke(app, ["index", "build", "--corpus", str(small_corpus), "-o", str(tmp_path / "idx"), "--k1", "0.9", "--b", "0.4", "--no-progress"])
    assert result.exit_code == 0, result.output
    params = json.loads((tmp_path / "idx" / "index.json").read_text())["params"]
    assert (params["k1"], params["b"]) == (0.9, 0.4)


def test_index_info_and_search(tmp_path, small_bm25):
    info = runner.invoke(app, ["index", "info", str(small_bm25)])
    assert info.exit_code == 0 and json.loads(info.output)["retriever"] == "bm25"
    search = runner.invoke(app, ["index", "search", str(small_bm25), "Kiss and Tell 1945", "-k", "2"])
    assert search.exit_code == 0
    assert "# Kiss and Tell 1945" in search.output and "1. [mh6]" in search.output


def test_index_build_reports_a_mismatch_on_load(tmp_path, small_corpus):
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(small_corpus.read_bytes())
    assert runner.invoke(app, ["index", "build", "--corpus", str(corpus), "-o", str(tmp_path / "idx"), "--no-progress"]).exit_code == 0
    corpus.write_bytes(corpus.read_bytes() + b"\n")
    result = runner.invoke(app, ["index", "search", str(tmp_path / "idx"), "anything"])
    assert isinstance(result.exception, IndexMismatchError)


@pytest.mark.dense
def test_index_import_wraps_a_faiss_file(tmp_path, small_corpus):
    faiss = pytest.importorskip("faiss")
    import numpy as np

    index = faiss.IndexFlatIP(384)
    index.add(np.random.default_rng(1).standard_normal((300, 384)).astype(np.float32))
    faiss.write_index(index, str(tmp_path / "e5_Flat.index"))
    result = runner.invoke(app, ["index", "import", "--faiss", str(tmp_path / "e5_Flat.index"), "--corpus", str(small_corpus), "--encoder", "intfloat/e5-base-v2", "-o", str(tmp_path / "imp")])
    assert result.exit_code == 0, result.output
    assert "imported 300 vectors for 300 documents" in result.output
    manifest = json.loads((tmp_path / "imp" / "index.json").read_text())
    assert manifest["params"]["encoder"]["name"] == "intfloat/e5-base-v2"
    assert manifest["params"]["encoder"]["query_prefix"] == "query: "
