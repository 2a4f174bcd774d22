"""`evalsuite leaderboard build`: render the leaderboard folder into a static site (Jinja2, vanilla JS/CSS, no CDN).

Every entry is verified again while building, so the site shows only scores recomputed from predictions
against the registry's gold answers. All submitted text goes through Jinja2's autoescaping; the JavaScript
never writes HTML (only reorders and hides rows), and a Content-Security-Policy forbids inline script.
Links are relative, so the site works from `file://` and from any static host.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalsuite.errors import DataError, EvalsuiteError, require
from evalsuite.leaderboard.results import resolve_leaderboard_dir, scan_entries
from evalsuite.leaderboard.standings import (
    COST_METRICS,
    Entry,
    cost_name,
    cost_table,
    averaged_columns,
    entry_average,
    group_label,
    leaderboard_metrics,
    reported_tables,
    split_column_header,
    split_columns,
    task_columns,
    task_label,
    verified_table,
)
from evalsuite.leaderboard.verify import verify_submission
from evalsuite.metrics.registry import get_metric, summary_metrics
from evalsuite.registry import canonical_name
from evalsuite.resources import site_dir
from evalsuite.runs import ExampleRecord
from evalsuite.runs.comparable import Use, names_for

MARKER = ".evalsuite-site"
SETTINGS_FILE = "site.yaml"
# What a run card shows of a manifest: the comparable settings the site shows (runs.comparable; each named as its
# Manifest field), and what the run is and where it came from.
MANIFEST_FIELDS = (
    *names_for(Use.SITE),
    "kind",
    "metric_convention",
    "evalsuite_version",
    "git_commit",
    "git_dirty",
    "created_at",
    "source",
    "notes",
)


@dataclass
class SiteSummary:
    entries: int
    settings: int
    pages: int
    source: Path
    # What interrupted `leaderboard add` runs left in the leaderboard folder, one line each
    # (the entries were still found).
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.entries} entries from {self.source} in {self.settings} settings, {self.pages} pages"


class SiteSettings(BaseModel):
    """`<leaderboard>/site.yaml`: what the site calls itself and how it pages examples."""

    model_config = ConfigDict(extra="forbid")
    title: str = "evalsuite leaderboard"
    heading: str = "Search-augmented QA agents: leaderboard"
    page_size: int = Field(25, ge=1)


def load_settings(leaderboard_dir: Path) -> SiteSettings:
    """Read site.yaml (all fields optional; a missing file means the defaults)."""
    path = leaderboard_dir / SETTINGS_FILE
    if not path.is_file():
        return SiteSettings()
    try:
        return SiteSettings.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML ({exc})", hint="fix the syntax at the line shown") from None
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise DataError(f"{path}: {where}", hint=f"known fields: {', '.join(SiteSettings.model_fields)}") from None


@dataclass(frozen=True)
class UnverifiedEntry:
    """A filed entry whose gold answers are not available here (offline, no --data-dir): listed on the site as
    "not re-verified here", without scores, instead of stopping the build."""

    id: str
    name: str
    method: str
    model: str
    missing: str  # the gold splits not found, e.g. "bamboogle/test"


def missing_gold(report) -> list[str] | None:
    """The `task/split` gold files a report could not load, when that is its only problem; else None."""
    missing = [re.search(r"cannot load the registry's (\S+):", p.message) for p in report.problems]
    if (
        not report.problems
        or report.info is None
        or not all(p.check == "gold" and m for p, m in zip(report.problems, missing))
    ):
        return None
    return sorted({m.group(1) for m in missing if m})


def load_entries(
    leaderboard_dir: Path, data_dir: str | Path | None
) -> tuple[list[Entry], list[str], list[UnverifiedEntry]]:
    """Re-verify every filed entry; a half-written entry or one that no longer verifies stops the build, naming
    it. An entry whose only problem is gold data missing here is set aside as not re-verified. Also returns the
    notes on leftovers of interrupted filings."""
    from evalsuite.console import progress

    scan = scan_entries(leaderboard_dir)
    if scan.broken:
        raise EvalsuiteError(
            "; ".join(scan.broken),
            hint="restore the entry from git or file it again with `evalsuite leaderboard add --overwrite`",
        )
    entries, unverified = [], []
    with progress() as bars:
        bar = bars.add_task("verify entries", total=len(scan.entries))
        for identifier, path in scan.entries.items():
            report = verify_submission(path, data_dir)
            if (missing := missing_gold(report)) is not None:
                info = report.info
                assert info is not None  # missing_gold answers only for a report that read the submission's info
                unverified.append(
                    UnverifiedEntry(identifier, info.name, info.method, info.model.name, ", ".join(missing))
                )
                bars.advance(bar)
                continue
            if not report.accepted:
                raise EvalsuiteError(
                    f"leaderboard entry {path} does not verify: " + "; ".join(report.problem_lines()[:3]),
                    hint=f"run `evalsuite leaderboard verify {path}` for the full report (is --data-dir set?)",
                )
            entries.append(Entry(identifier, path, report))
            bars.advance(bar)
    return entries, scan.notes, unverified


def unverified_note(unverified: list[UnverifiedEntry]) -> str | None:
    """One line for the entries set aside: how many, which gold files are missing, and how to supply them."""
    if not unverified:
        return None
    missing = sorted({m.strip() for e in unverified for m in e.missing.split(",")})
    return (
        f"{len(unverified)} entries not re-verified here (gold answers not found: {', '.join(missing)}): listed "
        "without scores; pass --data-dir DIR, or fetch them with `evalsuite data download` (offline: --from DIR)"
    )


def _environment():
    jinja2 = require("jinja2", "site", "building the leaderboard site")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(site_dir() / "templates")),
        autoescape=True,  # every template, whatever its name: submitted text is always escaped
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pretty_json"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    env.filters["unbroken_words"] = unbroken_words
    return env


def unbroken_words(text: str) -> Any:
    """`text` escaped, each hyphenated word in a `span.word` that never wraps: browsers break lines after a hyphen, so
    "pre-registered" or "Qwen2.5-Coder-0.5B" would otherwise split across two lines of a name cell."""
    from markupsafe import Markup, escape  # jinja2's own dependency (the [site] extra)

    words = re.split(r"(\s+)", str(text))
    return Markup("").join(Markup('<span class="word">{}</span>').format(w) if "-" in w else escape(w) for w in words)


def _prepare_output(out_dir: Path) -> None:
    # Only a directory this builder made (or an empty one) is wiped, never an arbitrary folder.
    if out_dir.exists():
        if not out_dir.is_dir():
            raise EvalsuiteError(f"{out_dir} exists and is not a directory")
        if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
            raise EvalsuiteError(
                f"{out_dir} is not empty and was not built by evalsuite", hint="choose an empty or new -o directory"
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    (out_dir / MARKER).write_text("built by evalsuite leaderboard build\n", encoding="utf-8")
    shutil.copytree(site_dir() / "static", out_dir / "assets")


def _write(env, template: str, path: Path, **context) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(env.get_template(template).render(**context), encoding="utf-8")


def _plot(entry: Entry, metric: str, path: Path) -> Path | None:
    """The entry's per-benchmark headline metric with 95% intervals, drawn by evalsuite.tables.plots."""
    from evalsuite.stats import SystemScores, compare
    from evalsuite.tables.plots import plot_bars

    tasks = [t for t in task_columns([entry]) if entry.has(t, metric)]
    if not tasks or all(entry.summary(t, metric).mean == 0 for t in tasks):
        return None  # nothing to draw, or only zeros: a chart carries no information the table does not
    # The entry id (a slug) labels the plot: submitted names could hold characters matplotlib treats as markup.
    system = SystemScores(entry.id, {t: entry.scores(t, metric) for t in tasks})
    return plot_bars(compare([system], baseline=entry.id, metric=metric, n_resamples=2000), [entry.id], path)


TOP_IN_CHART = 5


def _top_entries_chart(members: list[Entry], metric: str, path: Path) -> Path | None:
    """The front page's chart of a setting: the top entries of its first rank group (by their Avg over the same
    whole task splits, as the table ranks them) per column, with the 95% intervals of the recomputed scores. A
    subset column never gets a bar, and a chart whose bars would all be zero (it carries no information) is not
    drawn: None."""
    from evalsuite.tables.plots import plot_top_entries

    columns = split_columns(members)
    ranked = [(e, entry_average(e, metric, columns)) for e in members]
    groups = {group_label(averaged_columns(e, metric, columns)) for e, avg in ranked if avg is not None}
    if not groups:
        return None
    # the table's first group: averaged over the most columns (rank_order's order)
    first = min(groups, key=lambda g: (-len(g.split(", ")), g))
    group = [
        (e, avg) for e, avg in ranked if avg is not None and group_label(averaged_columns(e, metric, columns)) == first
    ]
    top = [e for e, _ in sorted(group, key=lambda item: -(item[1] or 0.0))[:TOP_IN_CHART]]
    shown = averaged_columns(top[0], metric, columns)
    series = {}
    for entry in top:
        assert entry.report.info is not None
        label = (
            entry.report.info.name if entry.report.info.name not in series else f"{entry.report.info.name} ({entry.id})"
        )
        series[label] = {c.key: entry.summary(c.task, metric) for c in shown}
    if all(s.mean == 0 for by_column in series.values() for s in by_column.values()):
        return None
    title = (
        f"top {len(top)} of {len(group)} entr{'y' if len(group) == 1 else 'ies'} averaged over the same "
        f"{len(shown)} task split{'s' if len(shown) != 1 else ''}: {metric} per benchmark, 95% intervals"
    )
    labels = [split_column_header(c).label for c in shown]
    return plot_top_entries(series, [c.key for c in shown], metric, path, title, tick_labels=labels)


def _headline(entries: list[Entry], metrics: dict[str, str]) -> str:
    """The metric a chart shows: the first leaderboard metric (EM), or EM avg@K when a sampled run is among the
    entries (one-trajectory entries show their EM there as K = 1)."""
    first = next(iter(metrics))
    sampled = any(e.samples(t) > 1 for e in entries for t in e.report.tasks)
    return f"{first}_avg" if sampled and f"{first}_avg" in metrics else first


def _turn_views(record: ExampleRecord) -> list[dict]:
    return [
        {
            "think": " … ".join(t.think),
            "query": t.query,
            "sub_queries": t.sub_queries,
            "answer": t.answer,
            "invalid": t.invalid_action,
            "passages": [{"title": p.title, "text": p.text} for p in t.passages],
        }
        for t in record.turns
    ]


def _example_pages(env, entry: Entry, out: Path, page_size: int, nav: dict) -> int:
    pages = 0
    for task, verified in entry.report.tasks.items():
        records = verified.records
        total = max(1, -(-len(records) // page_size))
        for page in range(1, total + 1):
            chunk = records[(page - 1) * page_size : page * page_size]
            examples = [
                {"record": r, "turns": _turn_views(r), "index": (page - 1) * page_size + i + 1}
                for i, r in enumerate(chunk)
            ]
            _write(
                env,
                "examples.html.j2",
                out / task / f"page-{page}.html",
                root="../../../",
                entry=entry,
                info=entry.report.info,
                task=task,
                task_name=task_label(task),
                split=verified.split,
                page=page,
                total=total,
                examples=examples,
                n=len(records),
                metric_names=leaderboard_metrics(),
                nav=nav,
                samples=entry.samples(task),
            )
            pages += 1
    return pages


@dataclass(frozen=True)
class ShownMetric:
    """A column of an entry page's score table: the metric's name in the summary, its label, whether it is ×100."""

    name: str
    label: str
    percent: bool


def _entry_columns(entry: Entry) -> list[ShownMetric]:
    """The entry page's score columns: the summary metrics, or for a sampled run each one's avg@K, then maj@K and
    pass@K of EM, with K shown."""
    ks = sorted({entry.samples(t) for t in entry.report.tasks})
    if ks == [1]:
        return [ShownMetric(m.name, m.label, bool(m.percent)) for m in summary_metrics()]
    k = "/".join(map(str, ks))
    shown = [ShownMetric(f"{m.name}_avg", f"{m.label} avg@{k}", bool(m.percent)) for m in summary_metrics()]
    return (
        shown[:1]
        + [
            ShownMetric("em_maj", f"{shown[0].label.split(' avg@')[0]} maj@{k}", True),
            *(ShownMetric(f"em_pass@{kk}", f"EM pass@{kk}", True) for kk in ks),
        ]
        + shown[1:]
    )


def _entry_context(entry: Entry) -> dict:
    manifests = {
        name: {
            "fields": {k: v for k, v in m.model_dump().items() if k in MANIFEST_FIELDS and v not in (None, {}, [], "")},
            "full": m.model_dump(),
        }
        for name, m in entry.report.manifests.items()
    }
    columns = _entry_columns(entry)
    tasks: list[dict[str, Any]] = [
        {
            "task": t,
            "name": task_label(t),
            "split": v.split,
            "run": v.run,
            "n": v.summary.n,
            "n_failed": v.summary.n_failed,
            "data_source": Path(v.data_source).name,
            "data_sha256": v.data_sha256,
            "samples": entry.samples(t),
            "metrics": {m.name: v.summary.metrics.get(m.name) for m in columns},
            "cost": {m: v.summary.metrics.get(cost_name(entry, t, m)) for m in COST_METRICS},
        }
        for t in task_columns([entry])
        if (v := entry.report.tasks.get(t)) is not None
    ]
    cost = [get_metric(m) for m in COST_METRICS if any(t["cost"][m] is not None for t in tasks)]
    return {
        "manifests": manifests,
        "tasks": tasks,
        "columns": columns,
        "cost_columns": cost if any(m.name != "n_searches" for m in cost) else [],
    }


def _methods(entries: list[Entry], reported: dict) -> list[dict]:
    """The methods page: entries and papers per method, one group per method whatever its spelling (`Search-R1`,
    `search_r1` and `search-r1` are one method, shown as first spelled)."""
    methods: dict[str, dict] = defaultdict(lambda: {"name": "", "entries": [], "papers": set(), "links": set()})

    def item(name: str) -> dict:
        group = methods[canonical_name(name)]
        group["name"] = group["name"] or name
        return group

    for entry in entries:
        info = entry.report.info
        assert info is not None
        group = item(info.method)
        group["entries"].append(entry)
        if info.paper:
            group["links"].add(info.paper)
    for row in (row for table in reported.values() for row in table.rows):
        item(row.method)["papers"].add(row.citation)
    return [
        {"name": v["name"], "entries": v["entries"], "papers": sorted(v["papers"]), "links": sorted(v["links"])}
        for _, v in sorted(methods.items())
    ]


def setting_order(item: tuple[str, list[Entry]]) -> tuple[int, str]:
    """Settings with the most entries first (where a reader compares the most), then by key: a single CPU-scale
    reproduction in a setting of its own never heads the page above the paper-scale comparisons."""
    key, members = item
    return -len(members), key


def build_site(
    leaderboard_dir: str | Path | None,
    out_dir: str | Path,
    data_dir: str | Path | None = None,
    page_size: int | None = None,
    reported_root: str | Path | None = None,
) -> SiteSummary:
    """Build the whole site from a leaderboard folder (entries/, site.yaml; default: ./leaderboard, else the shipped
    one) and the transcribed paper tables (default: the ones shipped with evalsuite)."""
    leaderboard_dir, out_dir = resolve_leaderboard_dir(leaderboard_dir), Path(out_dir)
    settings_file = load_settings(leaderboard_dir)
    page_size = page_size or settings_file.page_size
    env = _environment()
    env.globals["site"] = settings_file
    entries, notes, unverified = load_entries(leaderboard_dir, data_dir)
    if (note := unverified_note(unverified)) is not None:
        notes = [*notes, note]
    reported = reported_tables(Path(reported_root) if reported_root else None)
    by_setting: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        assert entry.report.info is not None
        by_setting[entry.report.setting_key()].append(entry)
    metrics = leaderboard_metrics(entries)
    settings: list[dict[str, Any]] = [
        {
            "key": key,
            "slug": f"setting-{i + 1}",
            "tables": [verified_table(members, m, label=label) for m, label in metrics.items()],
            "cost": cost_table(members),
            "n": len(members),
            "members": members,
        }
        for i, (key, members) in enumerate(sorted(by_setting.items(), key=setting_order))
    ]
    _prepare_output(out_dir)
    for setting in settings:
        members = setting.pop("members")
        headline = _headline(members, metrics)
        chart = _top_entries_chart(members, headline, out_dir / "charts" / f"{setting['slug']}-{headline}.svg")
        setting["chart"] = f"charts/{chart.name}" if chart else None
        setting["chart_label"] = metrics[headline]
    nav = {"index": "index.html", "methods": "methods.html"}
    _write(
        env,
        "index.html.j2",
        out_dir / "index.html",
        root="",
        settings=settings,
        reported=[reported[m] for m in metrics if m in reported],
        metric_names=metrics,
        n_entries=len(entries),
        nav=nav,
        unverified=unverified,
        unverified_note=note,
    )
    _write(env, "methods.html.j2", out_dir / "methods.html", root="", methods=_methods(entries, reported), nav=nav)
    pages = 2
    for entry in entries:
        out = out_dir / "entries" / entry.id
        out.mkdir(parents=True, exist_ok=True)
        headline = _headline([entry], metrics)
        plot = _plot(entry, headline, out / f"plot-{headline}.svg")
        _write(
            env,
            "entry.html.j2",
            out / "index.html",
            root="../../",
            entry=entry,
            info=entry.report.info,
            plot=plot.name if plot else None,
            plot_label=metrics[headline],
            page_size=page_size,
            nav=nav,
            **_entry_context(entry),
        )
        pages += 1 + _example_pages(env, entry, out, page_size, nav)
    return SiteSummary(len(entries), len(settings), pages, leaderboard_dir, notes)
