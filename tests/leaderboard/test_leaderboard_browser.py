"""The built site in a real browser: Debian's Chromium, headless, driven by Playwright, over HTTP on 127.0.0.1."""

from __future__ import annotations

import contextlib
import functools
import http.server
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from leaderboard_support import REPO, XSS_NAME

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
INSTALL_HINT = "install it with: apt-get update && apt-get install -y chromium  (and pip install playwright)"


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.is_file():
        pytest.skip(f"the browser tests need Debian's Chromium at {CHROMIUM}; {INSTALL_HINT}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(f"the browser tests need the Playwright package (the [test] extra); {INSTALL_HINT}")
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@contextlib.contextmanager
def serve(directory: Path):
    """A real HTTP server on 127.0.0.1 for `directory`, for the block."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output clean
            pass

    handler = functools.partial(Quiet, directory=str(directory))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def server(built_site: Path):
    with serve(built_site) as url:
        yield url


LONG_NAME = "An evalsuite run whose long entry name has many words to wrap inside the termination and cost table"


@pytest.fixture(scope="module")
def own_run_site(tmp_path_factory, site_results: Path, trajectories_dir: Path, benchmarks_dir: Path) -> Path:
    """The seeded site plus an evalsuite run (replayed Bamboogle, long name): its termination and cost table is the
    one whose names once broke into one fragment per line."""
    import shutil

    from evalsuite.leaderboard import add_submission
    from evalsuite.leaderboard.site import build_site

    from leaderboard_support import BASE_SEED1

    tmp = tmp_path_factory.mktemp("own-run-site")
    board = tmp / "leaderboard"
    shutil.copytree(site_results, board)
    # in a process of its own: Playwright's loop is running in this one, and a run starts its own
    for args in (
        ["run", "--backend", "replay", "--model", trajectories_dir / f"{BASE_SEED1}.json", "--retriever", "replay",
         "--tasks", "bamboogle", "--data-dir", benchmarks_dir, "-o", tmp / "run"],
        ["submit", tmp / "run", "-o", tmp / "sub", "--name", LONG_NAME, "--method", "Search-R1", "--model", "replay",
         "--training-reward", "none: the published checkpoint's outputs replayed"],
    ):
        done = subprocess.run([sys.executable, "-m", "evalsuite", *map(str, args)], capture_output=True, text=True,
                              timeout=600, cwd=REPO)
        assert done.returncode == 0, done.stdout + done.stderr
    add_submission(tmp / "sub", board, benchmarks_dir)
    build_site(board, tmp / "site", benchmarks_dir)
    return tmp / "site"


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
    setting = setting_with(page, "e5 · top-3")
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
    # (the script-named entry holds the instruct entry's outputs: the two tie)
    assert all(g == sorted(g, reverse=True) for g in groups)
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
    table = setting_with(page, "e5 · top-3") + "-em"
    header = page.locator(f"#{table} thead th[data-key='bamboogle'] button")
    header.click()
    assert page.get_attribute(f"#{table} thead th[data-key='bamboogle']", "aria-sort") == "descending"
    assert page.problems == []


def test_every_badge_says_what_was_proven_and_what_was_declared(page, server, tmp_path: Path):
    """Issues 26 and 37: next to each verified badge, the site names what was recomputed, what the submission's own
    files agree on and what is declared; a setting the manifests do not state (imported outputs) is declared."""
    page.goto(f"{server}/index.html")
    table = setting_with(page, "e5 · top-3") + "-em"
    statuses = page.eval_on_selector_all(f"#{table} tbody tr.verified td.status", "cells => cells.map(c => c.innerText)")
    assert len(statuses) == 3
    for text in statuses:
        assert text.splitlines()[0].lower() == "verified"  # the badge (CSS upper-cases it)
        assert "recomputed: scores, splits" in text
        # The seeded entries and the test entries are imported outputs: their setting is the submitter's word.
        # their manifests name the method (the files agree on it), nothing else of the setting
        assert "consistent (the submission's files agree; claims, not evidence): method · " in text
        assert "declared: corpus, retriever, top-k, turn limit, model, training data" in text
        assert "recorded by the runs" not in text and "proven" not in text
    proof = page.locator(f"#{table} tbody tr.verified td.status .proof >> nth=0")
    assert proof.is_visible()  # shown by default, not behind a tooltip or the intervals switch
    page.screenshot(path=str(tmp_path / "badges.png"), full_page=True)
    page.locator(f"#{table} th.name a >> nth=0").click()
    page.wait_for_load_state("load")
    block = page.inner_text("#entry-proof")
    assert "Recomputed\nscores from the predictions against the registry's gold answers" in block
    assert "Declared\ncorpus, retriever, top-k, turn limit, model, training data" in block
    page.screenshot(path=str(tmp_path / "entry-proof.png"))
    assert page.problems == []


# Issue 39 item 12: the pages at a 1280-px window, measured. A table fits the window or scrolls inside its own box
# (the page itself never scrolls sideways); a name wraps only between words; a chart's text lies inside its image.
FITS = """() => {
    const width = document.documentElement.clientWidth;
    const page = document.documentElement.scrollWidth;
    const tables = Array.from(document.querySelectorAll('table')).map(t => {
        const box = t.parentElement;
        const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX);
        return {id: t.id, right: t.getBoundingClientRect().right, boxRight: box.getBoundingClientRect().right, scrolls};
    });
    return {width, page, tables};
}"""

# For each entry name in a shown table (other metrics' tables are hidden): the words split across two lines (a word with more than one line box) and the
# cell's width in px.
NAME_WRAPS = """() => Array.from(document.querySelectorAll('table th.name')).filter(th => th.offsetParent !== null).map(th => {
    const split = [];
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const re = /\\S+/g;
        let m;
        while ((m = re.exec(node.data)) !== null) {
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
            if (lines.size > 1) split.push(m[0]);
        }
    }
    return {name: th.textContent.trim().slice(0, 60), width: th.getBoundingClientRect().width, split};
})"""

SVG_TEXT = """() => {
    const svg = document.querySelector('svg');
    const width = svg.viewBox.baseVal.width || svg.width.baseVal.value;
    return Array.from(svg.querySelectorAll('g[id^="text_"]')).map(g => { const b = g.getBBox(); return [b.x, b.x + b.width, width]; });
}"""


def check_geometry(page, where: str) -> None:
    fits = page.evaluate(FITS)
    assert fits["page"] <= fits["width"], f"{where}: the page scrolls sideways ({fits['page']} > {fits['width']} px)"
    for table in fits["tables"]:
        fitted = table["right"] <= fits["width"] + 0.5
        assert fitted or (table["scrolls"] and table["boxRight"] <= fits["width"] + 0.5), (where, table)
    for name in page.evaluate(NAME_WRAPS):
        assert name["split"] == [], f"{where}: {name['name']!r} breaks inside {name['split']}"
        assert name["width"] >= 150, f"{where}: {name['name']!r} squeezed to {name['width']:.0f} px"


def test_tables_fit_or_scroll_names_wrap_between_words_and_charts_keep_their_text(browser, own_run_site: Path):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    entries = [f"entries/{p.parent.name}/index.html" for p in (own_run_site / "entries").glob("*/index.html")]
    pages = ["index.html", "methods.html", *entries]
    assert len(entries) >= 6
    with serve(own_run_site) as url:
        for name in pages:
            page.goto(f"{url}/{name}")
            check_geometry(page, name)
        # the termination and cost table (the one whose names broke per fragment) is on the front page, measured
        page.goto(f"{url}/index.html")
        cost = page.locator("table.cost th.name", has_text=LONG_NAME)
        assert cost.count() == 1
        box = cost.bounding_box()
        line = float(page.evaluate("el => parseFloat(getComputedStyle(el).lineHeight)", cost.element_handle()))
        assert box["width"] >= 150 and box["height"] / line <= 6, (box, line)  # 18 words in at most 6 lines
        charts = sorted((own_run_site / "charts").glob("*.svg"))
        assert charts
        for chart in charts:
            page.goto(f"{url}/charts/{chart.name}")
            boxes = page.evaluate(SVG_TEXT)
            assert boxes, chart.name
            for left, right, width in boxes:
                assert -0.5 <= left and right <= width + 0.5, f"{chart.name}: text from {left:.1f} to {right:.1f} of {width}"
    context.close()


def test_every_entry_card_states_its_training_reward_and_turn_limit(page, server, built_site: Path):
    """Issue 40: an entry's card says what it was trained on and whether it searched (declared, said so)."""
    for path in (built_site / "entries").glob("*/index.html"):
        page.goto(f"{server}/entries/{path.parent.name}/index.html")
        assert page.inner_text("#entry-training-reward").endswith("(declared)")
        assert page.inner_text("#entry-max-turns")
    page.goto(f"{server}/index.html")
    lines = page.eval_on_selector_all("table.board tr.verified th.name .trained", "els => els.map(e => e.innerText)")
    assert lines and all(line.startswith("training reward: ") and " · max_turns " in line for line in lines)
    assert page.problems == []
