"""The wiki-18-shaped corpus generator (benchmarks/wiki18_corpus.py): its first 100,000 passages have the real
corpus's vocabulary growth, term frequencies and lengths within stated tolerances (slow); its output is
deterministic, streamed, in wiki-18's format, and readable by evalsuite's corpus reader (fast).

    python -m pytest tests/retrieval/test_wiki18_generator.py -m "" -s
"""

from __future__ import annotations

import importlib.util
import json
import sys
from itertools import islice
from pathlib import Path

import pytest

from evalsuite.retrieval import read_corpus

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def generator():
    spec = importlib.util.spec_from_file_location("wiki18_corpus", REPO / "benchmarks" / "wiki18_corpus.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def test_terms_are_distinct_stem_safe_and_never_stop_words(generator):
    terms = [generator.term(r) for r in range(1, 20_000)]
    assert len(set(terms)) == len(terms)
    assert all(len(t) >= 4 and not set(t) & set("esy") for t in terms)
    assert generator.term(1) == "babi"  # rank 1: base-52 digits (0, 1), syllables "ba" "bi"


def test_passages_are_deterministic_in_wiki18_format_and_readable(generator, tmp_path):
    first = list(generator.passages(500, seed=7))
    again = list(generator.passages(500, seed=7))
    other = list(generator.passages(500, seed=8))
    assert first == again and first != other
    assert [p["id"] for p in first] == [str(i) for i in range(1, 501)]
    # a prefix of a longer corpus is the shorter corpus (the chunks are drawn in the same order)
    assert list(islice(generator.passages(5000, seed=7), 500)) == first

    path = tmp_path / "corpus.jsonl"
    generator.write(path, 500, seed=7)
    assert not (tmp_path / "corpus.jsonl.partial").exists()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert set(rows[0]) == {"id", "contents"}
    assert rows[0]["contents"] == f'"{first[0]["title"]}"\n{first[0]["text"]}'
    docs = list(read_corpus(path))
    assert [d.title for d in docs] == [p["title"] for p in first]
    assert [d.text for d in docs] == [p["text"] for p in first]


def test_vocabulary_follows_the_heaps_law_it_was_given(generator):
    import numpy as np

    stream = generator.TermStream(generator.CorpusShape(heaps_k=10.0, heaps_beta=0.6), np.random.default_rng(0))
    ranks = stream.draw(1_000_000)
    distinct = len(np.unique(ranks))
    assert stream.vocabulary == distinct  # every new term is one new rank, and repeats reuse known ranks
    expected = 10.0 * 1_000_000**0.6  # 39,811
    assert abs(distinct - expected) / expected < 0.02


@pytest.mark.slow
def test_first_100000_passages_match_the_real_corpus(generator, corpus_dir):
    """Tolerances: the Heaps exponent within 0.03 and distinct terms within 10% of the real fit's prediction at the
    generated token count; Zipf's exponent within 0.05; the 5/25/50/75/95th text-length percentiles within 2 words
    and the share of 100-word passages within 0.01 of the real wiki-18 passages; the mean title length within 0.1."""
    real = generator.statistics(generator.real_rows(corpus_dir))
    wiki18 = generator.statistics(generator.real_rows(corpus_dir, "wiki18_sample.jsonl"))
    made = generator.statistics(generator.generated_rows(100_000, seed=0))
    print(f"\nreal: {real}\nwiki-18 sample: {wiki18}\ngenerated: {made}")

    assert made.passages == 100_000
    assert abs(made.heaps_beta - real.heaps_beta) < 0.03
    predicted = real.heaps_k * made.tokens**real.heaps_beta
    assert abs(made.distinct - predicted) / predicted < 0.10
    assert abs(made.zipf_s - real.zipf_s) < 0.05
    for ours, theirs in zip(made.text_length_percentiles, wiki18.text_length_percentiles, strict=True):
        assert abs(ours - theirs) <= 2
    assert abs(made.share_of_100_words - wiki18.share_of_100_words) < 0.01
    assert abs(made.title_length_mean - real.title_length_mean) < 0.1


def test_vocabulary_growth_counts_what_the_text_holds(generator):
    """The text-free count of distinct terms (how the full corpus's vocabulary is printed) against the words of the
    passages themselves, at prefixes inside a chunk, at a chunk's end and past it."""
    marks = [1000, 4096, 5000]
    passages = list(generator.passages(5000, seed=3))
    expected = []
    for mark in marks:
        words = [w for p in passages[:mark] for w in p["title"].split() + p["text"].split()]
        expected.append((mark, len(words), len(set(words))))
    assert generator.vocabulary_growth(5000, 3, marks) == expected
