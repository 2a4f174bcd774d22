"""Issue 37 item 5: the site and `verify` say only *recomputed*, *consistent* or *declared*, and no label promotes a
claim. docs/guarantees.md's field table is `FIELD_LEVELS`, row for row; the attack of issue 37 (an imported output's
manifest with `kind` deleted and a paper setting written into it) moves nothing up a level."""

from __future__ import annotations

import re

import pytest

from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.leaderboard.verification.report import CONSISTENT, DECLARED, FIELD_LEVELS, RECOMPUTED

from leaderboard_support import REPO
from test_leaderboard_integrity import RUN, edit_json

GUARANTEES = REPO / "docs" / "guarantees.md"
LEVELS = {RECOMPUTED, CONSISTENT, DECLARED, f"{CONSISTENT} or {DECLARED}", "never read for a label"}


def documented_levels() -> dict[tuple[str, str], str]:
    """The rows of docs/guarantees.md's "Every field, and its level" table: (file, field) → level."""
    text = GUARANTEES.read_text(encoding="utf-8")
    table = text[text.index("| file | field | level |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        file, field, level = (cell.strip().strip("`") for cell in line.strip("|").split("|"))
        rows[(file, field)] = level
    return rows


def test_every_row_of_the_documented_field_table_is_the_codes():
    documented = documented_levels()
    assert len(documented) == len(FIELD_LEVELS) == 14
    assert documented == FIELD_LEVELS
    assert set(documented.values()) <= LEVELS


def the_attack(submission) -> None:
    """Issue 37: delete `kind` from an imported output's manifest and write the paper's setting into it: top-k 3,
    4 turns, E5's fingerprint, wiki-18's passage count."""
    def forge(manifest: dict) -> None:
        manifest.pop("kind", None)
        manifest.update(method="search-r1", topk=3, max_turns=4, retriever={
            "retriever": "dense", "params": {"encoder": {"name": "intfloat/e5-base-v2", "fingerprint": "name:intfloat/e5-base-v2"}},
            "corpus": {"name": "wiki-18.jsonl", "num_documents": 21_015_324}})
    edit_json(submission / RUN / "manifest.json", forge)
    edit_json(submission / "submission.json", lambda m: m["info"]["setting"].update(max_turns=4))
    write_checksums(submission)


def test_a_manifest_written_to_match_moves_nothing_up_to_recomputed(submission, benchmarks_dir, tmp_path):
    import shutil

    honest = tmp_path / "honest"
    shutil.copytree(submission, honest)
    edit_json(honest / "submission.json", lambda m: m["info"]["setting"].update(max_turns=4))
    write_checksums(honest)
    before = verify_submission(honest, benchmarks_dir)
    the_attack(submission)
    after = verify_submission(submission, benchmarks_dir)
    assert before.accepted and after.accepted, after.problem_lines()
    # Declared before; consistent after (the files now agree), never recomputed: claims stay claims.
    assert before.proof()[DECLARED][:4] == ["corpus", "retriever", "top-k", "turn limit"]
    assert after.proof()[CONSISTENT] == ["method", "corpus (wiki-18 by passage count only)", "retriever", "top-k", "turn limit"]
    assert after.proof()[RECOMPUTED] == before.proof()[RECOMPUTED]
    assert "claims, not evidence" in after.proof_line() and "proven" not in after.proof_line()
    # The table it is ranked in, and the numbers, do not move; the paper check never reads as a checked setting.
    assert after.setting_key() == before.setting_key() == "wiki-18 · e5 · top-3 · 4 turns"
    assert before.paper_note().startswith("paper setting as claimed (declared;")
    assert after.paper_note() == "paper setting as claimed (consistent with the manifests)"
    assert {t: v.summary.metrics["em"].mean for t, v in after.tasks.items()} == {
        t: v.summary.metrics["em"].mean for t, v in before.tasks.items()}


@pytest.mark.parametrize("kind", ["run", "import", None])
def test_no_label_depends_on_the_manifests_kind(submission, benchmarks_dir, kind):
    """Whatever `kind` says (or its absence), a manifest that states the same setting gets the same labels."""
    the_attack(submission)
    edit_json(submission / RUN / "manifest.json", lambda m: m.update(kind=kind) if kind else m.pop("kind", None))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    assert report.proof()[CONSISTENT][2:] == ["retriever", "top-k", "turn limit"]
    assert report.setting_key() == "wiki-18 · e5 · top-3 · 4 turns"
    assert report.paper_note() == "paper setting as claimed (consistent with the manifests)"


def test_an_unregistered_method_is_shown_as_declared(submission, benchmarks_dir):
    """Issue 37 item 9: an import may name any method; one not registered here is read with Search-R1's parser and
    shown as declared, never as a method whose parser checked it."""
    edit_json(submission / "submission.json", lambda m: m["info"].update(method="My-Agent"))
    write_checksums(submission)
    report = verify_submission(submission, benchmarks_dir)
    if not report.accepted:  # the manifest names search-r1: the files disagree, which is a rejection
        assert any(p.check == "setting" and "method" in p.message for p in report.problems)
        edit_json(submission / RUN / "manifest.json", lambda m: m.update(method=None))
        write_checksums(submission)
        report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    assert report.method_label() == "My-Agent (declared; not registered here)"
    assert "method (not registered here: answers read with Search-R1's parser)" in report.proof()[DECLARED]
    assert report.paper_setting is None and report.paper_note() == ""


def test_verify_prints_the_three_levels(submission, benchmarks_dir):
    from leaderboard_support import cli

    result = cli("leaderboard", "verify", submission, "--data-dir", benchmarks_dir)
    assert result.exit_code == 0, result.output
    assert re.search(r"recomputed: scores, splits · .*declared: .*model, training data", result.output)
    # this entry declares no turn limit: the paper check says how it differs (never a bare "paper setting")
    assert "search-r1: differs from the paper's evaluation setting in: max_turns: not declared" in result.output
