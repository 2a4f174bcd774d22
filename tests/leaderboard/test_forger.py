"""A property-based forger (issue 26 item 7): it starts from an honest submission, mutates any record field, file or
cache, optionally makes every claim agree with itself (per-example metrics and metrics.json rescored the way a
trusting verifier would score them) and re-signs. Verification must then either refuse it (each problem one line
naming its file), or accept it with every number it shows equal to an independent recomputation from the primary
data: the prediction the trajectory's last answer tag gives, scored against the registry's gold answers, 0 for a
failed record. At d5cf7d1 the forger wins (a failed record carrying the gold answer scored 1).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.metrics import extract_answer
from evalsuite.runs import ExampleRecord, summarize
from evalsuite.scoring import score_record
from evalsuite.tasks.loader import load_split
from evalsuite.tasks.registry import get_task

from test_leaderboard_integrity import PREDICTIONS, RUN, read_records

SHOWN = ("em", "cover_em", "f1")
# (what to mutate, how): each a small, targeted forgery; hypothesis combines several.
FIELDS = ("status", "prediction", "trajectory", "metric", "gold", "question", "turns", "split", "id")
VALUES = ("gold", "other", "empty", "failed", "one")


def oracle(records: list[ExampleRecord], gold: dict) -> dict[str, float]:
    """The honest recomputation, written independently of verify.py: parse, score against the registry, failed → 0."""
    totals = dict.fromkeys(SHOWN, 0.0)
    for record in records:
        if record.status == "failed":
            continue
        row = gold[record.id]
        honest = record.model_copy(update={"prediction": extract_answer(record.trajectory), "golden_answers": list(row.golden_answers),
                                           "question": row.question})
        for name, value in score_record(honest, SHOWN).items():
            totals[name] += value
    return {name: total / len(records) for name, total in totals.items()}


def mutate(record: ExampleRecord, field: str, value: str) -> None:
    gold = record.golden_answers[0]
    text = {"gold": gold, "other": "a forged answer", "empty": "", "failed": "failed", "one": "1"}[value]
    if field == "prediction":
        record.prediction = text or None
    elif field == "trajectory":
        record.trajectory = f"<answer>{text}</answer>" if value != "empty" else ""
    elif field == "status":
        record.status, record.error = "failed", "forged"
        if value == "gold":
            record.trajectory, record.prediction = f"<answer>{gold}</answer>", extract_answer(f"<answer>{gold}</answer>")
    elif field == "metric":
        record.metrics = {**record.metrics, "em": 1.0, "f1": 1.0, "cover_em": 1.0}
    elif field == "gold":
        record.golden_answers = [record.prediction or text or "x"]
    elif field == "question":
        record.question = text + " forged?"
    elif field == "turns":
        record.turns = []
    elif field == "split":
        record.split = "train"
    elif field == "id":
        record.id = record.id + "-forged"


mutation = st.tuples(st.integers(0, 124), st.sampled_from(FIELDS), st.sampled_from(VALUES))
files = st.sampled_from(("none", "metrics.json", "scores.npz", "verification.json", "manifest-corpus"))
# A forger mostly makes its claims agree and re-signs (the other cases are refused for the checksum or the claims).
mostly = st.sampled_from((True, True, True, False))


@pytest.fixture(scope="module")
def gold_rows(benchmarks_dir):
    return {row.id: row for row in load_split(get_task("bamboogle"), "test", benchmarks_dir).rows}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(mutation, min_size=1, max_size=4), file=files, consistent=mostly, resign=mostly)
# The attack of issue 26: failed records carrying the gold answer, every claim agreeing, re-signed.
@example(mutations=[(0, "status", "gold"), (1, "status", "gold")], file="none", consistent=True, resign=True)
def test_a_forged_submission_is_refused_or_shows_only_recomputed_numbers(mutations, file, consistent, resign, packed, tmp_path_factory,
                                                                       benchmarks_dir, gold_rows):
    sub = tmp_path_factory.mktemp("forged") / "submission"
    shutil.copytree(packed, sub)
    records = read_records(sub)
    for index, field, value in mutations:
        mutate(records[index], field, value)
    if consistent:
        # What a verifier that trusted the records would compute: each record scored as if it were an answer.
        for record in records:
            record.metrics = score_record(record.model_copy(update={"status": "ok"}))
    (sub / PREDICTIONS).write_bytes(gzip.compress("".join(r.model_dump_json() + "\n" for r in records).encode()))
    if consistent:
        (sub / RUN / "metrics.json").write_text(summarize([r.model_copy(update={"status": "ok"}) for r in records]).model_dump_json())
    if file == "metrics.json":
        data = json.loads((sub / RUN / "metrics.json").read_text())
        data["tasks"]["bamboogle"]["metrics"]["em"]["mean"] = 1.0
        (sub / RUN / "metrics.json").write_text(json.dumps(data))
    elif file == "scores.npz":
        np.savez(sub / RUN / "scores.npz", tasks=np.array(["bamboogle"]), **{"0/metric:em": np.ones(125)})
    elif file == "verification.json":
        (sub / "verification.json").write_text(json.dumps({"accepted": True, "tasks": {"bamboogle": {"metrics": {"em": {"mean": 1}}}}}))
    elif file == "manifest-corpus":
        data = json.loads((sub / RUN / "manifest.json").read_text())
        data["corpus"] = {"name": "wiki-18.jsonl", "num_documents": 2000, "sha256": "ab" * 32}
        (sub / RUN / "manifest.json").write_text(json.dumps(data))
    if any(r.status == "failed" for r in records):  # the forger declares the failures it made (--include-failed)
        data = json.loads((sub / "submission.json").read_text())
        data["runs"][0]["includes_failed"] = True
        (sub / "submission.json").write_text(json.dumps(data))
    if resign:
        write_checksums(sub)
    report = verify_submission(sub, benchmarks_dir)
    if not report.accepted:
        lines = report.problem_lines()
        assert lines and all("\n" not in line and line.startswith("[") for line in lines)
        return
    shown = report.tasks["bamboogle"].summary
    expected = oracle(records, gold_rows)
    for name in SHOWN:
        assert shown.metrics[name].mean == pytest.approx(expected[name], abs=1e-12), name
    assert shown.n == 125 and shown.n_failed == sum(r.status == "failed" for r in records)
    if file == "manifest-corpus":
        assert report.settings["corpus"].startswith("declared")  # an import's corpus is never shown as checked
