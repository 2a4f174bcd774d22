"""Issue 37 items 1 and 2, each attack as a regression test: one subset is one column whatever its spelling, and
averages, ranks and chart bars combine entries only over identical question sets."""

from __future__ import annotations

import shutil

import pytest

import evalsuite.tables.plots as plots
from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.site import _top_entries_chart
from evalsuite.leaderboard.standings import Entry, split_columns, verified_table
from evalsuite.tasks.subset import canonical_subset

from test_subset_entries import declare, first40, problems  # noqa: F401 - first40 is a fixture
from test_trust_model import entry
from tests.conftest import requires_extra


# --- 37.1: one subset, one key ------------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["first:40", "first:040", "first: 40", " first : 0040 "])
def test_equivalent_subset_spellings_are_one_key(spelling):
    assert canonical_subset(spelling) == "first:40"


@pytest.mark.parametrize("spelling", ["first:4_0", "first:+40", "first:-40", "first:４０", "sample:5:-8", "sample:5:+8"])
def test_spellings_int_would_read_are_refused(spelling):
    from evalsuite.errors import EvalsuiteError

    with pytest.raises(EvalsuiteError, match="invalid subset"):
        canonical_subset(spelling)


def test_the_five_spellings_of_one_run_are_one_column_or_refused(first40, benchmarks_dir, tmp_path):
    """The attack: the same `first:40` run declared five ways was accepted five times, each the top of its own column."""
    accepted = []
    for i, spelling in enumerate(["test@first:40", "test@first:040", "test@first: 40", "test@first:4_0", "test@first:+40"]):
        sub = tmp_path / f"sub{i}"
        shutil.copytree(first40[1], sub)
        declare(sub, spelling)
        report = verify_submission(sub, benchmarks_dir)
        if "_" in spelling or "+" in spelling:
            assert not report.accepted
            assert any(c == "split" and "invalid subset" in m for c, m in problems(report)), problems(report)
            continue
        assert report.accepted, problems(report)
        assert report.tasks["bamboogle"].split == "test@first:40"
        accepted.append(Entry(f"e{i}", sub, report))
    columns = split_columns(accepted)
    assert [c.key for c in columns] == ["bamboogle:test@first:40"]
    table = verified_table(accepted, "em")
    # all three in one column, tested against one top entry (identical outputs: not significantly different)
    marks = [row.cells[0].group for row in table.rows]
    assert sorted(marks) == ["a", "a", "a"] and sum(row.cells[0].css == "top" for row in table.rows) == 1


# --- 37.2: like with like ------------------------------------------------------------------------------------

def scores(right: int, n: int) -> list[float]:
    return [1.0] * right + [0.0] * (n - right)


def the_favourable_subset():
    """A weak model (Bamboogle EM 8.8) plus five hand-picked TriviaQA questions it got right, beside a model at EM
    34.4 on Bamboogle."""
    weak = entry("weak", {"bamboogle": ("test", scores(11, 125)), "triviaqa": ("test_sub1000@sample:5:8", scores(5, 5))})
    strong = entry("strong", {"bamboogle": ("test", scores(43, 125))})
    return weak, strong


def test_a_favourable_subset_never_decides_the_ranking():
    weak, strong = the_favourable_subset()
    table = verified_table([weak, strong], "em")
    assert [c.label for c in table.columns] == ["Bamboogle", "TriviaQA (test_sub1000, 5 sampled with seed 8)"]
    assert "never averaged with whole splits" in table.columns[1].title
    rows = {r.name: r for r in table.rows}
    # the subset column is shown, never averaged: both keep an Avg, over the same Bamboogle questions
    assert rows["weak"].cells[1].text == "100.0"
    assert (rows["weak"].average.text, rows["strong"].average.text) == ("8.8", "34.4")
    assert rows["weak"].group == rows["strong"].group == "Bamboogle test"
    assert [r.name for r in table.rows] == ["strong", "weak"]


def test_adding_a_column_never_removes_another_entrys_average():
    weak, strong = the_favourable_subset()
    alone = verified_table([strong], "em").rows[0].average
    other = entry("other", {"nq": ("test", scores(1, 4))})
    for table in (verified_table([weak, strong], "em"), verified_table([weak, strong, other], "em")):
        row = next(r for r in table.rows if r.name == "strong")
        assert (row.average.value, row.average.text) == (alone.value, alone.text)


def test_the_front_page_chart_draws_no_subset_bar_and_ranks_like_the_table(monkeypatch, tmp_path):
    weak, strong = the_favourable_subset()
    drawn = {}
    monkeypatch.setattr(plots, "plot_top_entries",
                        lambda series, tasks, metric, path, title, tick_labels: drawn.update(series=series, labels=tick_labels))
    _top_entries_chart([weak, strong], "em", tmp_path / "chart.svg")
    assert list(drawn["series"]) == ["strong", "weak"]
    assert drawn["labels"] == ["Bamboogle"] and all(list(s) == ["bamboogle"] for s in drawn["series"].values())


@requires_extra("site", "matplotlib")  # the charts
def test_a_chart_of_only_zeros_is_not_drawn(tmp_path):
    zero = entry("zero", {"adqa": ("test@first:4", scores(0, 4)), "bamboogle": ("test", scores(0, 3))})
    assert _top_entries_chart([zero], "em", tmp_path / "chart.svg") is None
    assert not (tmp_path / "chart.svg").exists()
    drawn = _top_entries_chart([entry("one", {"bamboogle": ("test", scores(1, 3))})], "em", tmp_path / "one.svg")
    assert drawn is not None and drawn.read_text().lstrip().startswith("<?xml")


def test_one_method_spelled_three_ways_is_one_method_on_the_methods_page():
    from evalsuite.leaderboard.site import _methods

    spelled = []
    for i, name in enumerate(["Search-R1", "search_r1", "search-r1"]):
        e = entry(f"e{i}", {"bamboogle": ("test", scores(1, 2))})
        e.report.meta.info.method = name
        spelled.append(e)
    groups = {g["name"]: [e.id for e in g["entries"]] for g in _methods(spelled, {})}
    assert groups == {"Search-R1": ["e0", "e1", "e2"]}
