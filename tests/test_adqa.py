"""The open AD-QA-style benchmark: determinism, answer uniqueness, decomposition consistency, loader round trip."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.tasks import get_task, load_split
from evalsuite.tasks import packaged
from evalsuite.tasks.adqa import essential_queries
from evalsuite.tasks.adqa.check import read_jsonl, structural_problems
from evalsuite.tasks.adqa.dataset import generate_release, gzip_bytes, jsonl_bytes, write_release
from evalsuite.tasks.adqa.evidence import PassageLexicon, fast_normalize
from evalsuite.tasks.adqa.kb import DOMAINS, Entity, KBSize, build_kb, date, days, money
from evalsuite.tasks.adqa.render import fix_articles, join_list, mention
from evalsuite.tasks.adqa.shipped import shipped_dir, shipped_manifest
from evalsuite.tasks.adqa.solver import solve
from evalsuite.metrics.answer import normalize_answer

SMALL = KBSize(advertisers=20, strategies=60, audiences=90, events=80, pixels=40)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """Every test of this module unpacks and indexes into its own cache, never the user's."""
    path = tmp_path_factory.mktemp("evalsuite-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALSUITE_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="module")
def shipped_test_rows():
    rows, _ = read_jsonl(shipped_dir() / "test.jsonl.gz")
    return rows


@pytest.fixture(scope="module")
def shipped_corpus_rows():
    rows, _ = read_jsonl(shipped_dir() / "corpus.jsonl.gz")
    return rows


# ---- values and wording ---------------------------------------------------------------------------------


def test_money_days_and_dates_have_the_aliases_a_reader_would_write():
    assert money(125000).text == "$1,250"
    assert "USD 1,250" in money(125000).answers and money(125000).number == 1250.0
    assert money(240).text == "$2.40"
    assert days(1).text == "1 day" and days(30).answers == ["30 days", "30-day"]
    assert date(2024, 3, 5).answers == ["2024-03-05", "March 5, 2024", "5 March 2024"]


def test_articles_and_lists_read_naturally():
    assert fix_articles("fires through a image pixel; a enterprise account; a Target CPA strategy") == (
        "fires through an image pixel; an enterprise account; a Target CPA strategy"
    )
    assert join_list(["a"]) == "a" and join_list(["a", "b", "c"]) == "a, b and c"
    assert mention(Entity("ad_group", "ad_group:0", "Amber Heron Core")) == "the ad group Amber Heron Core"


def test_fast_normalize_equals_squad_normalization():
    for text in ["The $1,250 budget!", "an in-market audience", "Spring Sale (UK) -- a test", "PX-123456"]:
        assert fast_normalize(text) == normalize_answer(text)


# ---- determinism -----------------------------------------------------------------------------------------


def test_same_seed_gives_identical_bytes_and_another_seed_does_not():
    first = generate_release(7, 30, 10, SMALL)
    second = generate_release(7, 30, 10, SMALL)
    other = generate_release(8, 30, 10, SMALL)
    for split in ("test", "train", "corpus"):
        assert gzip_bytes(jsonl_bytes(getattr(first, split))) == gzip_bytes(jsonl_bytes(getattr(second, split)))
    assert jsonl_bytes(first.test) != jsonl_bytes(other.test)


def test_gzip_output_does_not_depend_on_time_or_file_name():
    data = b'{"id": "1"}\n'
    packed = gzip_bytes(data)
    assert packed[4:8] == b"\x00\x00\x00\x00"  # mtime field of the gzip header
    assert gzip.decompress(packed) == data


def test_regenerating_with_the_shipped_seed_reproduces_the_shipped_files_byte_for_byte(tmp_path):
    manifest = shipped_manifest()
    stats = manifest["statistics"]
    release = generate_release(manifest["seed"], stats["test"]["questions"], stats["train"]["questions"])
    regenerated = write_release(release, tmp_path, version=manifest["version"])
    assert regenerated == manifest
    for name in ("test.jsonl.gz", "train.jsonl.gz", "corpus.jsonl.gz", "MANIFEST.json"):
        assert (tmp_path / name).read_bytes() == (shipped_dir() / name).read_bytes(), name


def test_shipped_files_match_their_manifest_hashes_and_stay_small():
    for name, entry in shipped_manifest()["files"].items():
        packed = (shipped_dir() / name).read_bytes()
        assert hashlib.sha256(packed).hexdigest() == entry["sha256"]
        assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == entry["jsonl_sha256"]
        assert len(packed) < 4 * 1024 * 1024


# ---- content ---------------------------------------------------------------------------------------------


def test_every_entity_name_is_unique_so_a_named_anchor_is_unambiguous():
    kb = build_kb(shipped_manifest()["seed"])
    names = [entity.name for entity in kb.entities.values()]
    assert len(names) == len(set(names))


def test_answers_are_unique_given_the_knowledge_base(shipped_test_rows):
    kb = build_kb(shipped_manifest()["seed"])
    sample = shipped_test_rows[::5]
    for row in sample:
        assert solve(kb, row["metadata"]["program"]) == [row["golden_answers"][0]], row["id"]


def test_solver_reports_ties_and_several_common_values():
    kb = build_kb(3, SMALL)
    campaign = kb.by_kind["campaign"][0]
    side = {"anchor": {"kind": "campaign", "name": campaign.name}, "path": ["campaign.strategy"]}
    tie = {"op": "comparison", "direction": "more", "attribute": "strategy.max_bid", "sides": [side, side]}
    strategy = kb.entities[campaign.rels["strategy"]].name
    assert solve(kb, tie) == [strategy, strategy]  # equal values: two answers, so the generator would reject it
    audience = kb.by_kind["audience"][0]
    same = {"op": "intersection", "sides": [{"anchor": {"kind": "audience", "name": audience.name}, "path": [], "set": "audience.interests"}] * 2}
    assert solve(kb, same) == list(audience.sets["interests"])


def test_decomposition_and_supporting_passages_are_consistent(shipped_test_rows, shipped_corpus_rows):
    text = {row["id"]: row["contents"] for row in shipped_corpus_rows}
    problems = [p for row in shipped_test_rows for p in structural_problems(row, text)]
    assert problems == []


def test_bridge_hops_chain_each_answer_into_the_next_sub_question(shipped_test_rows):
    bridges = [row for row in shipped_test_rows if row["metadata"]["template"] == "bridge"]
    assert bridges
    for row in bridges:
        hops = row["metadata"]["decomposition"]
        for before, after in zip(hops, hops[1:]):
            assert after["entity"] == before["answer"]
            assert before["answer"] in after["question"]
        assert normalize_answer(hops[-1]["answer"]) in [normalize_answer(g) for g in row["golden_answers"]]


def test_structural_check_reports_a_wrong_supporting_passage(shipped_test_rows, shipped_corpus_rows):
    text = {row["id"]: row["contents"] for row in shipped_corpus_rows}
    row = json.loads(json.dumps(shipped_test_rows[0]))
    other = next(pid for pid in text if pid not in row["metadata"]["supporting_passage_ids"])
    row["metadata"]["decomposition"][-1]["passage_id"] = other
    problems = structural_problems(row, text)
    assert any("supporting_passage_ids differ" in p for p in problems)
    assert any(f"not found in passage {other}" in p for p in problems)


def test_questions_span_two_to_four_hops_two_domains_and_all_templates(shipped_test_rows):
    metas = [row["metadata"] for row in shipped_test_rows]
    assert {m["hops"] for m in metas} == {2, 3, 4}
    assert all(len(set(m["domains"])) >= 2 for m in metas)
    assert {m["template"] for m in metas} == {"bridge", "comparison", "intersection", "which_of"}
    assert {d for m in metas for d in m["domains"]} == set(DOMAINS)
    assert essential_queries(metas[0]) == [hop["question"] for hop in metas[0]["decomposition"]]


def test_train_and_test_questions_are_disjoint():
    test, _ = read_jsonl(shipped_dir() / "test.jsonl.gz")
    train, _ = read_jsonl(shipped_dir() / "train.jsonl.gz")
    assert not {r["question"] for r in test} & {r["question"] for r in train}
    programs = lambda rows: {json.dumps(r["metadata"]["program"], sort_keys=True) for r in rows}  # noqa: E731
    assert not programs(test) & programs(train)


def test_corpus_is_wiki18_format_and_most_passages_carry_several_facts(shipped_corpus_rows):
    ids = [row["id"] for row in shipped_corpus_rows]
    assert len(ids) == len(set(ids)) and 3000 <= len(ids) <= 50000
    for row in shipped_corpus_rows[:200]:
        assert row["contents"] == f'"{row["title"]}"\n{row["text"]}'
    # Field-style passages write one "Label: value." per fact; prose ones one sentence per fact.
    entity_rows = [r for r in shipped_corpus_rows if "(" in r["title"]]
    several = sum(r["text"].count(". ") >= 2 for r in entity_rows)
    assert several / len(entity_rows) > 0.9


def test_single_passage_detector_needs_every_entity_and_an_answer_in_one_passage():
    lexicon = PassageLexicon(
        [
            {"id": "1", "contents": '"A"\nThe campaign Aurora Spring Sale uses the bidding strategy Granite Ridge.'},
            {"id": "2", "contents": '"B"\nThe bidding strategy Granite Ridge caps bids at $2.50.'},
            {"id": "3", "contents": '"C"\nThe campaign Aurora Spring Sale UK caps bids at $2.50.'},
        ]
    )
    assert lexicon.single_passage_evidence(["Aurora Spring Sale"], ["$2.50"]) == ["3"]  # whole words: "... Sale UK" contains it
    assert lexicon.single_passage_evidence(["Aurora Spring Sale", "Granite Ridge"], ["$2.50"]) == []
    assert lexicon.single_passage_evidence(["Granite Ridge"], ["2.50 dollars", "$2.50"]) == ["2"]
    assert lexicon.containing_all(["Spring Sale UK"]) == ["3"]


# ---- packaging and the loader ----------------------------------------------------------------------------


def test_loader_round_trip_reads_the_packaged_split(cache_dir):
    loaded = load_split("adqa")
    raw, digest = read_jsonl(shipped_dir() / "test.jsonl.gz")
    assert loaded.split == "test" and len(loaded.rows) == 1000
    assert loaded.source_hash == digest == shipped_manifest()["files"]["test.jsonl.gz"]["jsonl_sha256"]
    assert Path(loaded.source).is_relative_to(cache_dir)
    first = loaded.rows[0]
    assert (first.id, first.golden_answers, first.metadata) == (raw[0]["id"], raw[0]["golden_answers"], raw[0]["metadata"])
    assert first.question == raw[0]["question"]  # generated questions already end with "?"
    assert len(load_split("adqa", "train").rows) == 3000


def test_adqa_is_registered_as_a_packaged_enterprise_multihop_task():
    task = get_task("adqa")
    assert (task.category, task.domain, task.eval_split, task.hub_path) == ("multi-hop", "enterprise", "test", None)
    assert packaged.packaged_splits(task) == {"test": 1000, "train": 3000}


def test_unknown_packaged_split_is_a_clear_error(cache_dir):
    with pytest.raises(EvalsuiteError) as info:
        load_split("adqa", "dev")
    assert "no split 'dev'" in info.value.message


def test_tampered_cache_file_is_replaced_from_the_package(cache_dir):
    path = packaged.unpacked_file("adqa/v1", "test.jsonl.gz")
    path.write_text("tampered\n", encoding="utf-8")
    again = packaged.unpacked_file("adqa/v1", "test.jsonl.gz")
    assert again == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == shipped_manifest()["files"]["test.jsonl.gz"]["jsonl_sha256"]


def test_damaged_package_file_raises_a_data_error_naming_it(tmp_path, monkeypatch):
    copy = tmp_path / "adqa" / "data" / "v1"
    shutil.copytree(shipped_dir(), copy)
    (copy / "test.jsonl.gz").write_bytes(gzip_bytes(b'{"id": "x"}\n'))
    monkeypatch.setattr(packaged, "packaged_dir", lambda _: copy)
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(DataError) as info:
        packaged.unpacked_file("adqa/v1", "test.jsonl.gz")
    assert str(copy / "test.jsonl.gz") in info.value.message and "sha256" in info.value.message


# ---- the CLI -----------------------------------------------------------------------------------------------


def test_generate_command_writes_a_release_with_its_manifest(tmp_path):
    result = CliRunner().invoke(app, ["adqa", "generate", "--seed", "5", "--n-test", "12", "--n-train", "4", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "MANIFEST.json").read_text())
    assert manifest["seed"] == 5 and manifest["files"]["test.jsonl.gz"]["rows"] == 12
    assert manifest["files"]["train.jsonl.gz"]["rows"] == 4
    rows, _ = read_jsonl(tmp_path / "test.jsonl.gz")
    assert [r["id"] for r in rows[:2]] == ["adqa-test-0000", "adqa-test-0001"]


def test_generate_command_rejects_an_empty_test_split(tmp_path):
    result = CliRunner().invoke(app, ["adqa", "generate", "--n-test", "0", "-o", str(tmp_path)])
    assert result.exit_code != 0
    assert isinstance(result.exception, EvalsuiteError)
