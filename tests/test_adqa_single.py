"""`adqa-single`: single-hop questions from AD-QA's gold decompositions, with a held-out test split whose entities
and facts never occur in training. Checked against the AD-QA v1 source files themselves."""

from __future__ import annotations

import gzip
import json

from evalsuite.tasks import get_task, load_split
from evalsuite.tasks.adqa.shipped import shipped_dir
from evalsuite.tasks.adqa.single_hop import VERSION, derive, read_source, training_mentions, write_release


def read(path):
    return [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8")]


def test_the_shipped_release_is_rebuilt_byte_for_byte_from_adqa_v1(tmp_path):
    manifest = write_release(tmp_path)
    shipped = shipped_dir().parent / VERSION
    for name in ("train.jsonl.gz", "test.jsonl.gz", "MANIFEST.json"):
        assert (tmp_path / name).read_bytes() == (shipped / name).read_bytes(), name
    assert {name: entry["rows"] for name, entry in manifest["files"].items()} == {
        "test.jsonl.gz": 453,
        "train.jsonl.gz": 6919,
    }


def test_no_held_out_entity_fact_or_passage_occurs_in_training():
    source_train = read_source("train")
    shipped = shipped_dir().parent / VERSION
    train, test = read(shipped / "train.jsonl.gz"), read(shipped / "test.jsonl.gz")
    mentioned = training_mentions(source_train)
    # every name AD-QA train reads, not only the single-hop train rows: hop entities, hop answers, question entities
    assert not {row["metadata"]["entity"] for row in test} & mentioned
    assert not {row["metadata"]["passage_id"] for row in test} & {r["metadata"]["passage_id"] for r in train}
    train_pairs = {(r["metadata"]["entity"], r["metadata"]["fact"]) for r in train}
    test_pairs = [(r["metadata"]["entity"], r["metadata"]["fact"]) for r in test]
    assert len(set(test_pairs)) == len(test_pairs) == 453 and not set(test_pairs) & train_pairs
    assert len({r["question"] for r in train}) == len(train)  # one row per (entity, fact), no repeated question


def test_rows_are_the_decomposition_hops_with_their_answers():
    train = derive(read_source("train")[:1], [])["train"]
    # adqa-train-00000: "Which audience type is the audience that the ad group Maroon Bison Bundle targets?"
    assert [(r["question"], r["golden_answers"]) for r in train] == [
        ("What audience is the ad group Maroon Bison Bundle targeting?", ["Seasoned Travellers Guild"]),
        # the last hop answers the whole question, so it takes the question's aliases
        ("What type of audience is the audience Seasoned Travellers Guild?", ["in-market", "in market"]),
    ]
    assert train[0]["metadata"] == {
        "entity": "Maroon Bison Bundle",
        "fact": "ad_group.audience",
        "domain": "campaign configuration",
        "passage_id": "adqa-04148",
        "set_valued": False,
        "source_id": "adqa-train-00000",
        "source_hop": 0,
    }


def test_a_set_valued_fact_keeps_the_passages_list():
    test = read(shipped_dir().parent / VERSION / "test.jsonl.gz")
    lists = [r for r in test if r["metadata"]["set_valued"]]
    assert len(lists) == 22 and all(" and " in r["golden_answers"][0] for r in lists)


def test_the_task_is_registered_and_loads_both_splits():
    task = get_task("adqa-single")
    assert (task.eval_split, task.extra_splits, task.packaged_data) == ("test", ("train",), "adqa/single-hop-v1")
    assert len(load_split("adqa-single").rows) == 453
    assert len(load_split("adqa-single", "train").rows) == 6919
