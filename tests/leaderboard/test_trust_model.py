"""Issue 26's attacks on "verified": each put a forged number on the site or in `evalsuite table` at d5cf7d1.

Every forger here re-signs (fresh checksums) and writes claims that agree with themselves, so only what
verification recomputes from the primary data can stop them.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.verification.declared_setting import CONSISTENT_SETTING
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.metrics import extract_answer
from evalsuite.runs import ExampleRecord, summarize
from evalsuite.scoring import score_record

from test_leaderboard_integrity import PREDICTIONS, RUN, edit_json, read_records

def write_records(sub: Path, records: list[ExampleRecord]) -> None:
    (sub / PREDICTIONS).write_bytes(gzip.compress("".join(r.model_dump_json() + "\n" for r in records).encode()))


def gold_answers_marked_failed(sub: Path) -> list[ExampleRecord]:
    """The attack of issue 26: every record failed, turns emptied, the trajectory and prediction the gold answer."""
    records = read_records(sub)
    for record in records:
        gold = record.golden_answers[0]
        record.status, record.error = "failed", "timeout"
        record.turns, record.trajectory = [], f"<answer>{gold}</answer>"
        record.prediction = extract_answer(record.trajectory)  # what Search-R1's parser reads: the gold answer
    edit_json(sub / "submission.json", lambda m: m["runs"][0].update(includes_failed=True))
    return records


def test_failed_records_forged_with_gold_answers_score_zero_not_one_hundred(submission, benchmarks_dir):
    records = gold_answers_marked_failed(submission)
    # The forger claims what an answer-tag parser reads from the trajectory: every answer right.
    for record in records:
        record.metrics = {"em": 1.0, "cover_em": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0, "retrieval_hit": 0.0,
                          "n_searches": 0.0, "n_turns": 0.0, "n_invalid": 0.0, "has_answer": 1.0}
    write_records(submission, records)
    claimed = summarize([r.model_copy(update={"status": "ok"}) for r in records])
    (submission / RUN / "metrics.json").write_text(claimed.model_dump_json(indent=2))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert not report.accepted
    first = next(p for p in report.problems if p.check == "score")
    assert first.message == "id 'test_0': claimed cover_em 1 but recomputed 0 against the registry's gold answers"


def test_failed_records_count_zero_on_every_metric_and_are_counted(submission, benchmarks_dir):
    records = gold_answers_marked_failed(submission)
    # The forger's metrics are whatever the scorer gives; a failed record is worth 0 on every metric.
    for record in records:
        record.metrics = score_record(record)
    assert records[0].metrics["em"] == 0.0 and records[0].metrics["has_answer"] == 0.0
    write_records(submission, records)
    (submission / RUN / "metrics.json").write_text(summarize(records).model_dump_json(indent=2))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    summary = report.tasks["bamboogle"].summary
    assert summary.n == 125 and summary.n_failed == 125
    assert {name: s.mean for name, s in summary.metrics.items() if s.mean != 0.0} == {}
    assert report.to_dict()["tasks"]["bamboogle"]["n_failed"] == 125


def test_a_failed_record_carrying_scores_counts_zero_in_the_summary():
    ok = ExampleRecord(id="a", task="nq", question="q", golden_answers=["x"], prediction="x", metrics={"em": 1.0})
    failed = ExampleRecord(id="b", task="nq", question="q", golden_answers=["x"], prediction="x", metrics={"em": 1.0},
                           status="failed")
    summary = summarize([ok, failed]).tasks["nq"]
    assert summary.metrics["em"].mean == 0.5 and summary.n_failed == 1


# --- Settings identified by content -------------------------------------------------------------------------

def evalsuite_run(sub: Path, corpus: dict, encoder: dict) -> None:
    """Give the packed run the manifest of an evalsuite run over this corpus and encoder, declaring wiki-18 and e5."""
    fields = {"kind": "run", "method": "search-r1", "topk": 3, "max_turns": 4,
              "retriever": {"retriever": "dense", "params": {"encoder": encoder}, "corpus": corpus},
              "model": {"spec": "PeterJinGo/SearchR1-nq_hotpotqa_train-qwen2.5-3b-em-ppo"}}
    edit_json(sub / RUN / "manifest.json", lambda m: m.update(fields))
    edit_json(sub / "submission.json", lambda m: m["info"]["setting"].update(max_turns=4))
    write_checksums(sub)


E5 = {"name": "intfloat/e5-base-v2", "fingerprint": "name:intfloat/e5-base-v2"}
SMALL = {"name": "wiki-18.jsonl", "num_documents": 2000, "sha256": "ab" * 32}


def test_a_two_thousand_passage_file_named_wiki18_is_a_custom_corpus(submission, benchmarks_dir):
    evalsuite_run(submission, SMALL, E5)
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[setting] {RUN}/manifest.json: submission.json declares corpus 'wiki-18' but this run recorded "
        "'custom corpus (2,000 passages, sha abababababab…)'"]


def test_a_corpus_with_wiki18s_passage_count_is_accepted_as_wiki18(submission, benchmarks_dir):
    evalsuite_run(submission, {**SMALL, "num_documents": 21_015_324}, E5)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    assert report.settings["corpus"] == CONSISTENT_SETTING


def test_an_encoder_named_like_e5_is_not_e5(submission, benchmarks_dir):
    # A local fine-tune in a directory called e5-finetuned: its fingerprint is its files' hash, not E5's hub repo.
    evalsuite_run(submission, {**SMALL, "num_documents": 21_015_324}, {"name": "e5-finetuned", "fingerprint": "c0" * 32})
    report = verify_submission(submission, benchmarks_dir)
    assert [str(p) for p in report.problems] == [
        f"[setting] {RUN}/manifest.json: submission.json declares retriever 'e5' but this run recorded 'dense (encoder e5-finetuned)'"]


def test_the_paper_setting_label_needs_the_corpus_by_content():
    from evalsuite.agent.papers import manifest_paper_check
    from evalsuite.runs import Manifest

    def check(corpus: dict) -> str:
        manifest = Manifest(evalsuite_version="test", created_at="2026-01-01T00:00:00Z", kind="run", method="search-r1", tasks=["nq"], splits={"nq": "test"}, topk=3, max_turns=4,
                            retriever={"retriever": "dense", "params": {"encoder": E5}, "corpus": corpus})
        return manifest_paper_check(manifest).summary()

    assert check(SMALL) == ("differs from the paper's evaluation setting in: corpus: custom corpus (2,000 passages, "
                            "sha abababababab…) (paper wiki-18)")
    assert check({**SMALL, "num_documents": 21_015_324}) == "paper setting"


def test_corpus_labels_name_a_known_corpus_only_by_content():
    from evalsuite.runs.run_setting import CorpusIdentity

    sample = "609bfd8ea834cfe05ce1ffddead0859f8571bcba29713da4a99be7ce0b03724f"
    assert CorpusIdentity(name="anything.jsonl", num_documents=10_813, sha256=sample).label() == "wiki-18 sample"
    assert CorpusIdentity(name="wiki18_sample.jsonl", num_documents=10_813, sha256="0" * 64).label() == \
        "custom corpus (10,813 passages, sha 000000000000…)"
    assert CorpusIdentity(name="wiki-18.jsonl").label() == "custom corpus (passage count not recorded, no content hash)"



def test_a_known_corpus_declared_as_submit_writes_it_matches_that_corpus_by_content():
    """`evalsuite submit` declares a known corpus by its label ("AD-QA corpus"); verification must take that for the
    corpus, and still only when the run's index counted and hashed that corpus."""
    from evalsuite.leaderboard.verification.declared_setting import _setting_matches
    from evalsuite.runs.run_setting import KNOWN_CORPORA, CorpusIdentity, corpus_name_key

    for known in KNOWN_CORPORA:
        assert corpus_name_key(known.label) == corpus_name_key(known.key) == known.key
        by_content = CorpusIdentity(name="any.jsonl", num_documents=known.num_passages, sha256=known.sha256)
        custom = CorpusIdentity(name=f"{known.key}.jsonl", num_documents=known.num_passages + 1, sha256="0" * 64)
        assert _setting_matches("corpus", known.label, by_content), known.label
        assert not _setting_matches("corpus", known.label, custom), known.label

# --- Rank like with like ------------------------------------------------------------------------------------

def entry(identifier: str, tasks: dict[str, tuple[str, list[float]]]):
    """A verified entry with hand-set per-example EM: task → (split, scores)."""
    from evalsuite.leaderboard.standings import Entry
    from evalsuite.leaderboard.submission import SubmissionFile
    from evalsuite.leaderboard.verification.report import VerificationReport, VerifiedTask
    from leaderboard_support import info

    report = VerificationReport(submission=identifier)
    report.meta = SubmissionFile(evalsuite_version="test", created_at="2026-01-01T00:00:00Z", info=info(identifier), runs=[])
    for task, (split, scores) in tasks.items():
        records = [ExampleRecord(id=f"{task}-{i}", task=task, split=split, question="q", golden_answers=["a"], prediction="a",
                                 metrics={"em": v}) for i, v in enumerate(scores)]
        report.tasks[task] = VerifiedTask(task, split, identifier, records, summarize(records).tasks[task], "x.jsonl", None)
    return Entry(identifier, Path(identifier), report)


def test_a_training_split_entry_is_never_ranked_with_test_split_entries():
    from evalsuite.leaderboard.standings import verified_table

    honest = entry("honest", {"adqa": ("test", [1, 0, 0, 0])})
    trained_on = entry("train-split", {"adqa": ("train", [1, 1, 1, 0])})
    table = verified_table([honest, trained_on], "em")
    assert [(c.key, c.label) for c in table.columns] == [("adqa", "AD-QA (open)"), ("adqa:train", "AD-QA (open) (train)")]
    rows = {r.name: r for r in table.rows}
    assert [c.text for c in rows["honest"].cells] == ["25.0", "–"]
    assert [c.text for c in rows["train-split"].cells] == ["–", "75.0"]
    # Each is alone on its split: both are the top of their own column, neither is ranked against the other.
    assert rows["honest"].cells[0].group == "a" and rows["train-split"].cells[1].group == "a"


def test_an_average_is_only_over_the_same_tasks_and_coverage_is_shown():
    from evalsuite.leaderboard.standings import verified_table

    seven = entry("three-tasks", {"nq": ("test", [1, 0]), "triviaqa": ("test", [1, 0]), "bamboogle": ("test", [0, 0])})
    one = entry("one-task", {"bamboogle": ("test", [1, 1])})
    table = verified_table([one, seven], "em")
    rows = {r.name: r for r in table.rows}
    assert (rows["three-tasks"].average.text, rows["three-tasks"].average.coverage) == ("33.3", "3 of 3 task splits")
    # Issue 37: another entry's columns never take an Avg away; the one-task entry's Avg is over Bamboogle alone and
    # is ranked in a group of its own, after the wider group: its 100 does not rank first.
    assert (rows["one-task"].average.text, rows["one-task"].average.coverage) == ("100.0", "1 of 3 task splits")
    assert [r.name for r in table.rows] == ["three-tasks", "one-task"]
    assert [(group, [r.name for r in rows]) for group, rows in table.groups()] == [
        ("NQ test, TriviaQA test, Bamboogle test", ["three-tasks"]), ("Bamboogle test", ["one-task"])]


# --- Filing: names that look the same, two adds at once -----------------------------------------------------

def test_a_name_that_only_looks_like_a_filed_one_is_refused(packed, tmp_path, benchmarks_dir):
    import shutil

    import pytest

    from evalsuite.errors import EvalsuiteError
    from evalsuite.leaderboard import add_submission
    from evalsuite.leaderboard.results import entry_id, name_key

    board = tmp_path / "leaderboard"
    add_submission(packed, board, data_dir=benchmarks_dir)
    honest = json_name(packed)
    # A Cyrillic "а" and a zero-width space: it reads as the filed name, and its slug would have been another id.
    lookalike = honest.replace("a", "\u0430", 1).replace(" ", " \u200b", 1)
    assert name_key(lookalike) == name_key(honest) and entry_id(lookalike) == entry_id(honest)
    copy = tmp_path / "copy"
    shutil.copytree(packed, copy)
    edit_json(copy / "submission.json", lambda m: m["info"].update(name=lookalike))
    write_checksums(copy)
    with pytest.raises(EvalsuiteError) as refused:
        add_submission(copy, board, data_dir=benchmarks_dir, entry="another-id")
    assert refused.value.message == (f"{copy / 'submission.json'}: info.name {lookalike!r} reads the same as filed entry "
                                     f"{entry_id(honest)!r} (compared after Unicode normalisation and confusable folding)")
    assert sorted(p.name for p in (board / "entries").iterdir()) == [entry_id(honest)]  # nothing half-written


def json_name(sub: Path) -> str:
    import json

    return json.loads((sub / "submission.json").read_text())["info"]["name"]


def test_leaderboard_add_waits_for_the_lock_on_the_folder(packed, tmp_path, benchmarks_dir):
    import threading
    import time

    from evalsuite.leaderboard import add_submission
    from evalsuite.leaderboard.results import folder_lock

    board = tmp_path / "leaderboard"
    board.mkdir()
    done = threading.Event()
    worker = threading.Thread(target=lambda: (add_submission(packed, board, data_dir=benchmarks_dir), done.set()))
    with folder_lock(board):
        worker.start()
        time.sleep(1.5)  # long enough, unloaded, to verify and reach the lock; under load it may still be verifying
        assert not done.is_set()
        entries = board / "entries"
        assert not entries.exists() or list(entries.iterdir()) == []  # nothing filed while the lock is held
    worker.join(timeout=60)
    assert done.is_set() and [p.name for p in (board / "entries").iterdir()] == ["search-r1-base-test"]


def test_gold_is_loaded_once_per_task_and_split(submission, benchmarks_dir, monkeypatch):
    """Verification cost is linear in the records: many runs declaring one split load its gold file once."""
    import shutil

    import evalsuite.leaderboard.verification.splits as verify

    run = submission / RUN
    for i in range(5):
        shutil.copytree(run, submission / "runs" / f"copy{i}")
    edit_json(submission / "submission.json", lambda m: m["runs"].extend(
        {"name": f"copy{i}", "tasks": {"bamboogle": "test"}} for i in range(5)))
    write_checksums(submission)
    loads = []
    real = verify.load_split
    monkeypatch.setattr(verify, "load_split", lambda *a, **k: loads.append(a[1]) or real(*a, **k))
    report = verify_submission(submission, benchmarks_dir)
    assert [p.check for p in report.problems] == ["duplicate-task"] * 5  # one task per entry, refused
    assert loads == ["test"]


def test_the_setting_an_entry_is_ranked_in_names_its_corpus_by_content(submission, benchmarks_dir):
    sample = {"name": "my-corpus.jsonl", "num_documents": 10_813,
              "sha256": "609bfd8ea834cfe05ce1ffddead0859f8571bcba29713da4a99be7ce0b03724f"}
    evalsuite_run(submission, {**sample, "sha256": "cd" * 32}, E5)
    edit_json(submission / "submission.json", lambda m: m["info"]["setting"].update(corpus="my-corpus"))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    # Issue 37: the key is the declared setting, read from no manifest (a manifest is the submitter's file); a custom
    # name is shown as custom, never as the known corpus its passage count resembles.
    assert report.setting_key() == "custom corpus (my-corpus) · e5 · top-3 · 4 turns"
    assert "corpus" in report.proof()["consistent"]


# --- Claims are read only to report a mismatch ------------------------------------------------------------

def test_what_the_site_shows_does_not_depend_on_the_claims(submission, packed, benchmarks_dir):
    """Claims that agree with the recomputation are accepted, yet the numbers shown (records and summaries) are the
    task's own metrics recomputed from predictions against registry golds, not whatever metrics the claims list."""
    from evalsuite.metrics.termination import RUN_METRICS

    honest = verify_submission(packed, benchmarks_dir)
    records = read_records(submission)
    extra = RUN_METRICS[0]
    for record in records:  # claim one more registered metric, scored exactly as evalsuite scores it
        record.metrics = {**record.metrics, **score_record(record, [extra])}
    write_records(submission, records)

    def claim(m: dict) -> None:
        summary = summarize(records)
        m["tasks"] = summary.model_dump()["tasks"]
        m["metric_versions"] = {**m["metric_versions"], extra: 1} if m.get("metric_versions") else None

    edit_json(submission / RUN / "metrics.json", claim)
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    for task, verified in report.tasks.items():
        shown = {name: s.mean for name, s in verified.summary.metrics.items()}
        assert shown == {name: s.mean for name, s in honest.tasks[task].summary.metrics.items()}
        assert extra not in shown and all(extra not in r.metrics for r in verified.records)
        assert [r.metrics for r in verified.records] == [r.metrics for r in honest.tasks[task].records]


def test_a_corpus_matched_by_its_count_alone_says_so_next_to_the_badge(submission, benchmarks_dir):
    """wiki-18's sha256 is not pinned (docs/guarantees.md): a run over 21,015,324 passages is "wiki-18" by its
    passage count only, and both its label and the proof next to the badge say that basis."""
    evalsuite_run(submission, {**SMALL, "num_documents": 21_015_324}, E5)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    assert "corpus (wiki-18 by passage count only)" in report.proof()["consistent"]
    assert "consistent (the submission's files agree; claims, not evidence): method, corpus (wiki-18 by passage count only)" in report.proof_line()
    (manifest,) = report.manifests.values()
    from evalsuite.runs.run_setting import RunSetting

    assert RunSetting.from_manifest(manifest).corpus_label() == "wiki-18 (by passage count only: 21,015,324; sha256 not pinned)"
    # The table's key is the declared setting (issue 37: it reads no manifest); the basis is in the proof above.
    assert report.setting_key() == "wiki-18 · e5 · top-3 · 4 turns"
