"""`evalsuite view RUN [RUN…]`: a local, static page of every example of one or more run directories.

It reuses the leaderboard site's templates and assets (Jinja2 with autoescaping, a Content-Security-Policy that
forbids inline script, a script that only hides elements). Each question is one article: the question and gold
answers once, then one column per run with its prediction, metrics, turns (queries and passages) and protocol
errors, so two runs are read side by side on the same question. What a run lacks (still being written, failed
examples, questions the other runs do not have) is said in one line each, on the page and to the caller.

A large run is split into pages of `PAGE_SIZE` questions (`index.html`, `page-2.html`, …), each rendered on its own,
so a 50k-example run opens as fast as a small one and the browser never holds more than one page. Every page has the
same pager (neighbouring pages, first and last, and the page where each task starts), the notes, and the filters,
which act on the page shown.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.site import MARKER, _environment, _turn_views
from evalsuite.metrics.registry import summary_metrics
from evalsuite.resources import site_dir
from evalsuite.runs import ExampleRecord, RunDirectory
from evalsuite.runs.schema import METRICS_FILE, PREDICTIONS_FILE

Key = tuple[str, str]  # (task, example id)
# Questions per page: a page of 200 two-run questions with passages is a few MB, which Chromium lays out in well
# under a second; a whole 50k-example run on one page would be hundreds of MB.
PAGE_SIZE = 200


@dataclass
class ViewedRun:
    """One run directory as the viewer shows it: a short label unique among the runs viewed, its records, and a
    description of its setting (empty when the manifest is missing)."""

    label: str
    path: Path
    records: dict[Key, ExampleRecord]
    setting: str
    finished: bool
    has_metrics: bool

    def failed(self) -> int:
        return sum(1 for r in self.records.values() if r.status != "ok")


@dataclass
class RunViewPage:
    """What `build_view` wrote: the page, the runs and the one-line notes on what is missing."""

    index: Path
    runs: list[ViewedRun]
    questions: int
    notes: list[str] = field(default_factory=list)
    pages: int = 1


def short_labels(paths: list[Path]) -> list[str]:
    """The shortest trailing path parts that tell the runs apart (`run`, or `a/run` and `b/run`); a run given twice
    gets `#2`."""
    resolved = [p.resolve() for p in paths]
    distinct = list(dict.fromkeys(resolved))
    longest = max(len(p.parts) for p in distinct)
    depth = next(
        d for d in range(1, longest + 1) if d == longest or len({p.parts[-d:] for p in distinct}) == len(distinct)
    )
    seen: dict[Path, int] = {}
    out = []
    for path in resolved:
        seen[path] = seen.get(path, 0) + 1
        label = "/".join(path.parts[-depth:])
        out.append(label if seen[path] == 1 else f"{label} #{seen[path]}")
    return out


def _setting(directory: RunDirectory) -> tuple[str, bool]:
    """`method · model · backend` from the manifest, and whether the run finished; ("", False) without one."""
    if not directory.manifest_path.is_file():
        return "", False
    manifest = directory.read_manifest()
    model = manifest.model.spec or manifest.backend.model or ""
    parts = [manifest.method or "", Path(str(model)).name if model else "", manifest.backend.backend or ""]
    return " · ".join(p for p in parts if p), manifest.finished_at is not None or manifest.kind == "import"


def load_run(path: Path, label: str) -> ViewedRun:
    """Read a run directory as far as it exists; an error only when it holds no predictions at all."""
    directory = RunDirectory(path)
    if not path.is_dir():
        raise EvalsuiteError(
            f"{path} is not a directory", hint="pass run directories written by `evalsuite run` or `evalsuite score`"
        )
    if not directory.predictions_path.is_file():
        raise EvalsuiteError(
            f"{path} has no {PREDICTIONS_FILE}: nothing to show yet",
            hint="pass a run directory written by `evalsuite run` or `evalsuite score`",
        )
    setting, finished = _setting(directory)
    records = {(r.task, r.id): r for r in directory.read_predictions()}  # a torn last line is dropped, not fatal
    return ViewedRun(label, path, records, setting, finished, (path / METRICS_FILE).is_file())


def missing_notes(runs: list[ViewedRun], page_of: dict[Key, int] | None = None) -> list[str]:
    """One line for each thing that is not there: a run still being written, failed examples (with the pages they
    are on, when there is more than one page), questions that only some of the runs have."""
    notes = []
    for run in runs:
        if not run.finished or not run.has_metrics:
            lacks = [
                x
                for x, ok in (
                    ("manifest.json has no finished_at", run.finished),
                    (f"no {METRICS_FILE}", run.has_metrics),
                )
                if not ok
            ]
            notes.append(
                f"{run.label}: still being written or stopped ({', '.join(lacks)}): showing the "
                f"{len(run.records)} examples written so far"
            )
        if failed := run.failed():
            where = ""
            if page_of and max(page_of.values()) > 1:
                pages = sorted({page_of[key] for key, r in run.records.items() if r.status != "ok"})
                shown = ", ".join(map(str, pages[:10])) + (f" and {len(pages) - 10} more" if len(pages) > 10 else "")
                where = f" on page{'s' if len(pages) > 1 else ''} {shown}"
            notes.append(
                f"{run.label}: {failed} of {len(run.records)} examples "
                f"failed: shown with their error{where} (filter: failed)"
            )
    if len(runs) > 1:
        every = set.intersection(*(set(r.records) for r in runs))
        only = [(run.label, len(set(run.records) - every)) for run in runs if len(set(run.records) - every)]
        if only:
            notes.append(
                f"the runs share {len(every)} questions; "
                + ", ".join(f"{n} only in {label}" for label, n in only)
                + " (shown with the other runs' columns empty)"
            )
    return notes


def _question_order(runs: list[ViewedRun]) -> list[Key]:
    """Every question of every run, in the first run's order, then the ones only later runs have."""
    order: dict[Key, None] = {}
    for run in runs:
        order.update(dict.fromkeys(run.records))
    return list(order)


def _cell(run: ViewedRun, key: Key, headline: str) -> dict:
    record = run.records.get(key)
    if record is None:
        return {"label": run.label, "record": None}
    wrong = record.status == "ok" and record.metrics.get(headline, 0.0) < 1.0
    return {
        "label": run.label,
        "record": record,
        "turns": _turn_views(record),
        "wrong": wrong,
        "scores": _scores(record),
    }


def _scores(record: ExampleRecord) -> list[dict[str, str]]:
    """The record's summary metrics as shown: a score in [0, 1] coloured hit / part / miss, a count (searches) plain."""
    out = []
    for spec in summary_metrics():
        if spec.name in record.metrics:
            value = record.metrics[spec.name]
            css = ("hit" if value >= 1 else "part" if value > 0 else "miss") if spec.percent else "count"
            out.append({"label": spec.label, "text": f"{value:.2f}" if spec.percent else f"{value:g}", "css": css})
    return out


def _default_output(paths: list[Path]) -> Path:
    from evalsuite.files import cache_root

    digest = hashlib.sha256("\n".join(str(p.resolve()) for p in paths).encode()).hexdigest()[:10]
    return cache_root() / "view" / f"{paths[0].resolve().name}-{digest}"


def page_file(number: int) -> str:
    """Page 1 is index.html (what `--open` and the printed link open); page k is page-k.html."""
    return "index.html" if number == 1 else f"page-{number}.html"


def _pager(number: int, total: int, task_pages: dict[str, int]) -> dict:
    """Links of one page: first, previous, the pages around it, next, last, and where each task starts."""
    around = sorted({1, total, *range(max(1, number - 3), min(total, number + 3) + 1)})
    links: list[dict[str, Any] | None] = []  # None: a gap
    last = 0
    for k in around:
        if k > last + 1:
            links.append(None)  # a gap, shown as …
        links.append({"number": k, "href": page_file(k), "current": k == number})
        last = k
    return {
        "number": number,
        "total": total,
        "links": links,
        "previous": page_file(number - 1) if number > 1 else None,
        "next": page_file(number + 1) if number < total else None,
        "tasks": [{"task": t, "number": k, "href": page_file(k)} for t, k in task_pages.items()] if total > 1 else [],
    }


def build_view(paths: list[Path], out_dir: Path | None = None, page_size: int = PAGE_SIZE) -> RunViewPage:
    """Render `paths` (run directories) into `out_dir` (default: a folder in the cache named after them), in pages
    of `page_size` questions."""
    if not paths:
        raise EvalsuiteError("no run directory given", hint="evalsuite view RUN [RUN…]")
    if page_size < 1:
        raise EvalsuiteError(f"--page-size must be at least 1, not {page_size}", hint="e.g. --page-size 200")
    out_dir = Path(out_dir) if out_dir is not None else _default_output(paths)
    runs = [load_run(Path(p), label) for p, label in zip(paths, short_labels([Path(p) for p in paths]))]
    headline = summary_metrics()[0].name
    metric_names = {
        m.name: m.label
        for m in summary_metrics()
        if any(m.name in r.metrics for run in runs for r in run.records.values())
    }
    order = _question_order(runs)
    total = max(1, -(-len(order) // page_size))
    page_of = {key: i // page_size + 1 for i, key in enumerate(order)}
    task_pages: dict[str, int] = {}
    for key in order:
        task_pages.setdefault(key[0], page_of[key])
    notes = missing_notes(runs, page_of)
    _prepare(out_dir)
    env = _environment()
    env.globals["site"] = {"title": "evalsuite run viewer"}
    template = env.get_template("view.html.j2")
    tasks = sorted(task_pages)
    for number in range(1, total + 1):
        first_index = (number - 1) * page_size
        # each page's questions are built and rendered on their own, so memory holds one page of HTML at a time
        questions = [
            _question(runs, key, headline, first_index + i + 1)
            for i, key in enumerate(order[first_index : first_index + page_size])
        ]
        (out_dir / page_file(number)).write_text(
            template.render(
                root="",
                nav={"index": "index.html"},
                runs=runs,
                questions=questions,
                notes=notes,
                metric_names=metric_names,
                headline=headline,
                tasks=tasks,
                pager=_pager(number, total, task_pages),
                total_questions=len(order),
            ),
            encoding="utf-8",
        )
    return RunViewPage(out_dir / "index.html", runs, len(order), notes, total)


def _question(runs: list[ViewedRun], key: Key, headline: str, number: int) -> dict:
    first = next(run.records[key] for run in runs if key in run.records)
    cells = [_cell(run, key, headline) for run in runs]
    return {
        "number": number,
        "task": key[0],
        "id": key[1],
        "question": first.question,
        "golds": first.golden_answers,
        "cells": cells,
        "wrong": any(c["record"] is not None and c["wrong"] for c in cells),
        "failed": any(c["record"] is not None and c["record"].status != "ok" for c in cells),
    }


def _prepare(out_dir: Path) -> None:
    # Only a folder this viewer (or the site builder) made, or an empty one, is replaced, never an arbitrary folder,
    # nor what a link points to (replacing it would empty a folder the link only names).
    if out_dir.is_symlink():
        raise EvalsuiteError(
            f"{out_dir} is a symbolic link; the viewer writes only into a folder of its own",
            hint="choose a new -o directory that is not a link",
        )
    if out_dir.exists():
        if not out_dir.is_dir() or (any(out_dir.iterdir()) and not (out_dir / MARKER).is_file()):
            raise EvalsuiteError(
                f"{out_dir} is not empty and was not written by evalsuite", hint="choose an empty or new -o directory"
            )
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    (out_dir / MARKER).write_text("written by evalsuite view\n", encoding="utf-8")
    shutil.copytree(site_dir() / "static", out_dir / "assets")
