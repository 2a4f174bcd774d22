"""The built site in a real browser: Debian's Chromium, headless, driven by Playwright, over HTTP on 127.0.0.1."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from leaderboard_support import XSS_NAME

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
INSTALL_HINT = "install it with: apt-get update && apt-get install -y chromium  (and pip install playwright)"


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file():
        pytest.fail(f"the browser tests need Debian's Chromium at {CHROMIUM}; {INSTALL_HINT}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail(f"the browser tests need the Playwright package; {INSTALL_HINT}")
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def server(built_site: Path):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output clean
            pass

    handler = functools.partial(Quiet, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.problems = []  # console errors, uncaught exceptions and dialogs (an alert() would be a script injection)
    page.on("console", lambda m: page.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: page.problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (page.problems.append(f"dialog: {d.message}"), d.dismiss()))
    yield page
    context.close()


def column_values(page, table: str, key: str) -> list[float | None]:
    """A column's values in row order (rank groups' heading rows left out)."""
    return [v for group in group_values(page, table, key) for v in group]


def group_values(page, table: str, key: str) -> list[list[float | None]]:
    """A column's values per rank group (one tbody each: rows are ranked only within their group)."""
    index = page.eval_on_selector(f"#{table} thead th[data-key='{key}']", "th => th.cellIndex")
    raw = page.eval_on_selector_all(
        f"#{table} tbody",
        f"bodies => bodies.map(b => Array.from(b.rows).filter(r => !r.classList.contains('group-head'))"
        f".map(r => r.cells[{index}].getAttribute('data-value')))")
    return [[float(v) if v else None for v in group] for group in raw]


def row_names(page, table: str) -> list[str]:
    return page.eval_on_selector_all(f"#{table} tbody tr th.name", "cells => cells.map(c => c.querySelector('a, span') ? c.firstElementChild.textContent : c.textContent)")


def setting_with(page, words: str) -> str:
    """The id of the one setting section whose heading holds `words` (settings sort by their number of entries, then
    by key, so their numbers move as entries are filed)."""
    ids = page.eval_on_selector_all("section.setting", f"ss => ss.filter(s => s.querySelector('h2').textContent.includes({words!r})).map(s => s.id)")
    assert len(ids) == 1, ids
    return ids[0]


def test_leaderboard_in_chromium(page, server, tmp_path: Path):
    page.goto(f"{server}/index.html")
    setting = setting_with(page, "top-3")
    table = f"{setting}-em"
    # Rows: the base seed-1 entry, the instruct seed-1 entry and the script-named entry.
    names = row_names(page, table)
    assert len(names) == 3 and XSS_NAME in names
    # The name is shown as text, and the page holds no script element but the site's own.
    xss_link = page.locator(f"#{table} th.name a", has_text="alert(1)")
    assert xss_link.inner_text() == XSS_NAME
    assert page.eval_on_selector_all("script", "s => s.map(e => e.getAttribute('src'))") == ["assets/leaderboard.js"]

    # Sort by Bamboogle: the first click orders best first, the second reverses it, each rank group on its own (the
    # base entry is averaged over NQ, TriviaQA and Bamboogle, the other two over Bamboogle alone).
    header = page.locator(f"#{table} thead th[data-key='bamboogle'] button")
    header.click()
    groups = group_values(page, table, "bamboogle")
    assert [len(g) for g in groups] == [1, 2]
    assert all(g == sorted(g, reverse=True) for g in groups) and groups[1][0] > groups[1][-1]
    assert page.get_attribute(f"#{table} thead th[data-key='bamboogle']", "aria-sort") == "descending"
    header.click()
    assert group_values(page, table, "bamboogle") == [sorted(g) for g in groups]
    # NQ's 1,000-question subsample (its own column: never ranked with the full test split): only the base entry
    # has it; empty cells stay last in either direction.
    page.locator(f"#{table} thead th[data-key='nq:test_sub1000'] button").click()
    nq = column_values(page, table, "nq:test_sub1000")
    assert nq[0] == pytest.approx(39.0) and nq[1:] == [None, None]

    # Filter and metric switch.
    page.fill("#row-filter", "instruct")
    visible = page.eval_on_selector_all(f"#{table} tbody tr.verified", "rows => rows.filter(r => !r.hidden).length")
    assert visible == 1
    page.fill("#row-filter", "")
    page.select_option("#metric-select", "f1")
    assert page.is_visible(f"#{setting}-f1") and not page.is_visible(f"#{table}")
    page.select_option("#metric-select", "em")
    page.screenshot(path=str(tmp_path / "leaderboard.png"), full_page=True)

    # Entry page of the script-named entry: escaped title and metadata, the plot, the example browser.
    xss_link.click()
    page.wait_for_load_state("load")
    assert page.inner_text("#entry-name").startswith(XSS_NAME)
    assert page.title().startswith(XSS_NAME)
    assert page.locator("figure.plot img").evaluate("img => img.complete && img.naturalWidth > 0")
    page.click("text=browse 125")
    page.wait_for_load_state("load")
    assert page.locator("article.example").count() == 25
    page.click("a[rel=next] >> nth=0")
    assert page.inner_text("article.example >> nth=0").startswith("#26")
    page.screenshot(path=str(tmp_path / "examples.png"))
    assert page.problems == []


def test_site_works_from_file_urls(page, built_site: Path):
    page.goto((built_site / "index.html").as_uri())
    table = setting_with(page, "top-3") + "-em"
    header = page.locator(f"#{table} thead th[data-key='bamboogle'] button")
    header.click()
    assert page.get_attribute(f"#{table} thead th[data-key='bamboogle']", "aria-sort") == "descending"
    assert page.problems == []


def test_every_badge_says_what_was_proven_and_what_was_declared(page, server, tmp_path: Path):
    """Issues 26 and 37: next to each verified badge, the site names what was recomputed, what the submission's own
    files agree on and what is declared; a setting the manifests do not state (imported outputs) is declared."""
    page.goto(f"{server}/index.html")
    table = setting_with(page, "top-3") + "-em"
    statuses = page.eval_on_selector_all(f"#{table} tbody tr.verified td.status", "cells => cells.map(c => c.innerText)")
    assert len(statuses) == 3
    for text in statuses:
        assert text.splitlines()[0].lower() == "verified"  # the badge (CSS upper-cases it)
        assert "recomputed: scores, splits" in text
        # The seeded entries and the test entries are imported outputs: their setting is the submitter's word.
        assert "declared: method, corpus, retriever, top-k, turn limit, model, training data" in text
        assert "consistent" not in text and "recorded by the runs" not in text
    proof = page.locator(f"#{table} tbody tr.verified td.status .proof >> nth=0")
    assert proof.is_visible()  # shown by default, not behind a tooltip or the intervals switch
    page.screenshot(path=str(tmp_path / "badges.png"), full_page=True)
    page.locator(f"#{table} th.name a >> nth=0").click()
    page.wait_for_load_state("load")
    block = page.inner_text("#entry-proof")
    assert "Recomputed\nscores from the predictions against the registry's gold answers" in block
    assert "Declared\nmethod, corpus, retriever, top-k, turn limit, model, training data" in block
    page.screenshot(path=str(tmp_path / "entry-proof.png"))
    assert page.problems == []


def test_the_cpu_scale_reproduction_has_a_setting_and_column_of_its_own(page, server, tmp_path: Path):
    """Issue 32: our own recipe's CPU-scale entry renders, labelled, in its own setting and on its own subset column,
    never in a table with the paper-scale entries."""
    page.goto(f"{server}/index.html")
    own = setting_with(page, "bm25")
    assert own != setting_with(page, "top-3")
    assert row_names(page, f"{own}-em") == ["search-r1 · gemma3-270m (CPU-scale reproduction)"]
    assert page.get_attribute(f"#{own}-em thead th[data-key='adqa:test@first:128']", "data-key") == "adqa:test@first:128"
    assert "(test, first 128)" in page.inner_text(f"#{own}-em thead th[data-key='adqa:test@first:128']")
    for other in (setting_with(page, "top-3"), setting_with(page, "top-5")):
        assert not any("CPU-scale" in name for name in row_names(page, f"{other}-em"))
    page.locator(f"#{own}-em th.name a").click()
    page.wait_for_load_state("load")
    assert "CPU-scale reproduction" in page.inner_text("#entry-name")
    assert "Training manifest sha256" in page.inner_text("body")
    page.screenshot(path=str(tmp_path / "cpu-entry.png"), full_page=True)
    assert page.problems == []
