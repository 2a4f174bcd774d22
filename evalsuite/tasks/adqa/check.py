"""Is it truly multi-hop? Measure BM25 recall of the supporting passages for raw questions and for gold sub-questions,
and verify that no single passage answers a question (Search-P1's AD-QA needs >= 2 knowledge domains per question)."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.tasks.adqa.evidence import PassageLexicon, fast_normalize

# The bounds the issue sets: raw questions rarely retrieve every hop, sub-questions almost always do.
RAW_MAX = 0.2
SUB_MIN = 0.8
SINGLE_MAX = 0.0


@dataclass
class CheckReport:
    """Fractions over the questions checked, overall and per template."""

    split: str
    questions: int
    k: int
    raw_all: float  # every supporting passage in the raw question's top-k
    raw_any: float  # at least one supporting passage in the raw question's top-k
    sub_all: float  # every hop's passage in its own sub-question's top-k
    sub_hop: float  # per sub-question
    single_passage: float  # some passage names every question entity and contains a gold answer
    structural_errors: list[str] = field(default_factory=list)
    by_template: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return (
            self.raw_all < RAW_MAX
            and self.sub_all > SUB_MIN
            and self.single_passage <= SINGLE_MAX
            and not self.structural_errors
        )


def find_file(directory: Path, stem: str) -> Path:
    """`<stem>.jsonl` or `<stem>.jsonl.gz` in a release directory."""
    for candidate in (directory / f"{stem}.jsonl", directory / f"{stem}.jsonl.gz"):
        if candidate.is_file():
            return candidate
    raise EvalsuiteError(
        f"no {stem}.jsonl or {stem}.jsonl.gz in {directory}",
        hint="pass a directory written by `evalsuite adqa generate`",
    )


def read_jsonl(path: Path) -> tuple[list[dict], str]:
    """Rows of a .jsonl or .jsonl.gz file and the sha256 of its uncompressed bytes; errors name file:line."""
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    rows = []
    for lineno, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from None
    return rows, hashlib.sha256(raw).hexdigest()


def structural_problems(row: dict, corpus_text: dict[str, str]) -> list[str]:
    """Decomposition/supporting-passage consistency of one question, as readable problems (empty when consistent)."""
    meta = row.get("metadata") or {}
    where = f"question {row.get('id')!r}"
    hops = meta.get("decomposition") or []
    problems = []
    if not 2 <= len(hops) <= 4 or meta.get("hops") != len(hops):
        problems.append(f"{where}: {len(hops)} hops in the decomposition, metadata says {meta.get('hops')}")
    if [h.get("passage_id") for h in hops] != meta.get("supporting_passage_ids"):
        problems.append(f"{where}: supporting_passage_ids differ from the decomposition's passage ids")
    if len({h.get("passage_id") for h in hops}) < 2:
        problems.append(f"{where}: all hops read the same passage")
    if len(set(meta.get("domains") or [])) < 2:
        problems.append(f"{where}: fewer than two knowledge domains")
    for name in meta.get("question_entities") or []:
        if fast_normalize(name) not in fast_normalize(row["question"]):
            problems.append(f"{where}: question entity {name!r} is not named in the question")
    for i, hop in enumerate(hops, start=1):
        text = corpus_text.get(hop.get("passage_id"))
        if text is None:
            problems.append(f"{where} hop {i}: passage {hop.get('passage_id')!r} is not in the corpus")
            continue
        padded = f" {fast_normalize(text)} "
        for part in ("entity", "answer"):
            if f" {fast_normalize(hop[part])} " not in padded:
                problems.append(f"{where} hop {i}: {part} {hop[part]!r} not found in passage {hop['passage_id']}")
        if f" {fast_normalize(hop['entity'])} " not in f" {fast_normalize(hop['question'])} ":
            problems.append(f"{where} hop {i}: the sub-question does not name its entity {hop['entity']!r}")
    return problems


def check_release(questions: list[dict], corpus: list[dict], searcher, split: str = "test", k: int = 3) -> CheckReport:
    """Measure the multi-hop bounds. `searcher.search_ids(queries, k)` returns top-k passage ids per query."""
    corpus_text = {str(row["id"]): row["contents"] for row in corpus}
    lexicon = PassageLexicon(corpus)
    raw_top = searcher.search_ids([row["question"] for row in questions], k)
    sub_queries = [hop["question"] for row in questions for hop in row["metadata"]["decomposition"]]
    sub_top = searcher.search_ids(sub_queries, k)
    per_template: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    totals: dict[str, list[bool]] = defaultdict(list)
    errors: list[str] = []
    cursor = 0
    for row, top in zip(questions, raw_top):
        meta = row["metadata"]
        gold = [hop["passage_id"] for hop in meta["decomposition"]]
        hop_hits = [gold[i] in sub_top[cursor + i] for i in range(len(gold))]
        cursor += len(gold)
        outcome = {
            "raw_all": all(p in top for p in gold),
            "raw_any": any(p in top for p in gold),
            "sub_all": all(hop_hits),
            "single_passage": bool(lexicon.single_passage_evidence(meta["question_entities"], row["golden_answers"])),
        }
        for name, value in outcome.items():
            totals[name].append(value)
            per_template[meta["template"]][name].append(value)
        totals["sub_hop"].extend(hop_hits)
        errors.extend(structural_problems(row, corpus_text))

    def mean(values: list[bool]) -> float:
        return sum(values) / len(values) if values else 0.0

    return CheckReport(
        split=split,
        questions=len(questions),
        k=k,
        raw_all=mean(totals["raw_all"]),
        raw_any=mean(totals["raw_any"]),
        sub_all=mean(totals["sub_all"]),
        sub_hop=mean(totals["sub_hop"]),
        single_passage=mean(totals["single_passage"]),
        structural_errors=errors,
        by_template={
            t: {name: mean(v) for name, v in values.items()} | {"n": float(len(values["raw_all"]))}
            for t, values in sorted(per_template.items())
        },
    )
