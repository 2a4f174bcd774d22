"""Sampled (multi-seed) entries and termination/cost on the leaderboard site, asserted on the rendered HTML.

Entries: two real Search-R1 base runs of Bamboogle merged as seeds beside the seed-1 run alone (imports: no stop
reasons or token counts), and, in a setting of their own, replay runs of the recorded Bamboogle trajectories made
by `evalsuite run` (greedy, and K = 2 sampled), which record how each rollout ended and its tokens.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1, cli, info
from test_leaderboard_browser import browser  # noqa: F401  (the Chromium fixture)

from evalsuite.agent.config import RunConfig
from evalsuite.agent.runner import RunSpec, execute
from evalsuite.leaderboard import add_submission, pack_submission
from evalsuite.leaderboard.submission import Setting
from evalsuite.runs import RunDirectory
from evalsuite.stats import SystemScores, compare
from tests.conftest import skip_without_extra

BASE_UNSEEDED = "bamboogle_2026_04_24_16_17_search_r1_base"
REPLAY = Setting(retriever="replay", topk=3, max_turns=4)


def _replay_run(trajectories_dir: Path, benchmarks_dir: Path, recording: str, out: Path, samples: int = 1) -> Path:
    spec = RunSpec(model=str(trajectories_dir / f"{recording}.json"), backend="replay", tasks="bamboogle", out=out,
                   data_dir=str(benchmarks_dir), retriever="replay",
                   config=RunConfig(batch_size=64, samples=samples, temperature=0.7 if samples > 1 else 0.0, seed=3))
    execute(spec)
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory, trajectories_dir: Path, benchmarks_dir: Path) -> tuple[Path, dict[str, Path]]:
    """(the built site, the run directory of each entry id)."""
    skip_without_extra("site", "jinja2")  # the site's templates
    work = tmp_path_factory.mktemp("sampled-site")
    assert cli("score", *(trajectories_dir / f"{s}.json" for s in (BASE_UNSEEDED, BASE_SEED1)), "-o", work / "scored").exit_code == 0
    assert cli("merge", "--as-seeds", "--declared-seeds", work / "scored" / BASE_UNSEEDED, work / "scored" / BASE_SEED1, "-o", work / "two-seeds").exit_code == 0
    runs = {
        "base-seed-1": (work / "scored" / BASE_SEED1, info("base seed 1")),
        "base-two-seeds": (work / "two-seeds", info("base two seeds")),
        "replay-greedy": (_replay_run(trajectories_dir, benchmarks_dir, BASE_SEED1, work / "replay-greedy"),
                          info("replay greedy").model_copy(update={"setting": REPLAY})),
        "replay-sampled": (_replay_run(trajectories_dir, benchmarks_dir, INSTRUCT_SEED1, work / "replay-k2", samples=2),
                           info("replay sampled").model_copy(update={"setting": REPLAY})),
    }
    board = work / "leaderboard"
    for entry, (run, meta) in runs.items():
        add_submission(pack_submission([run], work / f"sub-{entry}", meta), board, data_dir=benchmarks_dir, entry=entry)
    out = work / "site"
    result = cli("leaderboard", "build", "--leaderboard", board, "-o", out, "--data-dir", benchmarks_dir)
    assert result.exit_code == 0, result.output
    return out, {entry: run for entry, (run, _) in runs.items()}


def _cell(index: str, table_id: str, row_name: str) -> str:
    """The first score cell's opening tag and text in `row_name`'s row of a table."""
    table = index[index.index(f'id="{table_id}"'):]
    table = table[: table.index("</table>")]
    row = table[table.index(f">{row_name}</a>"):]
    return re.search(r'<td class="num[^"]*"[^>]*>[^<]*', row[: row.index("</tr>")]).group(0)


def _per_question_em(run: Path) -> dict[str, float]:
    by_id: dict[str, list[float]] = {}
    for record in RunDirectory(run).read_predictions():
        by_id.setdefault(record.id, []).append(record.metrics["em"])
    return {q: float(np.mean(v)) for q, v in by_id.items()}


def test_sampled_metrics_get_tables_with_k_shown(site):
    out, _ = site
    index = (out / "index.html").read_text()
    options = re.findall(r'<option value="([^"]+)">([^<]+)</option>', index)
    assert ("em_avg", "EM avg@2") in options and ("em_maj", "EM maj@2") in options and ("em_pass@2", "EM pass@2") in options
    assert ("em", "EM") in options  # the one-trajectory tables stay


def test_an_avg_cell_is_the_mean_over_seeds_and_tested_per_question(site):
    out, runs = site
    index = html.unescape((out / "index.html").read_text())
    setting = next(m.group(1) for m in re.finditer(r'id="(setting-\d+)-em_avg"', index)
                   if "base two seeds" in index[m.start(): index.index("</table>", m.start())])
    two, one = _per_question_em(runs["base-two-seeds"]), _per_question_em(runs["base-seed-1"])
    multi = _cell(index, f"{setting}-em_avg", "base two seeds")
    assert f">{100 * np.mean(list(two.values())):.1f}" in multi and "K = 2 samples per question" in multi
    greedy = _cell(index, f"{setting}-em_avg", "base seed 1")
    assert f">{100 * np.mean(list(one.values())):.1f}" in greedy and "one trajectory per question (K = 1)" in greedy
    # The significance mark compares 125 per-question values (the multi-seed entry's avg@2), not 250 samples.
    scores = [SystemScores("base-seed-1", {"bamboogle": one}), SystemScores("base-two-seeds", {"bamboogle": two})]
    top, other = ("base-seed-1", "base-two-seeds") if np.mean(list(one.values())) >= np.mean(list(two.values())) else ("base-two-seeds", "base-seed-1")
    p = compare(scores, top, metric="em_avg", n_resamples=2000, n_permutations=2000).differences[(other, "bamboogle")].p_value
    below = multi if other == "base-two-seeds" else greedy
    assert f"Holm-adjusted p = {p:.3g}" in below


def test_termination_and_cost_table_for_runs_that_record_them(site):
    out, runs = site
    index = html.unescape((out / "index.html").read_text())
    assert index.count('class="board sortable cost"') == 1  # only the replay setting records stop reasons and tokens
    records = RunDirectory(runs["replay-sampled"]).read_predictions()
    answered = np.mean([np.mean([r.stop_reason == "answer" for r in records if r.id == q]) for q in dict.fromkeys(r.id for r in records)])
    table = index[index.index('class="board sortable cost"'):]
    row = table[table.index(">replay sampled</a>"): table.index("</tr>", table.index(">replay sampled</a>"))]
    cells = re.findall(r'<td class="num"[^>]*>([^<]*)</td>', row)
    assert cells[0] == "2" and cells[1] == f"{100 * answered:.1f}"
    searches = np.mean([r.metrics["n_searches"] for r in records])
    assert cells[5] == f"{searches:.1f}" and searches > 0
    # the replay backend reports no token counts (a real backend does): they sum to 0, shown as such
    assert cells[6] == f"{np.mean([sum(t.prompt_tokens or 0 for t in r.turns) for r in records]):.0f}"


def test_entry_and_example_pages_of_a_multi_seed_entry(site):
    out, _ = site
    entry = (out / "entries" / "base-two-seeds" / "index.html").read_text()
    header = entry[entry.index('id="entry-scores"'):entry.index("</thead>", entry.index('id="entry-scores"'))]
    assert "EM avg@2" in header and "EM maj@2" in header and "EM pass@2" in header and "F1 avg@2" in header
    page = (out / "entries" / "base-two-seeds" / "bamboogle" / "page-1.html").read_text()
    assert "250 trajectories (2 per question)" in page and "sample 2 of 2" in page
    replay = (out / "entries" / "replay-sampled" / "index.html").read_text()
    assert 'id="entry-cost"' in replay and "stopped: answer (%)" in replay
    assert 'id="entry-cost"' not in entry  # imported trajectories: no stop reasons, so no such table


@pytest.mark.browser
def test_metric_switch_to_avg_at_k_and_cost_table_in_chromium(site, browser):
    """Debian's Chromium (tests/leaderboard/test_leaderboard_browser.py's setup) on the built site from file://."""
    out, _ = site
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        page.goto((out / "index.html").as_uri())
        page.select_option("#metric-select", "em_avg")
        visible = page.eval_on_selector_all(".metric-block", "bs => bs.filter(b => !b.hidden).map(b => b.dataset.metric)")
        assert visible and set(visible) == {"em_avg"}
        assert page.is_visible("caption:has-text('EM avg@2 (%)')") and page.is_visible("table.cost")  # the cost table is never hidden
        cost = page.eval_on_selector("table.cost", "t => t.id")
        page.click(f"#{cost} thead th[data-key='n_searches'] button")
        assert page.get_attribute(f"#{cost} thead th[data-key='n_searches']", "aria-sort") == "descending"
        assert not problems, problems
    finally:
        context.close()
