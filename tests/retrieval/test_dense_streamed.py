"""Building a faiss index from a stream of vector chunks (`dense_build.add_streamed`, used by the build and by
benchmarks/dense_scale.py at 21 M vectors), the IVF-PQ settings of `new_faiss_index`, and the benchmark's synthetic
vectors and exact running top-k, on a few thousand seeded vectors (needs only faiss, no encoder)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

faiss = pytest.importorskip("faiss")

from evalsuite.retrieval.dense import read_faiss  # noqa: E402
from evalsuite.retrieval.dense_build import add_streamed, new_faiss_index  # noqa: E402

DIM = 32


@pytest.fixture(autouse=True, scope="module")
def one_faiss_thread():
    """faiss's OpenMP threads spin against each other on a busy machine (training 4,000 vectors took 16 s with two
    threads and 3 s with one, at load 10); these sizes need no parallelism."""
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(threads)


@pytest.fixture(scope="module")
def dense_scale(import_benchmark):
    return import_benchmark("dense_scale")


def unit_vectors(rows: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((rows, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def trained_ivfpq(vectors: np.ndarray):
    index, factory, settings = new_faiss_index("ivfpq", DIM, len(vectors), nlist=16, pq_m=8, nprobe=4)
    index.train(vectors)
    faiss.extract_index_ivf(index).nprobe = 4
    return index, factory, settings


def test_a_streamed_index_equals_one_built_at_once_and_is_written_whole(tmp_path):
    vectors, queries = unit_vectors(3_000, 0), unit_vectors(20, 1)
    at_once, factory, settings = trained_ivfpq(vectors)
    streamed = faiss.clone_index(at_once)
    at_once.add(vectors)
    path = tmp_path / "streamed.index"
    assert add_streamed(streamed, (vectors[i : i + 700] for i in range(0, 3_000, 700)), path) == 3_000
    assert (factory, settings) == ("IVF16,PQ8x8", {"nlist": 16, "pq_m": 8, "pq_bits": 8, "nprobe": 4})
    assert [p.name for p in tmp_path.iterdir()] == ["streamed.index"]  # no temporary file left beside it
    loaded = read_faiss(path, mmap=False)
    faiss.extract_index_ivf(loaded).nprobe = 4
    expected_scores, expected_ids = at_once.search(queries, 10)
    scores, ids = loaded.search(queries, 10)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6)


def test_a_stream_that_fails_midway_leaves_no_index_file(tmp_path):
    vectors = unit_vectors(2_000, 2)
    index, _, _ = trained_ivfpq(vectors)

    def failing() -> Iterator[np.ndarray]:
        yield vectors[:1_000]
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        add_streamed(index, failing(), tmp_path / "half.index")
    assert list(tmp_path.iterdir()) == []


def test_ivfpq_skips_polysemous_training_and_searches_the_same(tmp_path):
    vectors, queries = unit_vectors(4_000, 3), unit_vectors(20, 4)
    ours, factory, _ = trained_ivfpq(vectors)
    assert faiss.downcast_index(ours).do_polysemous_training is False
    default = faiss.index_factory(DIM, factory, faiss.METRIC_INNER_PRODUCT)
    assert faiss.downcast_index(default).do_polysemous_training is True  # faiss's default, which we turn off
    renumbering = faiss.PolysemousTraining()  # faiss's default one takes a minute here; a short one renumbers too
    renumbering.n_iter = 5_000
    renumbering.optimization_type = faiss.PolysemousTraining.OT_ReproduceDistances_affine
    faiss.downcast_index(default).polysemous_training = renumbering
    default.train(vectors)
    faiss.extract_index_ivf(default).nprobe = 4
    for index in (ours, default):
        index.add(vectors)
    # polysemous training only renumbers the PQ centroids: the distances searched are the same
    np.testing.assert_allclose(ours.search(queries, 10)[0], default.search(queries, 10)[0], rtol=1e-5, atol=1e-6)


def test_synthetic_chunks_are_deterministic_unit_vectors(dense_scale):
    vectors = dense_scale.SyntheticEmbeddings(dim=DIM, latent=8, centres=50, seed=5)
    again = dense_scale.SyntheticEmbeddings(dim=DIM, latent=8, centres=50, seed=5)
    chunk = vectors.chunk(3, rows=500)
    np.testing.assert_array_equal(chunk, again.chunk(3, rows=500))
    np.testing.assert_allclose(np.linalg.norm(chunk, axis=1), 1.0, rtol=1e-5)
    assert not np.array_equal(chunk, vectors.chunk(4, rows=500))
    assert not np.isin(vectors.queries(10)[:, 0], chunk[:, 0]).any()  # queries come from their own stream
    # the mixture's structure: each vector is closer to some other vector than independent random directions are
    top1 = np.sort(chunk @ chunk.T, axis=1)[:, -2]
    random_top1 = np.sort(unit_vectors(500, 6) @ unit_vectors(500, 6).T, axis=1)[:, -2]
    assert np.median(top1) > np.median(random_top1) + 0.1


def test_running_top_k_equals_exact_search_over_all_chunks(dense_scale):
    chunks = [unit_vectors(rows, seed) for rows, seed in ((300, 7), (1, 8), (450, 9))]
    queries = unit_vectors(12, 10)
    running = dense_scale.RunningTopK(queries, k=10)
    for chunk in chunks:
        running.add(chunk)
    scores = queries @ np.vstack(chunks).T
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(running.ids, expected)
    np.testing.assert_allclose(running.scores, np.take_along_axis(scores, expected, axis=1), rtol=1e-5)
    assert running.seen == 751
    assert dense_scale.recall_at_k(running.ids, expected) == 1.0
    assert dense_scale.recall_at_k(np.roll(running.ids, 5, axis=1)[:, :5].repeat(2, axis=1), expected) == 0.5
