"""BM25 (bm25s): exact scores, ranking rules, recorded settings, and the real 27,761-passage index."""

from __future__ import annotations

import json
import math

import pytest

from evalsuite.retrieval import BM25Retriever, Hit, Retriever, build_index, load_retriever
from evalsuite.retrieval.evaluate import evaluate_supporting, supporting_titles


def corpus(tmp_path, contents: list[str]):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "contents": c}) + "\n" for i, c in enumerate(contents)), encoding="utf-8")
    return path


def lucene_bm25(tf: int, dl: int, avgdl: float, df: int, n: int, k1: float = 1.5, b: float = 0.75) -> float:
    """Lucene's BM25 (bm25s method="lucene"): idf = ln(1 + (N - df + .5)/(df + .5)), tf / (tf + k1(1 - b + b dl/avgdl))."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


def test_scores_are_lucene_bm25_computed_by_hand(tmp_path):
    path = corpus(tmp_path, ["apple banana", "apple apple cherry", "cherry date"])
    retriever = load_retriever(build_index(path, tmp_path / "idx"))
    (hits,) = retriever.search(["apple"], k=3)
    avgdl = 7 / 3  # token counts 2, 3, 2
    assert [h.doc_id for h in hits] == ["d1", "d0"]  # d2 has no query term: not returned
    assert hits[0].score == pytest.approx(lucene_bm25(tf=2, dl=3, avgdl=avgdl, df=2, n=3), rel=1e-5)
    assert hits[1].score == pytest.approx(lucene_bm25(tf=1, dl=2, avgdl=avgdl, df=2, n=3), rel=1e-5)
    assert [h.rank for h in hits] == [1, 2]


def test_k1_and_b_are_parameters(tmp_path):
    path = corpus(tmp_path, ["apple banana", "apple apple cherry", "cherry date"])
    retriever = load_retriever(build_index(path, tmp_path / "idx", k1=0.9, b=0.4))
    (hits,) = retriever.search(["apple"], k=1)
    assert hits[0].score == pytest.approx(lucene_bm25(tf=2, dl=3, avgdl=7 / 3, df=2, n=3, k1=0.9, b=0.4), rel=1e-5)
    assert retriever.info()["params"]["k1"] == 0.9 and retriever.info()["params"]["b"] == 0.4


def test_queries_are_stemmed_lowercased_and_stop_words_dropped_like_passages(tmp_path):
    path = corpus(tmp_path, ['"Films"\nThe films of the year', '"Music"\nSongs and albums'])
    retriever = load_retriever(build_index(path, tmp_path / "idx"))
    assert [h.doc_id for h in retriever.search(["FILM"], 3)[0]] == ["d0"]
    assert retriever.search(["the of and"], 3) == [[]]  # only stop words
    assert retriever.search(["", "zzqx unseenword"], 3) == [[], []]  # nothing to match


def test_search_is_batched_and_keeps_query_order(small_bm25):
    retriever = load_retriever(small_bm25)
    queries = ["Shirley Temple actress", "Kiss and Tell 1945 film", "Meet Corliss Archer radio"]
    batched = retriever.search(queries, 3)
    assert batched == [retriever.search([q], 3)[0] for q in queries]
    for hits in batched:
        assert [h.rank for h in hits] == [1, 2, 3]
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all(isinstance(h, Hit) for h in hits)


def test_k_larger_than_the_corpus_returns_every_matching_passage(tmp_path):
    path = corpus(tmp_path, ["apple", "apple pie", "banana"])
    hits = load_retriever(build_index(path, tmp_path / "idx")).search(["apple"], k=50)[0]
    assert sorted(h.doc_id for h in hits) == ["d0", "d1"]


def test_ties_are_broken_by_corpus_order(tmp_path):
    path = corpus(tmp_path, ["other words", "apple", "zebra", "apple", "apple"])
    hits = load_retriever(build_index(path, tmp_path / "idx")).search(["apple"], k=2)[0]
    assert [h.doc_id for h in hits] == ["d1", "d3"]
    assert hits[0].score == hits[1].score


@pytest.mark.parametrize("seed", range(20))
def test_every_way_of_taking_the_top_k_gives_the_ranking_of_every_passage(seed):
    """What search ranks (the maximum k times; beyond ARGMAX_K, the rows holding a query term, one list per term)
    against every row sorted by score, then by row."""
    import numpy as np

    from evalsuite.retrieval.bm25 import top_k_by_argmax, top_k_by_partition, top_k_by_postings, top_k_rows

    rng = np.random.default_rng(seed)
    rows, terms, k = 1000, int(rng.integers(1, 5)), int(rng.integers(1, 40))
    postings = [np.sort(rng.choice(rows, int(rng.integers(0, 300)), replace=False)) for _ in range(terms)]
    scores = np.zeros(rows, dtype=np.float32)
    for posting in postings:
        # few distinct values, so ties at the k-th score are common; a few negative ones (Robertson's idf can be)
        scores[posting] += rng.choice(np.array([-0.5, 0.25, 0.5, 1.0], dtype=np.float32), posting.shape[0])
    before = scores.copy()
    expected = np.lexsort((np.arange(rows), -scores))[:k]
    expected = expected[scores[expected] > 0].tolist()  # what search keeps: the rows that score above 0

    def kept(top: np.ndarray) -> list[int]:
        return top[scores[top] > 0].tolist()

    assert kept(top_k_by_argmax(scores, k)) == expected
    assert np.array_equal(scores, before)  # changed while scanning, then restored
    assert kept(top_k_by_partition(scores, k)) == expected
    assert kept(top_k_by_postings(scores, k, np.concatenate(postings), repeats=terms)) == expected
    assert kept(top_k_rows(scores, k, np.concatenate(postings), repeats=terms)) == expected


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_k_must_be_a_positive_integer(small_bm25, k):
    with pytest.raises(ValueError):
        load_retriever(small_bm25).search(["x"], k)


def test_manifest_records_text_processing_and_bm25_parameters(small_bm25, small_corpus):
    info = load_retriever(small_bm25).info()
    assert info["retriever"] == "bm25"
    params = info["params"]
    assert (params["k1"], params["b"], params["method"]) == (1.5, 0.75, "lucene")
    assert params["stemmer"] == "english" and params["stopwords"] == "en" and params["num_stopwords"] == 33
    assert params["tokenizer"] == {"lower": True, "token_pattern": r"(?u)\b\w\w+\b", "field": "contents"}
    assert params["bm25s_version"] and params["stemmer_library"].startswith("PyStemmer")
    assert info["corpus"]["num_documents"] == 300
    assert info["corpus"]["path"] == str(small_corpus.resolve())
    assert len(info["index_hash"]) == 64 and len(info["corpus_hash"]) == 64
    assert info["evalsuite_version"]


def test_index_hash_is_reproducible(tmp_path, small_corpus, small_bm25):
    again = build_index(small_corpus, tmp_path / "again")
    assert load_retriever(again).info()["index_hash"] == load_retriever(small_bm25).info()["index_hash"]
    other = build_index(small_corpus, tmp_path / "other", k1=0.9, b=0.4)
    assert load_retriever(other).info()["index_hash"] != load_retriever(small_bm25).info()["index_hash"]


def test_implements_the_retriever_protocol(small_bm25):
    retriever = load_retriever(small_bm25)
    assert isinstance(retriever, BM25Retriever) and isinstance(retriever, Retriever)


def test_real_corpus_index_finds_supporting_paragraphs(full_bm25_retriever, hotpot_rows):
    assert full_bm25_retriever.info()["corpus"]["num_documents"] == 27761
    rows = hotpot_rows[:200]
    results = full_bm25_retriever.search([row["question"] for row in rows], 3)
    scores = evaluate_supporting(results, [supporting_titles(row["metadata"]) for row in rows], k=3)
    # bm25s on these passages: recall@3 about 0.64 and all-supporting@3 about 0.36 (1,000 questions, measured here)
    assert 0.5 < scores.recall < 0.8
    assert 0.2 < scores.all_supporting < 0.55
    (hits,) = full_bm25_retriever.search(["Kiss and Tell 1945 film Shirley Temple Corliss Archer"], 3)
    assert hits[0].title == "Kiss and Tell (1945 film)"
