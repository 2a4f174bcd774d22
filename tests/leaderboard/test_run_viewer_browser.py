"""`evalsuite view` in Debian's Chromium (headless, Playwright, over HTTP on 127.0.0.1): the filters, two runs side by
side, and a screenshot of a known example's trajectory."""

from __future__ import annotations

import functools
import http.server
import io
import threading
from pathlib import Path

import pytest
from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1
from test_leaderboard_browser import browser, page  # noqa: F401 - the same Chromium and page fixtures as the site's

from evalsuite.leaderboard.viewer import build_view

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def view_url(scored_runs: Path, tmp_path_factory):
    built = build_view([scored_runs / BASE_SEED1, scored_runs / INSTRUCT_SEED1], tmp_path_factory.mktemp("view") / "view")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built.index.parent)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
    httpd.shutdown()
    httpd.server_close()


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
