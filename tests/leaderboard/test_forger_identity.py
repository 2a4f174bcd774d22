"""A second property-based forger (issue 37): it attacks identity, comparability and labels rather than values.

- Subset spellings and sizes: any way of writing `first:N` / `sample:N:SEED` is refused or parses to exactly the
  subset meant, in one canonical spelling; a declared split spelled any way is verified under that spelling or
  refused.
- Rankings: random entries over whole splits, published subsamples and hand-picked subsets; every Avg is the
  entry's mean over its own whole splits (computed here independently), rows are ranked by it only within groups of
  identical columns, and adding any entry never changes another entry's Avg or group.
- Manifest `kind` and setting fields: an imported output's manifest with `kind` kept, deleted or rewritten and any
  setting fields written in; whatever is accepted shows the honest scores, is keyed by the declared setting alone,
  never lists a setting as recomputed, and never reads a bare "paper setting".

At the code before issue 37 each property fails (`first:1_0` was `first:10`; a subset column removed every other
entry's Avg; deleting `kind` changed the table an entry sat in). The default run tries a few hundred forgeries in
well under a minute; `-m slow` runs over a thousand of each.
"""

from __future__ import annotations

import json
import shutil
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.standings import verified_table
from evalsuite.leaderboard.submission import SubmissionFile, write_checksums
from evalsuite.leaderboard.verification.report import CONSISTENT, DECLARED, RECOMPUTED
from evalsuite.tasks.subset import Subset, apply_subset, parse_subset

from test_leaderboard_integrity import RUN, edit_json
from test_subset_entries import first40  # noqa: F401 - a fixture
from test_trust_model import entry

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SLOW = settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# --- subset spellings ----------------------------------------------------------------------------------------

NON_ASCII_DIGITS = "٠١٢٣٤٥٦٧٨٩"  # Arabic-Indic: int() reads them


@st.composite
def spelled_number(draw, value: int) -> tuple[str, bool]:
    """`value` written some way, and whether that way is one the canonical grammar allows (spaces and zeros)."""
    digits = "0" * draw(st.integers(0, 3)) + str(value)
    allowed = True
    trick = draw(st.sampled_from(("plain", "plain", "underscore", "plus", "minus", "arabic")))
    if trick == "underscore" and len(digits) > 1:
        cut = draw(st.integers(1, len(digits) - 1))
        digits, allowed = digits[:cut] + "_" + digits[cut:], False
    elif trick == "plus":
        digits, allowed = "+" + digits, False
    elif trick == "minus":
        digits, allowed = "-" + digits, False
    elif trick == "arabic":
        digits, allowed = "".join(NON_ASCII_DIGITS[int(c)] for c in digits), False
    space = st.sampled_from(("", "", " ", "  ", "\t"))
    return draw(space) + digits + draw(space), allowed


@st.composite
def subset_spelling(draw) -> tuple[str, Subset, bool]:
    n = draw(st.integers(1, 300))
    seed = draw(st.integers(0, 10_000))
    kind = draw(st.sampled_from(("first", "sample")))
    number, ok_n = draw(spelled_number(n))
    if kind == "first":
        return f"first:{number}", Subset("first", n), ok_n
    seed_text, ok_seed = draw(spelled_number(seed))
    return f"sample:{number}:{seed_text}", Subset("sample", n, seed), ok_n and ok_seed


def check_spelling(spelling: str, meant: Subset, allowed: bool) -> None:
    try:
        parsed = parse_subset(spelling)
    except EvalsuiteError:
        assert not allowed, f"{spelling!r} refused"
        return
    assert allowed, f"{spelling!r} accepted as {parsed}"
    assert parsed == meant and str(parsed) == str(meant) and parse_subset(str(parsed)) == parsed
    rows = list(range(500))
    assert apply_subset(rows, parsed) == apply_subset(rows, meant)  # type: ignore[arg-type]


@FAST
@given(case=subset_spelling())
@example(case=("first:1_0", Subset("first", 10), False))
@example(case=("first:+10", Subset("first", 10), False))
@example(case=("sample:5:-8", Subset("sample", 5, 8), False))
@example(case=("first: 010", Subset("first", 10), True))
def test_every_subset_spelling_is_refused_or_the_subset_meant(case):
    check_spelling(*case)


@pytest.mark.slow
@SLOW
@given(case=subset_spelling())
def test_every_subset_spelling_is_refused_or_the_subset_meant_thoroughly(case):
    check_spelling(*case)


# --- rankings --------------------------------------------------------------------------------------------------

COLUMNS = (
    ("bamboogle", "test"), ("nq", "test"), ("nq", "test_sub1000"), ("triviaqa", "test_sub1000@sample:5:8"),
    ("bamboogle", "test@first:10"), ("hotpotqa", "dev"),
)


@st.composite
def fake_entry(draw, name: str):
    chosen = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=4, unique_by=lambda c: c[0]))
    tasks = {task: (split, [float(x) for x in draw(st.lists(st.integers(0, 1), min_size=3, max_size=3))])
             for task, split in chosen}
    return entry(name, tasks)


def own_average(e) -> float | None:
    """An entry's Avg as issue 37 defines it, written independently: the mean EM over its whole splits."""
    whole = [v.summary.metrics["em"].mean for v in e.report.tasks.values() if "@" not in v.split]
    return 100 * float(np.mean(whole)) if whole else None


def check_ranking(entries, extra) -> None:
    table = verified_table(entries, "em")
    by_name = {r.name: r for r in table.rows}
    for e in entries:
        expected = own_average(e)
        shown = by_name[e.id].average.value
        assert (shown is None) == (expected is None)
        if expected is not None:
            assert shown == pytest.approx(expected, abs=1e-6)
    for group, rows in table.groups():
        values = [r.average.value for r in rows]
        assert values == sorted(values, key=lambda v: -(v if v is not None else -1.0)), group
        members = [e for e in entries if by_name[e.id].group == group]
        assert len({frozenset((t, v.split) for t, v in e.report.tasks.items() if "@" not in v.split) for e in members}) == 1
    grown = {r.name: (r.average.value, r.group) for r in verified_table([*entries, extra], "em").rows}
    for name, row in by_name.items():
        assert grown[name] == (row.average.value, row.group), name


entries_and_extra = st.tuples(
    st.integers(1, 4).flatmap(lambda k: st.tuples(*(fake_entry(f"e{i}") for i in range(k)))), fake_entry("extra")
)


@FAST
@given(case=entries_and_extra)
def test_averages_and_ranks_combine_only_identical_question_sets(case):
    check_ranking(list(case[0]), case[1])


@pytest.mark.slow
@SLOW
@given(case=entries_and_extra)
def test_averages_and_ranks_combine_only_identical_question_sets_thoroughly(case):
    check_ranking(list(case[0]), case[1])


# --- manifest kind and setting fields, declared subset spellings ----------------------------------------------

KINDS = ("import", "run", "deleted", "Run")
SETTING_FIELDS = {
    "method": "search-r1",
    "topk": 3,
    "max_turns": 4,
    "retriever": {"retriever": "dense", "params": {"encoder": {"name": "intfloat/e5-base-v2",
                                                               "fingerprint": "name:intfloat/e5-base-v2"}},
                  "corpus": {"name": "wiki-18.jsonl", "num_documents": 21_015_324}},
}


@pytest.fixture(scope="module")
def honest(packed, benchmarks_dir):
    report = verify_submission(packed, benchmarks_dir)
    assert report.accepted
    return {t: v.summary.metrics["em"].mean for t, v in report.tasks.items()}


def check_manifest_forgery(packed, tmp_path_factory, benchmarks_dir, honest, kind, written, declared_turns) -> None:
    sub = tmp_path_factory.mktemp("kind") / "submission"
    shutil.copytree(packed, sub)

    def forge(manifest: dict) -> None:
        if kind == "deleted":
            manifest.pop("kind", None)
        else:
            manifest["kind"] = kind
        manifest.update({name: SETTING_FIELDS[name] for name in written})

    edit_json(sub / RUN / "manifest.json", forge)
    edit_json(sub / "submission.json", lambda m: m["info"]["setting"].update(max_turns=declared_turns))
    write_checksums(sub)
    report = verify_submission(sub, benchmarks_dir)
    if not report.accepted:
        lines = report.problem_lines()
        assert lines and all("\n" not in line and line.startswith("[") for line in lines)
        return
    info = SubmissionFile.model_validate_json((sub / "submission.json").read_text()).info
    # keyed by the declared setting alone, whatever the manifest says or lacks
    turns = f" · {declared_turns} turns" if declared_turns else ""
    assert report.setting_key() == f"{info.setting.corpus} · {info.setting.retriever} · top-{info.setting.topk}{turns}"
    assert {t: v.summary.metrics["em"].mean for t, v in report.tasks.items()} == honest
    proof = report.proof()
    settings_named = ("corpus", "retriever", "top-k", "turn limit")
    assert not any(s in item for item in proof[RECOMPUTED] for s in settings_named)
    assert all(any(item.startswith(s) for item in proof[CONSISTENT] + proof[DECLARED]) for s in settings_named)
    assert report.paper_note() != "paper setting" and "proven" not in report.proof_line()


manifest_forgery = dict(
    kind=st.sampled_from(KINDS),
    written=st.lists(st.sampled_from(sorted(SETTING_FIELDS)), unique=True),
    declared_turns=st.sampled_from((None, 4)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**manifest_forgery)
@example(kind="deleted", written=sorted(SETTING_FIELDS), declared_turns=4)  # the attack of issue 37
def test_a_manifests_kind_and_settings_never_promote_a_label(kind, written, declared_turns, packed, tmp_path_factory,
                                                             benchmarks_dir, honest):
    check_manifest_forgery(packed, tmp_path_factory, benchmarks_dir, honest, kind, written, declared_turns)


@pytest.mark.slow
@SLOW
@given(**manifest_forgery)
def test_a_manifests_kind_and_settings_never_promote_a_label_thoroughly(kind, written, declared_turns, packed,
                                                                        tmp_path_factory, benchmarks_dir, honest):
    check_manifest_forgery(packed, tmp_path_factory, benchmarks_dir, honest, kind, written, declared_turns)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.integers(40, 40).flatmap(lambda n: spelled_number(n)), mark=st.sampled_from(("first", " first ")))
@example(case=("1_0", False), mark="first")
def test_a_declared_subset_is_verified_under_its_canonical_spelling_or_refused(case, mark, first40, tmp_path_factory,
                                                                               benchmarks_dir):
    from test_subset_entries import declare

    number, allowed = case
    sub = tmp_path_factory.mktemp("spelled") / "submission"
    shutil.copytree(first40[1], sub)
    declare(sub, f"test@{mark}:{number}")
    report = verify_submission(sub, benchmarks_dir)
    if not allowed:
        assert not report.accepted
        return
    assert report.accepted, report.problem_lines()
    assert report.tasks["bamboogle"].split == "test@first:40" and report.tasks["bamboogle"].summary.n == 40


def test_the_forgers_alphabet_is_what_int_reads():
    """The refused spellings are refused because `int()` would read them as the same number."""
    assert int("1_0") == int("+10") == int("١٠") == 10 and int(" 10 ") == 10
    assert set(string.digits).isdisjoint(NON_ASCII_DIGITS)
