"""The site's front page: a chart per setting of its top entries per benchmark, with the recomputed intervals."""

from __future__ import annotations

import evalsuite.tables.plots as plots
from evalsuite.leaderboard.site import TOP_IN_CHART, _top_entries_chart, load_entries
from evalsuite.leaderboard.standings import TaskSplit


def test_each_setting_has_its_chart_on_the_front_page(built_site):
    index = (built_site / "index.html").read_text(encoding="utf-8")
    charts = sorted(p.name for p in (built_site / "charts").iterdir())
    assert charts and all(name.endswith("-em.svg") for name in charts)
    for name in charts:
        assert f'<img src="charts/{name}"' in index
        assert (built_site / "charts" / name).read_text(encoding="utf-8").lstrip().startswith("<?xml")


def test_the_chart_draws_the_top_entries_by_their_mean_with_their_own_scores(site_results, benchmarks_dir, tmp_path, monkeypatch):
    entries, _, _ = load_entries(site_results, benchmarks_dir)
    drawn = {}
    monkeypatch.setattr(plots, "plot_top_entries", lambda series, tasks, metric, path, title, tick_labels: drawn.update(series=series, tasks=tasks, title=title))
    _top_entries_chart(entries, "em", tmp_path / "chart.svg")

    def mean(entry):
        values = [v.summary.metrics["em"].mean for v in entry.report.tasks.values()]
        return sum(values) / len(values)

    # Averages are ranked only over the same questions: the chart draws the rank group averaged over the most whole
    # splits (here the seed-1 reruns' NQ, TriviaQA and Bamboogle), never an entry averaged over other columns.
    def columns(entry):
        return frozenset((t, v.split) for t, v in entry.report.tasks.items() if "@" not in v.split)

    widest = max(len(columns(e)) for e in entries)
    group = [e for e in entries if len(columns(e)) == widest]
    assert len({columns(e) for e in group}) == 1 and len(group) < len(entries)
    noun = "entry" if len(group) == 1 else "entries"
    best_first = sorted(group, key=mean, reverse=True)[:TOP_IN_CHART]
    assert list(drawn["series"]) == [e.report.info.name for e in best_first]
    for entry in best_first:
        assert {t: s.mean for t, s in drawn["series"][entry.report.info.name].items()} == {
            TaskSplit(t, v.split).key: v.summary.metrics["em"].mean for t, v in entry.report.tasks.items()}
    assert drawn["title"].startswith(f"top {len(best_first)} of {len(group)} {noun} averaged over the same {widest}")
