"""`evalsuite view` in Debian's Chromium (headless, Playwright, over HTTP on 127.0.0.1): the filters, two runs side by
side, a screenshot of a known example's trajectory, pages that link to each other with what is missing said on each,
and (slow) a 50,000-example run."""

from __future__ import annotations

import contextlib
import functools
import http.server
import io
import json
import threading
from pathlib import Path

import pytest
from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1
from test_leaderboard_browser import browser, page  # noqa: F401 - the same Chromium and page fixtures as the site's
from test_run_viewer import partial_copy

from evalsuite.leaderboard.viewer import build_view

pytestmark = pytest.mark.browser


@contextlib.contextmanager
def served(folder: Path):
    """`folder` over HTTP on 127.0.0.1 (a free port); yields its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def view_url(scored_runs: Path, tmp_path_factory):
    built = build_view([scored_runs / BASE_SEED1, scored_runs / INSTRUCT_SEED1], tmp_path_factory.mktemp("view") / "view")
    with served(built.index.parent) as base:
        yield base + "index.html"


def shown(page) -> int:
    return page.eval_on_selector_all("article.question", "all => all.filter(a => !a.hidden).length")


def test_the_filters_hide_and_show_questions(page, view_url):  # noqa: F811
    page.goto(view_url)
    assert page.inner_text("#shown") == "125 of 125 shown"
    page.check("#only-wrong")  # a question is wrong when either run's EM is below 1
    wrong = shown(page)
    assert 0 < wrong < 125 and page.inner_text("#shown") == f"{wrong} of 125 shown"
    page.uncheck("#only-wrong")
    page.select_option("#metric", "n_searches")
    page.fill("#metric-min", "3")  # a question where some run searched 3 or more times
    many = shown(page)
    assert 0 < many < 125
    page.fill("#metric-min", "")
    page.check("#only-failed")  # no example of these recorded runs failed
    assert shown(page) == 0
    assert page.problems == []


def test_a_screenshot_shows_a_known_examples_trajectory_side_by_side(page, view_url, tmp_path):  # noqa: F811
    from PIL import Image

    page.goto(view_url)
    first = page.locator("#q-1")
    base, instruct = first.locator("section.run-cell").all()
    # Bamboogle test_0 (gold: james madison): the base run searched once and said Thomas Jefferson, the instruct
    # run searched twice and said James Madison
    assert base.locator("p.query").all_inner_texts() == ["search: president of the United States in the year that Citibank was founded"]
    assert instruct.locator("p.query").all_inner_texts() == ["search: Citibank was founded", "search: president of the United States in 1812"]
    first.scroll_into_view_if_needed()
    # The trajectory is on screen, the two columns side by side (same top, instruct to the right), nothing on top of it
    left, right = base.bounding_box(), instruct.bounding_box()
    assert abs(left["y"] - right["y"]) < 2 and right["x"] >= left["x"] + left["width"]
    query = instruct.locator("p.query").nth(1)
    box = query.bounding_box()
    on_top = page.evaluate("([x, y]) => document.elementFromPoint(x, y).textContent", [box["x"] + 5, box["y"] + box["height"] / 2])
    assert on_top == "search: president of the United States in 1812"
    shot = tmp_path / "q1.png"
    first.screenshot(path=str(shot))
    image = Image.open(io.BytesIO(shot.read_bytes())).convert("L")
    assert image.width >= left["width"] + right["width"]
    # the query's own strip of the screenshot holds drawn text (dark pixels), not an empty box
    top = int(box["y"] - first.bounding_box()["y"])
    strip = image.crop((int(box["x"] - first.bounding_box()["x"]), top, int(box["x"] - first.bounding_box()["x"] + box["width"]), top + int(box["height"])))
    dark = sum(1 for value in strip.getdata() if value < 128)
    assert dark > 200, dark
    assert page.problems == []


def test_pages_link_to_each_other_and_each_says_what_is_missing(page, scored_runs, tmp_path):  # noqa: F811
    # a run still being written (120 of 125, the 111th failed) beside a whole run, 50 questions a page
    partial = partial_copy(scored_runs / BASE_SEED1, tmp_path / "partial", keep=120, fail=110)
    built = build_view([partial, scored_runs / INSTRUCT_SEED1], tmp_path / "view", page_size=50)
    with served(built.index.parent) as base:
        page.goto(base + "index.html")
        assert page.inner_text("#shown") == "50 of 50 shown"
        assert page.locator("ul.missing li").all_inner_texts() == built.notes and len(built.notes) == 3
        assert page.locator("article.question").first.get_attribute("id") == "q-1"
        page.locator("nav.pager").first.get_by_role("link", name="next ›").click()
        page.wait_for_url(base + "page-2.html")
        assert page.locator("article.question").first.get_attribute("id") == "q-51"
        assert page.inner_text("#shown") == "50 of 50 shown"
        page.locator("nav.pager").first.get_by_role("link", name="3", exact=True).click()
        page.wait_for_url(base + "page-3.html")
        assert page.inner_text("#shown") == "25 of 25 shown"
        page.check("#only-failed")  # the failed example is on page 3, as the note says
        assert shown(page) == 1 and "failed: backend error: connection reset" in page.inner_text("article.question:not([hidden])")
        assert page.locator("ul.missing li").all_inner_texts() == built.notes
        assert page.locator("p.absent").count() == 5  # questions 121-125: only the whole run has them
    assert page.problems == []


def big_run(source: Path, out: Path, n: int) -> Path:
    """A run of `n` examples: `source`'s records repeated under new ids (their trajectories and passages as they are)."""
    lines = (source / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    out.mkdir(parents=True)
    for name in ("manifest.json", "metrics.json"):
        (out / name).write_bytes((source / name).read_bytes())
    with open(out / "predictions.jsonl", "w", encoding="utf-8") as handle:
        for k in range(n):
            record = json.loads(lines[k % len(lines)])
            record["id"] = f"{record['id']}-{k // len(lines)}"
            handle.write(json.dumps(record) + "\n")
    return out


@pytest.mark.slow
def test_a_50k_example_run_opens_one_page_at_a_time(page, scored_runs, tmp_path):  # noqa: F811
    run = big_run(scored_runs / BASE_SEED1, tmp_path / "big", 50_000)
    built = build_view([run], tmp_path / "view")
    assert (built.questions, built.pages) == (50_000, 250)
    # each page holds 200 questions with their passages: about a megabyte, not the run's hundreds
    assert max(p.stat().st_size for p in (tmp_path / "view").glob("*.html")) < 3_000_000
    with served(built.index.parent) as base:
        page.goto(base + "index.html")
        assert page.inner_text("#shown") == "200 of 200 shown"
        assert "page 1 of 250" in page.inner_text("header.site nav")
        page.locator("nav.pager").first.get_by_role("link", name="250", exact=True).click()
        page.wait_for_url(base + "page-250.html")
        last = page.locator("article.question").last
        assert last.get_attribute("id") == "q-50000" and "questions 49801–50000 of 50000" in page.inner_text("nav.pager")
    assert page.problems == []
