"""The persistent retrieval cache: keyed by (index hash, query, k); a rerun makes no retrieval calls."""

from __future__ import annotations

import pytest

from evalsuite.retrieval import CachedRetriever, Hit, load_retriever


class CountingRetriever:
    """A fake retriever that answers deterministically and counts its calls."""

    def __init__(self, index_hash: str = "h1"):
        self.index_hash = index_hash
        self.calls: list[list[str]] = []

    def info(self):
        return {"index_hash": self.index_hash, "corpus_hash": "c"}

    def search(self, queries, k):
        self.calls.append(list(queries))
        return [[Hit(doc_id=f"{q}-{r}", contents=f'"{q}"\nrank {r}', score=1.0 / r, rank=r) for r in range(1, k + 1)] for q in queries]


def test_second_run_makes_no_retrieval_calls(tmp_path):
    queries = ["who wrote big fish", "capital of france", "apollo 11 president"]
    inner = CountingRetriever()
    first = CachedRetriever(inner, tmp_path / "cache.sqlite")
    expected = first.search(queries, 3)
    assert len(inner.calls) == 1 and first.underlying_calls == 1 and first.underlying_queries == 3
    first.close()

    rerun_inner = CountingRetriever()
    rerun = CachedRetriever(rerun_inner, tmp_path / "cache.sqlite")  # a new process would open the same file
    assert rerun.search(queries, 3) == expected
    assert rerun_inner.calls == [] and rerun.underlying_calls == 0
    assert rerun.stats() == {"underlying_calls": 0, "underlying_queries": 0, "cache_hits": 3, "cache_misses": 0}


def test_only_missing_queries_are_sent_deduplicated_in_one_call(tmp_path):
    inner = CountingRetriever()
    cached = CachedRetriever(inner, tmp_path / "c.sqlite")
    cached.search(["a", "b"], 2)
    results = cached.search(["b", "c", "c", "a", "d"], 2)
    assert inner.calls == [["a", "b"], ["c", "d"]]
    assert [hits[0].doc_id for hits in results] == ["b-1", "c-1", "c-1", "a-1", "d-1"]


def test_k_and_index_hash_are_part_of_the_key(tmp_path):
    path = tmp_path / "c.sqlite"
    inner = CountingRetriever("index-A")
    cached = CachedRetriever(inner, path)
    cached.search(["q"], 3)
    cached.search(["q"], 5)
    assert len(inner.calls) == 2
    other_index = CountingRetriever("index-B")
    CachedRetriever(other_index, path).search(["q"], 3)
    assert len(other_index.calls) == 1


def test_cached_hits_are_identical_to_fresh_ones_for_a_real_index(tmp_path, small_bm25):
    retriever = load_retriever(small_bm25)
    queries = ["Shirley Temple", "Corliss Archer radio program", "unmatched zzqx"]
    fresh = retriever.search(queries, 3)
    CachedRetriever(retriever, tmp_path / "c.sqlite").search(queries, 3)
    assert CachedRetriever(retriever, tmp_path / "c.sqlite").search(queries, 3) == fresh


def test_cache_works_over_http_without_requests_on_rerun(tmp_path, server):
    from evalsuite.retrieval import HttpRetriever

    queries = ["Kiss and Tell 1945 film", "Meet Corliss Archer"]
    client = HttpRetriever(server.url)
    first = CachedRetriever(client, tmp_path / "http.sqlite").search(queries, 3)
    sent = client.requests_sent
    again_client = HttpRetriever(server.url)
    again = CachedRetriever(again_client, tmp_path / "http.sqlite")
    assert again.search(queries, 3) == first
    assert again.underlying_calls == 0
    assert again_client.requests_sent == 1  # only GET /info, for the index hash; no /retrieve
    assert sent >= 2


def test_odd_unicode_queries_are_cached(tmp_path):
    inner = CountingRetriever()
    cached = CachedRetriever(inner, tmp_path / "c.sqlite")
    queries = ["\ud800 lone surrogate", "emoji 🙂", "nul \x00 char"]
    first = cached.search(queries, 1)
    assert CachedRetriever(CountingRetriever(), tmp_path / "c.sqlite").search(queries, 1) == first


@pytest.mark.parametrize("bad", [[], None])
def test_empty_batches_make_no_calls(tmp_path, bad):
    inner = CountingRetriever()
    cached = CachedRetriever(inner, tmp_path / "c.sqlite")
    assert cached.search(bad or [], 3) == []
    assert inner.calls == []
