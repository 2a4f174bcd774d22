"""`adqa-single`: single-hop questions derived from AD-QA's gold decompositions, with a held-out test split whose
entities and facts never occur in training (docs/adqa.md, "Single-hop questions").

Every hop of an AD-QA question is an atomic sub-question naming its entity precisely, answered by one fact in one
passage of the AD-QA corpus (`metadata.decomposition`). Each distinct (entity, fact) becomes one single-hop row:

- train: the hops of the `adqa` train split, one row per (entity, fact), the first wording met in file order;
- test (held out): the hops of the `adqa` test split whose entity occurs nowhere in the train split (not as a hop's
  entity, a hop's answer or a question entity), one row per (entity, fact). So neither the entity, nor any fact about
  it, nor the passage stating the fact is read in training.

Gold answers: the hop's answer as its passage words it; where the hop answers the whole AD-QA question, the question's
aliases too (`Target CPA`, `tCPA`). Set-valued facts (countries, interests) keep the passage's list ("Turkey,
Ireland and Egypt") and are marked `set_valued`. The derivation is a pure function of the two source files, so
`python -m evalsuite.tasks.adqa.single_hop -o DIR` rebuilds the shipped release byte for byte.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from evalsuite.metrics.answer import normalize_answer
from evalsuite.tasks.adqa.dataset import gzip_bytes, jsonl_bytes, sha256
from evalsuite.tasks.adqa.schema import SETS
from evalsuite.tasks.adqa.shipped import PACKAGED_DATA, shipped_manifest
from evalsuite.tasks.packaged import unpacked_file

VERSION = "single-hop-v1"
PACKAGED = f"adqa/{VERSION}"  # the task declaration's `data: {packaged: adqa/single-hop-v1}`
SET_FACTS = frozenset(f"{spec.kind}.{spec.name}" for spec in SETS)

Row = dict[str, Any]


def hop_rows(rows: list[Row], split: str) -> list[Row]:
    """One row per distinct (entity, fact) among the hops of `rows`, the first met, in file order."""
    out: list[Row] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        for index, hop in enumerate(row["metadata"]["decomposition"]):
            key = (hop["entity"], hop["fact"])
            if key in seen:
                continue
            seen.add(key)
            out.append(single_hop_row(row, index, hop, f"adqa-single-{split}-{len(out):05d}"))
    return out


def single_hop_row(source: Row, index: int, hop: Row, row_id: str) -> Row:
    answers = [hop["answer"]]
    if normalize_answer(hop["answer"]) == normalize_answer(source["golden_answers"][0]):
        answers += [a for a in source["golden_answers"][1:] if a not in answers]  # the whole question's aliases
    return {
        "id": row_id,
        "question": hop["question"],
        "golden_answers": answers,
        "metadata": {
            "entity": hop["entity"],
            "fact": hop["fact"],
            "domain": hop["domain"],
            "passage_id": hop["passage_id"],
            "set_valued": hop["fact"] in SET_FACTS,
            "source_id": source["id"],
            "source_hop": index,
        },
    }


def training_mentions(train: list[Row]) -> set[str]:
    """Every entity name the train split reads: hop entities, hop answers (entity names among them), question
    entities."""
    names: set[str] = set()
    for row in train:
        names.update(row["metadata"]["question_entities"])
        for hop in row["metadata"]["decomposition"]:
            names.update((hop["entity"], hop["answer"]))
    return names


def derive(train: list[Row], test: list[Row]) -> dict[str, list[Row]]:
    """The single-hop train split and the held-out test split (entities never in training)."""
    seen = training_mentions(train)
    unseen = [
        {**row, "metadata": {**row["metadata"], "decomposition": held}}
        for row in test
        if (held := [hop for hop in row["metadata"]["decomposition"] if hop["entity"] not in seen])
    ]
    return {"train": hop_rows(train, "train"), "test": hop_rows(unseen, "test")}


def read_source(split: str) -> list[Row]:
    path = unpacked_file(PACKAGED_DATA, f"{split}.jsonl.gz")
    if path is None:
        raise FileNotFoundError(f"the packaged {PACKAGED_DATA} has no {split} split")
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def write_release(out_dir: Path) -> dict:
    """Derive from the shipped AD-QA v1 and write train/test .jsonl.gz and MANIFEST.json; returns the manifest."""
    splits = derive(read_source("train"), read_source("test"))
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for split in ("test", "train"):
        raw = jsonl_bytes(splits[split])
        packed = gzip_bytes(raw)
        (out_dir / f"{split}.jsonl.gz").write_bytes(packed)
        files[f"{split}.jsonl.gz"] = {
            "rows": len(splits[split]),
            "sha256": sha256(packed),
            "jsonl_sha256": sha256(raw),
            "bytes": len(packed),
        }
    source = shipped_manifest()["files"]
    manifest = {
        "name": "adqa-single",
        "version": VERSION,
        "generator": "evalsuite.tasks.adqa.single_hop",
        "source": {
            "data": PACKAGED_DATA,
            "train.jsonl.gz": source["train.jsonl.gz"]["sha256"],
            "test.jsonl.gz": source["test.jsonl.gz"]["sha256"],
        },
        "regenerate": "python -m evalsuite.tasks.adqa.single_hop -o DIR",
        "held_out": "test: hops of adqa test questions whose entity occurs nowhere in adqa train (hop entity, "
        "hop answer or question entity); one row per (entity, fact)",
        "files": files,
        "statistics": {split: statistics(rows) for split, rows in splits.items()},
    }
    (out_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def statistics(rows: list[Row]) -> dict:
    from collections import Counter

    meta = [row["metadata"] for row in rows]
    return {
        "questions": len(rows),
        "entities": len({m["entity"] for m in meta}),
        "set_valued": sum(m["set_valued"] for m in meta),
        "domains": dict(sorted(Counter(m["domain"] for m in meta).items())),
        "facts": dict(sorted(Counter(m["fact"] for m in meta).items())),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="derive the adqa-single release from the shipped AD-QA v1")
    parser.add_argument("--output", "-o", type=Path, required=True)
    args = parser.parse_args(argv)
    manifest = write_release(args.output)
    print({name: entry["rows"] for name, entry in manifest["files"].items()})


if __name__ == "__main__":
    main()
