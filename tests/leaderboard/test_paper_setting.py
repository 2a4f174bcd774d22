"""Each verified entry and each run checked against its method's paper evaluation setting (issue 18 item 5)."""

from __future__ import annotations

from pathlib import Path

from leaderboard_support import INSTRUCT_SEED1, cli

from evalsuite.agent.papers import manifest_paper_check, run_differences
from evalsuite.leaderboard import (
    SubmissionInfo,
    add_submission,
    pack_submission,
    verify_submission,
)
from evalsuite.leaderboard.site import build_site
from evalsuite.leaderboard.submission import RunRef, Setting
from evalsuite.leaderboard.verification.declared_setting import paper_setting_check
from evalsuite.runs import Manifest, RunDirectory
from tests.conftest import requires_extra

# Search-R1's paper setting on Bamboogle: the test split, E5 over wiki-18, top-3, 4 turns.
PAPER = Setting(corpus="wiki-18", retriever="e5", topk=3, max_turns=4)
TOP5 = Setting(corpus="wiki-18", retriever="e5", topk=5, max_turns=4)


def _submission(scored_runs: Path, out: Path, name: str, setting: Setting, method: str = "Search-R1") -> Path:
    info = SubmissionInfo(name=name, method=method, model={"name": "Qwen2.5-3B instruct"}, setting=setting)
    return pack_submission([scored_runs / INSTRUCT_SEED1], out / name.replace(" ", "-"), info)


def test_an_entry_in_the_paper_setting_says_so_in_the_report(scored_runs, benchmarks_dir, tmp_path):
    report = verify_submission(_submission(scored_runs, tmp_path, "paper setting run", PAPER), benchmarks_dir)
    assert report.accepted
    # The runs are imports, which record none of the setting: the match rests on the declaration and says so.
    assert report.to_dict()["paper_setting"] == {"method": "search-r1", "matches": True, "differences": [],
                                                 "declared_only": ["corpus", "retriever", "topk", "max_turns"]}
    assert report.paper_setting.summary() == ("paper setting as declared (not recorded by the runs: corpus, retriever, "
                                              "topk, max_turns)")


def test_an_entry_at_top_5_differs_in_topk(scored_runs, benchmarks_dir, tmp_path):
    report = verify_submission(_submission(scored_runs, tmp_path, "top5 run", TOP5), benchmarks_dir)
    assert report.accepted  # a different setting is not a problem: the entry is only labelled
    assert report.to_dict()["paper_setting"] == {"method": "search-r1", "matches": False, "differences": ["topk: 5 (paper 3)"],
                                                 "declared_only": ["corpus", "retriever", "topk", "max_turns"]}
    assert report.paper_setting.summary() == "differs from the paper's evaluation setting in: topk: 5 (paper 3)"


def test_undeclared_turns_and_another_retriever_and_corpus_are_differences(scored_runs, benchmarks_dir, tmp_path):
    setting = Setting(corpus="adqa", retriever="bm25", topk=3)
    report = verify_submission(_submission(scored_runs, tmp_path, "bm25 run", setting), benchmarks_dir)
    assert report.accepted
    assert report.paper_setting.differences == ("retriever: bm25 (paper e5)", "corpus: adqa (paper wiki-18)",
                                                "max_turns: not declared (paper 4)")


def test_a_method_without_a_paper_setting_says_nothing():
    runs = [RunRef(name=INSTRUCT_SEED1, tasks={"bamboogle": "test"})]
    for method in ("Naive RAG", "direct", "r1-searcher"):
        info = SubmissionInfo(name="baseline", method=method, model={"name": "Qwen2.5-3B instruct"}, setting=PAPER)
        assert paper_setting_check(info, runs, {}) is None
    assert paper_setting_check(SubmissionInfo(name="x", method="Search_R1", model={"name": "m"}, setting=PAPER), runs, {}).matches


@requires_extra("site", "jinja2")  # the site's templates
def test_the_site_shows_the_check_on_entry_pages_and_in_the_standings(scored_runs, benchmarks_dir, tmp_path):
    board = tmp_path / "leaderboard"
    for name, setting in (("paper setting run", PAPER), ("top5 run", TOP5)):
        add_submission(_submission(scored_runs, tmp_path, name, setting), board, data_dir=benchmarks_dir)
    site = tmp_path / "site"
    build_site(board, site, data_dir=benchmarks_dir)
    matching = (site / "entries" / "paper-setting-run" / "index.html").read_text()
    differing = (site / "entries" / "top5-run" / "index.html").read_text()
    # a match is always "as claimed" (issue 37): the setting is the submitter's word, here not even in a manifest
    assert ('<dd id="paper-setting">paper setting as claimed (declared; not stated by the manifests: corpus, retriever, '
            'topk, max_turns)</dd>') in matching
    assert "differs from the paper&#39;s evaluation setting in: topk: 5 (paper 3)</dd>" in differing
    index = (site / "index.html").read_text()
    assert ('<span class="sub paper-setting matches">paper setting as claimed (declared; not stated by the manifests: '
            'corpus, retriever, topk, max_turns)</span>') in index
    assert '<span class="sub paper-setting">differs from the paper&#39;s evaluation setting in: topk: 5 (paper 3)</span>' in index


def test_splits_subset_and_retriever_extend_run_differences():
    assert run_differences("search-p1", ["adqa", "hotpotqa"], 3, 4, splits={"adqa": "test", "hotpotqa": "dev"}) == []
    assert run_differences("progress", ["nq"], 3, 4, splits={"nq": "dev"}, subset="first:10", retriever={"bm25"}, corpus="wiki18") == [
        "splits: nq dev (paper test)", "subset: first:10 (paper: whole splits)", "retriever: bm25 (paper e5)"]
    # SubSearch's paper names no retriever (its value is assumed): not checked.
    assert run_differences("subsearch", ["nq"], 3, 4, retriever=set(), corpus=None) == []


def test_a_run_manifest_with_an_e5_index_over_wiki18_is_the_paper_setting():
    manifest = Manifest(evalsuite_version="test", created_at="2026-01-01T00:00:00Z", method="progress", tasks=["nq", "hotpotqa"],
                        splits={"nq": "test", "hotpotqa": "dev"}, subset="full", topk=3, max_turns=4,
                        retriever={"kind": "dense", "params": {"encoder": {"name": "intfloat/e5-base-v2", "fingerprint": "name:intfloat/e5-base-v2"}},
                                   "corpus": {"name": "wiki-18", "num_documents": 21_015_324, "sha256": "0" * 64}})
    assert manifest_paper_check(manifest).matches
    assert manifest_paper_check(manifest.model_copy(update={"max_turns": 2})).differences == ("max_turns: 2 (paper 4)",)
    assert manifest_paper_check(manifest.model_copy(update={"method": "my-baseline"})) is None


def test_evalsuite_run_records_the_check_and_prints_one_line(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    recording = trajectories_dir / "nq_2026_04_28_16_43_search_r1_base_seed1.json"
    result = cli("run", "--backend", "replay", "--model", recording, "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000",
                 "--subset", "first:4", "--topk", "5", "--data-dir", benchmarks_dir, "-o", out)
    assert result.exit_code == 0, result.output
    differences = ["splits: nq test_sub1000 (paper test)", "subset: first:4 (paper: whole splits)", "topk: 5 (paper 3)",
                   "retriever: replay (paper e5)", "corpus: not recorded (paper wiki-18)"]
    manifest = RunDirectory(out).read_manifest()
    assert manifest.model_extra["paper_setting"] == {"method": "search-r1", "matches": False, "differences": differences,
                                                     "declared_only": []}
    line = "search-r1: differs from the paper's evaluation setting in: " + "; ".join(differences)
    assert line in " ".join(result.output.split())
