"""`evalsuite adqa check`: BM25 on the real shipped corpus, built on first use and cached."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.tasks.adqa.check import RAW_MAX, SUB_MIN, check_release, read_jsonl
from evalsuite.tasks.adqa.index import CorpusSearcher, build_bm25
from evalsuite.tasks.adqa.shipped import adqa_index, adqa_index_dir, shipped_corpus_path, shipped_dir


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("evalsuite-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALSUITE_CACHE_DIR", str(path))
        yield path


def test_bm25_ranks_the_passage_that_names_the_entity_first(tmp_path):
    rows = [
        {"id": "a", "contents": '"Aurora Spring Sale (campaign)"\nThe campaign Aurora Spring Sale uses the bidding strategy Granite Ridge.'},
        {"id": "b", "contents": '"Aurora Spring Sale UK (campaign)"\nThe campaign Aurora Spring Sale UK uses the bidding strategy Silver Cove.'},
        {"id": "c", "contents": '"Bid caps"\nA bid cap is the highest bid a bidding strategy may place.'},
    ]
    index = CorpusSearcher(build_bm25(rows, tmp_path / "idx"))
    assert index.search_ids(["bid cap of a bidding strategy"], 1) == [["c"]]
    assert index.search_ids(["Which bidding strategy does the campaign Aurora Spring Sale UK use?"], 2)[0][0] == "b"


def test_index_is_built_once_and_reused(cache_dir):
    first = adqa_index_dir()
    assert first.is_relative_to(cache_dir) and (first / "index.json").is_file()
    stamp = (first / "index.json").stat().st_mtime_ns
    assert adqa_index_dir() == first and (first / "index.json").stat().st_mtime_ns == stamp


def test_shipped_copy_is_multi_hop_within_the_bounds(cache_dir):
    corpus, _ = read_jsonl(shipped_corpus_path())
    questions, _ = read_jsonl(shipped_dir() / "test.jsonl.gz")
    report = check_release(questions, corpus, adqa_index())
    assert report.questions == 1000
    assert report.raw_all < RAW_MAX
    assert report.sub_all > SUB_MIN
    assert report.single_passage == 0.0
    assert report.structural_errors == []
    assert report.passed


def test_check_command_prints_the_figures_and_passes(cache_dir):
    result = CliRunner().invoke(app, ["adqa", "check"])
    assert result.exit_code == 0, result.output
    assert "raw question, all supporting passages in top-3" in result.output
    assert "answerable from a single passage:                    0.000" in result.output
    assert result.output.strip().endswith("PASS")


def test_check_command_fails_on_a_release_whose_questions_are_single_hop(tmp_path, cache_dir):
    # A one-hop release (each question names the passage's entity and attribute) must be flagged, not passed.
    corpus, _ = read_jsonl(shipped_corpus_path())
    questions, _ = read_jsonl(shipped_dir() / "test.jsonl.gz")
    import json

    bad = []
    for row in questions[:50]:
        hop = row["metadata"]["decomposition"][-1]
        meta = dict(row["metadata"], decomposition=[hop], supporting_passage_ids=[hop["passage_id"]], hops=1, question_entities=[hop["entity"]])
        bad.append({"id": row["id"], "question": hop["question"], "golden_answers": [hop["answer"]], "metadata": meta})
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bad))
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    result = CliRunner().invoke(app, ["adqa", "check", str(tmp_path)])
    assert result.exit_code == 1
    assert "OUT OF BOUNDS" in result.output and result.output.strip().endswith("FAIL")
