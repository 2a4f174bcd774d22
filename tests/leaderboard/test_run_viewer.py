"""`evalsuite view`: every example of one or more run directories on one static page, runs side by side, and what is
missing (a run still being written, failed examples, questions only one run has) said in one line each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1, cli

from evalsuite.leaderboard.viewer import build_view, short_labels
from tests.conftest import import_extra

# markupsafe (jinja2 brings it): the escaping of the site's templates; without it the file is skipped, naming the extra
markupsafe_escape = import_extra("site", "markupsafe").escape


def test_labels_are_the_shortest_path_ends_that_tell_runs_apart(tmp_path):
    assert short_labels([tmp_path / "a" / "run", tmp_path / "b" / "run"]) == ["a/run", "b/run"]
    assert short_labels([tmp_path / "x", tmp_path / "y"]) == ["x", "y"]
    assert short_labels([tmp_path / "x", tmp_path / "x"]) == ["x", "x #2"]


def test_two_runs_side_by_side_on_each_question(scored_runs, tmp_path):
    page = build_view([scored_runs / BASE_SEED1, scored_runs / INSTRUCT_SEED1], tmp_path / "view")
    assert page.questions == 125 and page.notes == []
    html = page.index.read_text(encoding="utf-8")
    first = html[html.index('id="q-1"'):html.index('id="q-2"')]
    # Bamboogle test_0: the base run searched once and answered Thomas Jefferson; the instruct run searched twice
    assert "Who was president of the United States in the year that Citibank was founded?" in first
    assert first.count('class="run-cell"') == 2 and "<strong>Gold:</strong> james madison" in first
    base, instruct = first.split('class="run-cell"')[1:]
    assert "search: president of the United States in the year that Citibank was founded" in base and "Thomas Jefferson" in base
    assert "search: Citibank was founded" in instruct and "search: president of the United States in 1812" in instruct
    assert 'data-m-em="1.0"' in instruct and 'data-m-em="0.0"' in base
    assert (tmp_path / "view" / "assets" / "view.js").is_file()


def partial_copy(run: Path, target: Path, keep: int, fail: int | None = None) -> Path:
    """`run` as if still being written: the first `keep` records and half of the next line, no metrics.json;
    record `fail` (an index) turned into a failed example."""
    shutil.copytree(run, target)
    (target / "metrics.json").unlink()
    (target / "scores.npz").unlink(missing_ok=True)
    lines = (target / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    kept = lines[:keep]
    if fail is not None:
        record = json.loads(kept[fail])
        record.update(status="failed", error="backend error: connection reset", prediction=None)
        kept[fail] = json.dumps(record)
    (target / "predictions.jsonl").write_text("\n".join(kept) + "\n" + lines[keep][:40], encoding="utf-8")
    return target


def test_a_run_being_written_with_a_failed_example_beside_a_whole_run(scored_runs, tmp_path):
    partial = partial_copy(scored_runs / BASE_SEED1, tmp_path / "partial", keep=10, fail=3)
    page = build_view([partial, scored_runs / INSTRUCT_SEED1], tmp_path / "view")
    assert page.questions == 125
    assert page.notes == [
        "partial: still being written or stopped (no metrics.json): showing the 10 examples written so far",
        "partial: 1 of 10 examples failed: shown with their error (filter: failed)",
        f"the runs share 10 questions; 115 only in {INSTRUCT_SEED1} (shown with the other runs' columns empty)",
    ]
    html = page.index.read_text(encoding="utf-8")
    assert html.count("not in this run") == 115 and "failed: backend error: connection reset" in html
    assert html.count('data-failed="1"') == 1
    for note in page.notes:  # on the page too, escaped as any text from a run
        assert str(markupsafe_escape(note)) in html


def test_the_command_prints_the_page_and_each_missing_thing_on_one_line(scored_runs, tmp_path):
    partial = partial_copy(scored_runs / BASE_SEED1, tmp_path / "partial", keep=5)
    result = cli("view", partial, "-o", tmp_path / "view")
    assert result.exit_code == 0, result.output
    assert "note: partial: still being written or stopped (no metrics.json): showing the 5 examples written so far" in result.output
    assert f"5 questions from 1 run(s): {(tmp_path / 'view' / 'index.html').resolve().as_uri()}" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("view", empty)
    assert result.exit_code != 0 and "has no predictions.jsonl: nothing to show yet" in str(result.exception)


def test_score_prints_the_command_that_opens_the_viewer(trajectories_dir, tmp_path):
    result = cli("score", trajectories_dir / f"{BASE_SEED1}.json", "-o", tmp_path / "scored")
    assert result.exit_code == 0, result.output
    assert f"see every example: evalsuite view {tmp_path / 'scored' / BASE_SEED1} --open" in result.output


def test_a_run_is_split_into_pages_each_with_the_pager_and_the_notes(scored_runs, tmp_path):
    partial = partial_copy(scored_runs / BASE_SEED1, tmp_path / "partial", keep=120, fail=110)
    page = build_view([partial, scored_runs / INSTRUCT_SEED1], tmp_path / "view", page_size=50)
    assert (page.questions, page.pages) == (125, 3)
    assert sorted(p.name for p in (tmp_path / "view").glob("*.html")) == ["index.html", "page-2.html", "page-3.html"]
    # the failed example (the 111th question) is on page 3, and the note says so
    assert page.notes[1] == "partial: 1 of 120 examples failed: shown with their error on page 3 (filter: failed)"
    pages = [(tmp_path / "view" / name).read_text(encoding="utf-8") for name in ("index.html", "page-2.html", "page-3.html")]
    for number, html in enumerate(pages, start=1):
        first, last = (number - 1) * 50 + 1, min(number * 50, 125)
        assert html.count('<article class="example question"') == last - first + 1
        assert f'id="q-{first}"' in html and f'id="q-{last}"' in html and f'id="q-{last + 1}"' not in html
        assert f"questions {first}–{last} of 125" in html and f"page {number} of 3" in html
        assert all(str(markupsafe_escape(note)) in html for note in page.notes)  # every page says what is missing
    assert 'href="page-2.html" rel="next"' in pages[0] and 'rel="prev"' not in pages[0]
    assert 'href="index.html" rel="prev"' in pages[1] and 'href="page-3.html" rel="next"' in pages[1]
    assert 'rel="next"' not in pages[2] and pages[2].count('data-failed="1"') == 1
    assert "not in this run" in pages[2] and "not in this run" not in pages[0]  # questions 121-125: instruct only


def test_a_small_run_stays_one_page_without_a_pager(scored_runs, tmp_path):
    page = build_view([scored_runs / BASE_SEED1], tmp_path / "view")
    assert page.pages == 1 and not (tmp_path / "view" / "page-2.html").exists()
    assert 'class="pager"' not in page.index.read_text(encoding="utf-8")
    result = cli("view", scored_runs / BASE_SEED1, "-o", tmp_path / "paged", "--page-size", "100")
    assert result.exit_code == 0, result.output
    assert f"125 questions from 1 run(s) on 2 pages: {(tmp_path / 'paged' / 'index.html').resolve().as_uri()}" in result.output
