"""The index manifest: what it records, and loading refuses an index whose corpus or files changed."""

from __future__ import annotations

import json
import shutil

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval import IndexFormatError, IndexMismatchError, build_index, load_retriever


@pytest.fixture
def built(tmp_path, small_corpus):
    corpus = tmp_path / "corpus.jsonl"
    shutil.copyfile(small_corpus, corpus)
    return corpus, build_index(corpus, tmp_path / "idx")


def test_index_json_records_corpus_retriever_parameters_and_version(built):
    corpus, index_dir = built
    manifest = json.loads((index_dir / "index.json").read_text())
    assert manifest["corpus"]["path"] == str(corpus.resolve())
    assert manifest["corpus"]["sha256"] == manifest["corpus_hash"]
    assert manifest["retriever"] == "bm25"
    assert {"k1", "b", "stemmer", "stopwords", "tokenizer"} <= set(manifest["params"])
    assert manifest["evalsuite_version"] and manifest["created_at"]
    assert "docstore.offsets.npy" in manifest["files"]


def test_a_changed_corpus_is_a_mismatch_error(built):
    corpus, index_dir = built
    data = bytearray(corpus.read_bytes())
    position = data.index(b"Corliss")
    data[position : position + 7] = b"Corlisz"  # same size, different content
    corpus.write_bytes(bytes(data))
    with pytest.raises(IndexMismatchError, match="the corpus changed after indexing"):
        load_retriever(index_dir)


def test_a_corpus_of_another_size_is_a_mismatch_error(built):
    corpus, index_dir = built
    with corpus.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "extra", "contents": '"X"\nan added passage'}) + "\n")
    with pytest.raises(IndexMismatchError, match="this is not the indexed corpus"):
        load_retriever(index_dir)


def test_a_missing_corpus_says_how_to_relocate_it(built, tmp_path):
    corpus, index_dir = built
    moved = tmp_path / "moved.jsonl"
    corpus.rename(moved)
    with pytest.raises(IndexMismatchError) as caught:
        load_retriever(index_dir)
    assert "does not exist" in str(caught.value) and "corpus=" in str(caught.value)
    assert load_retriever(index_dir, corpus=moved).search(["Shirley Temple"], 1)[0][0].title == "Shirley Temple"


def test_relocating_to_a_different_file_is_refused(built, tmp_path):
    corpus, index_dir = built
    other = tmp_path / "other.jsonl"
    data = corpus.read_bytes()
    other.write_bytes(data[:-2] + b"x\n")  # same size, one byte differs
    with pytest.raises(IndexMismatchError, match="sha256"):
        load_retriever(index_dir, corpus=other)


def test_an_edited_manifest_is_detected(built):
    _, index_dir = built
    path = index_dir / "index.json"
    manifest = json.loads(path.read_text())
    manifest["params"]["k1"] = 0.9
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match="edited after the build"):
        load_retriever(index_dir)


def test_a_changed_index_file_is_detected(built):
    _, index_dir = built
    (index_dir / "docstore.offsets.npy").write_bytes(b"\x00" * 10)
    with pytest.raises(IndexMismatchError, match="index file changed"):
        load_retriever(index_dir)


def test_a_directory_without_manifest_is_not_an_index(tmp_path):
    (tmp_path / "half").mkdir()
    with pytest.raises(IndexFormatError, match="has no index.json"):
        load_retriever(tmp_path / "half")
    with pytest.raises(IndexFormatError, match="does not exist"):
        load_retriever(tmp_path / "absent")


def test_building_over_an_existing_index_needs_overwrite(built):
    corpus, index_dir = built
    with pytest.raises(EvalsuiteError, match="already holds an index"):
        build_index(corpus, index_dir)
    assert build_index(corpus, index_dir, overwrite=True) == index_dir


def test_unknown_retriever_and_misplaced_encoder_are_errors(built, tmp_path):
    corpus, _ = built
    with pytest.raises(EvalsuiteError, match="unknown retriever"):
        build_index(corpus, tmp_path / "x", retriever="splade")
    with pytest.raises(EvalsuiteError, match="only used by the dense retriever"):
        build_index(corpus, tmp_path / "y", encoder="all-MiniLM-L6-v2")
    with pytest.raises(EvalsuiteError, match="needs an encoder"):
        build_index(corpus, tmp_path / "z", retriever="dense")


def test_index_json_carries_the_shared_provenance_and_an_older_one_still_loads(built):
    from evalsuite.provenance import CorpusRecord, Provenance

    _, index_dir = built
    path = index_dir / "index.json"
    manifest = json.loads(path.read_text())
    assert set(Provenance.model_fields) <= set(manifest)
    assert CorpusRecord.model_validate(manifest["corpus"]).sha256 == manifest["corpus_hash"]
    # What builds wrote before the shared model: no git_dirty, no library versions, hardware without accelerators.
    for key in ("git_dirty", "versions"):
        del manifest[key]
    del manifest["hardware"]["accelerators"]
    path.write_text(json.dumps(manifest))
    retriever = load_retriever(index_dir)
    assert Provenance.model_validate(retriever.info()).git_dirty is None
    assert retriever.search(["Corliss"], 1)[0]
