"""Judge a run directory: build panel requests per metric,
aggregate verdicts, write judgments.jsonl and update metrics.json."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.files import cache_root, file_sha256, read_untrusted_bytes, replace_atomically
from evalsuite.judges import prompts
from evalsuite.judges.accuracy import METRIC as ACCURACY
from evalsuite.judges.accuracy import accuracy_columns, accuracy_item, accuracy_requests, accuracy_scores, bound_verdict
from evalsuite.judges.config import PanelConfig
from evalsuite.judges.panel import Judgment, JudgeRequest, add_usage, majority_vote, run_panel
from evalsuite.metrics.coverage import coverage
from evalsuite.metrics.process import (
    NOVELTY_MAX_OVERLAP,
    extract_queries,
    novelty_flags,
    search_quality_rates,
    search_rounds,
)
from evalsuite.metrics.query_quality import binary_counts, completeness, fleiss_kappa, granularity
from evalsuite.runs import RunDirectory
from evalsuite.runs.columns import ScoreColumns
from evalsuite.runs.schema import ExampleRecord, MetricSummary, Turn
from evalsuite.runs.summary import mean_ci

JUDGMENTS_FILE = "judgments.jsonl"
# Bounds on a judgments.jsonl read back (it may come with a run directory from someone else): a judge's line is about
# a kilobyte, so 256 MiB (a submission file's bound) and 4 million lines hold any panel over any benchmark.
MAX_JUDGMENTS_BYTES = 256 << 20
MAX_JUDGMENT_LINES = 4_000_000
METRICS = ("completeness", "granularity", "coverage", "usefulness", "accuracy")
DOC_CHARS = 300


def default_cache_path() -> Path:
    """$EVALSUITE_CACHE_DIR/judges.sqlite, else
    ~/.cache/evalsuite/judges.sqlite: shared by runs, so repeats are free."""
    root = cache_root()
    return root / "judges.sqlite"


def _numbered(items: Sequence[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))


def _documents(turn: Turn) -> str:
    return (
        "\n".join(
            f"Doc {i} (Title: {p.title or ''}) {p.text[:DOC_CHARS]}" for i, p in enumerate(turn.passages, start=1)
        )
        or "(none)"
    )


def _search_turns(turns: Sequence[Turn]) -> list[int]:
    return [i for i, t in enumerate(turns) if t.sub_queries or t.query is not None]


def usefulness_values(question: str, golds: Sequence[str], turns: Sequence[Turn], index: int) -> dict[str, str]:
    """The USEFULNESS prompt's fields for search turn `turns[index]`, with the earlier search turns as its history."""
    earlier = [i for i in _search_turns(turns) if i < index]
    history = (
        "\n".join(
            f"{n}. {' ## '.join(turns[j].sub_queries) or turns[j].query} -> "
            + "; ".join(p.title or p.text[:60] for p in turns[j].passages)
            for n, j in enumerate(earlier, start=1)
        )
        or "(none)"
    )
    turn = turns[index]
    return {
        "question": question,
        "answer": " | ".join(golds),
        "history": history,
        "query": " ## ".join(turn.sub_queries) or str(turn.query),
        "documents": _documents(turn),
    }


def build_requests(
    records: Sequence[ExampleRecord], metrics: Sequence[str], teacher: dict[str, list[str]] | None = None
) -> list[JudgeRequest]:
    """The panel requests of every metric for every example, in a fixed order."""
    requests: list[JudgeRequest] = []
    for r in records:
        queries = extract_queries(r.turns)
        if "completeness" in metrics and queries:
            requests.append(
                JudgeRequest(
                    r.id,
                    r.task,
                    "completeness",
                    "question",
                    prompts.COMPLETENESS,
                    {"question": r.question, "queries": _numbered(queries)},
                )
            )
        if "granularity" in metrics:
            for i, q in enumerate(queries):
                requests.append(
                    JudgeRequest(
                        r.id, r.task, "granularity", f"q{i}", prompts.GRANULARITY, {"question": r.question, "query": q}
                    )
                )
        if "coverage" in metrics and teacher is not None:
            for i, q in enumerate(queries):
                for j, t in enumerate(teacher[r.id]):
                    requests.append(
                        JudgeRequest(
                            r.id,
                            r.task,
                            "coverage",
                            f"p{i}-t{j}",
                            prompts.COVERAGE_MATCH,
                            {"question": r.question, "policy_query": q, "teacher_query": t},
                        )
                    )
        if "usefulness" in metrics:
            for k, ti in enumerate(_search_turns(r.turns)):
                values = usefulness_values(r.question, r.golden_answers, r.turns, ti)
                requests.append(JudgeRequest(r.id, r.task, "usefulness", f"r{k}", prompts.USEFULNESS, values))
    if "accuracy" in metrics:
        requests.extend(accuracy_requests(records))
    return requests


def _table(judgments: Sequence[Judgment], judges: Sequence[str]) -> dict[tuple[str, str, str, str], list[bool | None]]:
    """(task, example, metric, item) -> verdicts in panel order."""
    table: dict[tuple[str, str, str, str], list[bool | None]] = {}
    index = {name: i for i, name in enumerate(judges)}
    for j in judgments:
        row = table.setdefault((j.task, j.example_id, j.metric, j.item), [None] * len(judges))
        row[index[j.judge]] = j.verdict
    return table


def _summary(values: list[float]) -> MetricSummary | None:
    return mean_ci(np.array(values, dtype=float)) if values else None


def _coverage_scores(records, table, judges, teacher) -> dict[str, Any]:
    per_example, per_judge_f1 = [], defaultdict(list)
    pairs: list[list[bool | None]] = []
    for r in records:
        queries = extract_queries(r.turns)
        n_p, n_t = len(queries), len(teacher[r.id])
        cells = [
            [table.get((r.task, r.id, "coverage", f"p{i}-t{j}"), [None] * len(judges)) for j in range(n_t)]
            for i in range(n_p)
        ]
        pairs.extend(c for row in cells for c in row)
        majority = [[majority_vote(c) is True for c in row] for row in cells]
        result = coverage(majority, n_p, n_t)
        per_example.append(result)
        for k, name in enumerate(judges):
            per_judge_f1[name].append(coverage([[c[k] is True for c in row] for row in cells], n_p, n_t).f1)
    return {
        "precision": float(np.mean([c.precision for c in per_example])) if per_example else None,
        "recall": float(np.mean([c.recall for c in per_example])) if per_example else None,
        "f1": float(np.mean([c.f1 for c in per_example])) if per_example else None,
        "per_judge_f1": {k: float(np.mean(v)) for k, v in per_judge_f1.items()},
        # agreement among the judges on the (policy query, teacher query) pairs every judge decided
        "fleiss_kappa": fleiss_kappa(binary_counts(pairs)) if len(judges) > 1 else None,
        "n_examples": len(per_example),
        "unmatched_rule": "pairs without a parsed majority count as not matched",
        "_examples": per_example,
    }


def _usefulness_scores(records, table, judges, max_overlap) -> dict[str, Any]:
    rows, quality, undecided = [], [], 0
    for r in records:
        rounds = search_rounds(r.turns)
        novel = novelty_flags(rounds, max_overlap)
        votes = []
        for k in range(len(rounds)):
            row = table.get((r.task, r.id, "usefulness", f"r{k}"), [None] * len(judges))
            rows.append(row)
            votes.append(majority_vote(row))
        if any(v is None for v in votes):
            undecided += 1
            continue
        quality.append((r.metrics.get("em", 0.0) >= 1.0, [n and bool(v) for n, v in zip(novel, votes)]))
    score = granularity(rows, judges)  # the same micro-average over (round, judge) verdicts
    return {
        "usefulness": score.model_dump(),
        **search_quality_rates(quality),
        "n_examples_without_majority": undecided,
        "novelty_max_overlap": max_overlap,
    }


def aggregate(
    records: Sequence[ExampleRecord],
    judgments: Sequence[Judgment],
    judges: Sequence[str],
    metrics: Sequence[str],
    teacher: dict[str, list[str]] | None,
    max_overlap: int = NOVELTY_MAX_OVERLAP,
) -> dict[str, dict[str, Any]]:
    """Per task and metric: panel scores, per-judge scores, majority and Fleiss' kappa."""
    table = _table(judgments, judges)
    by_task: dict[str, list[ExampleRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task].append(r)
    out: dict[str, dict[str, Any]] = {}
    for task, rows in by_task.items():
        result: dict[str, Any] = {}
        if "completeness" in metrics:
            with_queries = [r for r in rows if extract_queries(r.turns)]
            verdicts = [table.get((task, r.id, "completeness", "question"), [None] * len(judges)) for r in with_queries]
            result["completeness"] = {
                **completeness(verdicts, judges).model_dump(),
                "n_without_queries": len(rows) - len(with_queries),
            }
        if "granularity" in metrics:
            verdicts = [v for (t, _, m, _), v in table.items() if t == task and m == "granularity"]
            result["granularity"] = granularity(verdicts, judges).model_dump()
        if "coverage" in metrics and teacher is not None:
            result["coverage"] = _coverage_scores(rows, table, judges, teacher)
        if "usefulness" in metrics:
            result["usefulness"] = _usefulness_scores(rows, table, judges, max_overlap)
        if "accuracy" in metrics:
            result["accuracy"], result["_acc_judge"] = accuracy_scores(rows, table, judges)
        out[task] = result
    return out


def _task_summaries(
    results: dict[str, dict[str, Any]], judgments: Sequence[Judgment]
) -> dict[str, dict[str, MetricSummary]]:
    """Panel metrics as per-task MetricSummary entries (mean and bootstrap CI) for tables."""
    sample_means: dict[tuple[str, str], list[float]] = defaultdict(list)
    flat: dict[tuple[str, str], list[float]] = defaultdict(list)
    for j in judgments:
        if j.verdict is None:
            continue
        if j.metric == "completeness":
            sample_means[(j.task, j.example_id)].append(float(j.verdict))
        elif j.metric in ("granularity", "usefulness"):
            flat[(j.task, j.metric)].append(float(j.verdict))
    out: dict[str, dict[str, MetricSummary]] = {}
    for task, result in results.items():
        entries: dict[str, MetricSummary | None] = {}
        if "completeness" in result:
            entries["completeness"] = _summary([float(np.mean(v)) for (t, _), v in sample_means.items() if t == task])
        for name in ("granularity", "usefulness"):
            if name in result:
                entries[name] = _summary(flat[(task, name)])
        if "coverage" in result:
            for part in ("precision", "recall", "f1"):
                entries[f"coverage_{part}"] = _summary([getattr(c, part) for c in result["coverage"]["_examples"]])
            result["coverage"].pop("_examples")
        if "_acc_judge" in result:
            entries.update(
                result.pop("_acc_judge")
            )  # acc_judge (0/1 per answer: Wilson), or acc_judge_avg per question
        out[task] = {k: v for k, v in entries.items() if v is not None}
    return out


@dataclass
class JudgedAccuracy:
    """A run's acc_judge verdicts as tables read them, and what they rest on."""

    # (task, example id, item) → the panel's verdict (None: undecided), over the verdicts bound to the record's answer
    verdicts: dict[tuple[str, str, str], bool | None]
    panel: list[str]  # the judges counted, "name (model)"
    unbound: int  # verdict lines whose input is not the record's answer (another prediction): not counted
    here: bool  # judgments.jsonl as `evalsuite judge` wrote it on this machine (else the submitter's panel's)

    def note(self, run: str) -> str:
        """One footnote line: whose panel judged, and the verdicts left out."""
        panel = ", ".join(self.panel) or "no judge"
        who = f"judged here by the panel {panel}" if self.here else f"judged by the submitter's panel ({panel})"
        left = f"; {self.unbound} verdicts on another answer than the record's not counted" if self.unbound else ""
        return f"{run}: acc_judge {who}, against the golds and predictions the run records{left}."


def _judged_here_marker(judgments: Path) -> Path:
    """Where `evalsuite judge` on this machine records the judgments.jsonl it wrote (by content hash): outside the
    run directory, so a run directory copied from someone else brings no such record."""
    return cache_root() / "judged" / f"{file_sha256(judgments)}.json"


def accuracy_verdicts(run_dir: str | Path) -> JudgedAccuracy | None:
    """The panel's verdict on each judged answer of a run, from its judgments.jsonl: (task, example id, item) →
    the strict majority of the verdicts of the judges its last `evalsuite judge` named (metrics.json's
    extra.judges.panel; every judge when it names none) that judged the answer the record holds (`bound_verdict`),
    None when undecided. None when never judged for accuracy."""
    run = RunDirectory(run_dir)
    path = run.path / JUDGMENTS_FILE
    if not os.path.lexists(path):  # anything else there (a FIFO, a folder) is refused by the reader, never skipped
        return None
    try:
        panel = run.read_metrics().extra.get("judges", {}).get("panel")
    except (EvalsuiteError, ValueError):
        panel = None
    judges = None if not panel else {j.get("name") for j in panel}
    records = {(r.task, r.id, accuracy_item(r)): r for r in run.read_predictions()}
    votes: dict[tuple[str, str, str], list[bool | None]] = defaultdict(list)
    counted: dict[str, str] = {}
    unbound = 0
    for line in _read_judgments(path).values():
        if line["metric"] != ACCURACY or (judges is not None and line["judge"] not in judges):
            continue
        key = (line["task"], line["example_id"], line["item"])
        record = records.get(key)
        if record is None or not bound_verdict(line, record):
            unbound += 1
            continue
        votes[key].append(line.get("verdict"))
        counted[line["judge"]] = f"{line['judge']} ({line.get('model') or 'model not recorded'})"
    if not votes and not unbound:
        return None
    verdicts = {key: majority_vote(values) for key, values in votes.items()}
    return JudgedAccuracy(verdicts, sorted(counted.values()), unbound, _judged_here_marker(path).is_file())


def add_judged_columns(run_dir: str | Path, columns: ScoreColumns) -> JudgedAccuracy | None:
    """Add acc_judge (or a sampled run's acc_judge_avg and acc_judge_pass@k) to a run's score columns from its
    judgments, so tables and paired tests read it like any per-example metric; what they rest on is returned for
    the table's footnote. Read from judgments.jsonl each time, never cached with predictions.jsonl's columns:
    judging changes it, not the predictions."""
    judged = accuracy_verdicts(run_dir)
    if judged is None:
        return None
    for task, data in columns.tasks.items():
        data.metrics.update(accuracy_columns(judged.verdicts, task, data.ids.tolist(), columns.samples))
    return judged


# (task, example_id, metric, item, judge); a line read back from judgments.jsonl may lack a field (None in its key)
JudgmentKey = tuple[str | None, str | None, str | None, str | None, str | None]


def _judgment_key(line: dict[str, Any] | Judgment) -> JudgmentKey:
    if isinstance(line, dict):
        return (line.get("task"), line.get("example_id"), line.get("metric"), line.get("item"), line.get("judge"))
    return (line.task, line.example_id, line.metric, line.item, line.judge)


# What every judgments.jsonl line names (a `Judgment`): which answer or item of which example, and which judge.
_JUDGMENT_FIELDS = ("task", "example_id", "metric", "item", "judge")


def _read_judgments(path: Path) -> dict[JudgmentKey, dict[str, Any]]:
    """The judgments already on disk, by (task, example, metric, item, judge), in file order; a line that is not a
    judgment (not a JSON object, a naming field missing or not a string, a verdict not true/false/null) is a
    DataError naming the line and the field."""
    lines: dict[JudgmentKey, dict[str, Any]] = {}
    if not os.path.lexists(path):
        return lines
    hint = "move the file away and judge again (the cache makes it free)"
    # one bounded read of a regular file (a FIFO is refused, never waited on), its lines counted before parsing
    try:
        data = read_untrusted_bytes(path, MAX_JUDGMENTS_BYTES, "judgments file")
    except FileNotFoundError:  # a link to nothing
        raise DataError(f"{path}: the judgments file is a link to a file that does not exist", hint=hint) from None
    if max(data.count(b"\n"), data.count(b"\r")) > MAX_JUDGMENT_LINES:
        raise DataError(f"{path}: more than {MAX_JUDGMENT_LINES:,} lines, over the judgments file's bound", hint=hint)
    for lineno, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}:{lineno}: not UTF-8 ({exc.reason} at byte {exc.start})", hint=hint) from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise DataError(f"{path}:{lineno}: not a judgment line (not JSON)", hint=hint) from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{lineno}: not a judgment line (a JSON {type(obj).__name__})", hint=hint)
        missing = next((name for name in _JUDGMENT_FIELDS if not isinstance(obj.get(name), str)), None)
        if missing is not None:
            raise DataError(f"{path}:{lineno}: the judgment has no {missing!r} (a string)", hint=hint)
        if obj.get("verdict") is not None and not isinstance(obj["verdict"], bool):
            raise DataError(f"{path}:{lineno}: 'verdict' is {obj['verdict']!r}, not true, false or null", hint=hint)
        lines[_judgment_key(obj)] = obj
    return lines


def keep_earlier_replies(judgments: Sequence[Judgment], earlier: dict[JudgmentKey, dict[str, Any]]) -> list[Judgment]:
    """Each judgment whose call failed this time is replaced by the one on disk for the same judge, model, template
    and input, when that one had a reply: a rerun against a failing server never loses a verdict."""
    out: list[Judgment] = []
    for j in judgments:
        old = earlier.get(_judgment_key(j))
        if (
            j.reply is None
            and old is not None
            and old.get("reply") is not None
            and all(old.get(name) == getattr(j, name) for name in ("model", "template_hash", "input"))
        ):
            j = Judgment.model_validate(old)
        out.append(j)
    return out


def _write_judgments(path: Path, earlier: dict[JudgmentKey, dict[str, Any]], judgments: Sequence[Judgment]) -> None:
    """Every line already there (other metrics, other examples) plus this call's, which replace theirs; atomic."""
    lines = {key: json.dumps(obj, ensure_ascii=False) for key, obj in earlier.items()}
    for j in judgments:
        lines[_judgment_key(j)] = j.model_dump_json()
    replace_atomically(path, "".join(line + "\n" for line in lines.values()).encode("utf-8"))


def _record_judged_here(judgments: Path, panel: PanelConfig) -> None:
    """Note in the cache folder that this machine's `evalsuite judge` wrote judgments.jsonl as it now is, so tables
    can tell verdicts judged here from a submitter's; a cache folder that cannot be written only loses the label."""
    marker = _judged_here_marker(judgments)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        replace_atomically(marker, json.dumps({"panel": panel.identities()}).encode())
    except OSError:
        pass


@dataclass
class JudgeRunResult:
    results: dict[str, dict[str, Any]]
    usage: dict[str, dict[str, float]]
    n_requests: int
    judgments: list[Judgment] = field(repr=False)
    n_missing: int = 0  # verdicts whose call failed (no reply) and that no earlier run had

    def missing_message(self) -> str | None:
        """One line for a partial run, None when every call got a reply."""
        if not self.n_missing:
            return None
        return (
            f"{self.n_missing} of {len(self.judgments)} verdicts are missing: "
            "their judge calls failed (see 'parse_error' in judgments.jsonl)"
        )


def judge_run(
    run_dir: str | Path,
    panel: PanelConfig,
    metrics: Sequence[str],
    *,
    cache_path: str | Path | None = None,
    teacher_file: str | Path | None = None,
    data_dir: str | Path | None = None,
    teacher_split: str | None = None,
    limit: int | None = None,
    max_overlap: int = NOVELTY_MAX_OVERLAP,
) -> JudgeRunResult:
    """Judge a scored run directory; predictions.jsonl is only read, never rewritten."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown or not metrics:
        raise EvalsuiteError(f"unknown judge metrics {unknown or metrics}", hint=f"choose from {', '.join(METRICS)}")
    run = RunDirectory(run_dir)
    run.read_manifest()
    records = [r for r in run.read_predictions() if r.status == "ok"]
    if limit is not None:
        records = records[:limit]
    if not records:
        raise EvalsuiteError(f"{run.path} has no scored examples to judge", hint="run `evalsuite score` on it first")
    metrics_file = run.read_metrics()
    teacher = None
    if "coverage" in metrics:
        from evalsuite.judges.teacher import teacher_queries_for

        teacher = teacher_queries_for(records, teacher_file, data_dir, teacher_split)
    requests = build_requests(records, metrics, teacher)
    cache_path = Path(cache_path or panel.cache or default_cache_path())
    judgments_path = run.path / JUDGMENTS_FILE
    earlier = _read_judgments(judgments_path)
    judgments, usage = run_panel(panel, cache_path, requests)
    judgments = keep_earlier_replies(judgments, earlier)
    n_missing = sum(j.reply is None for j in judgments)
    judges = [j.name for j in panel.judges]
    results = aggregate(records, judgments, judges, metrics, teacher, max_overlap)
    summaries = _task_summaries(results, judgments)
    for task, entries in summaries.items():
        if task in metrics_file.tasks:
            metrics_file.tasks[task].metrics.update(entries)
    previous = metrics_file.extra.get("judges", {})
    merged_results = previous.get("results", {})
    for task, result in results.items():
        merged_results.setdefault(task, {}).update(result)
    metrics_file.extra["judges"] = {
        "panel": panel.identities(),
        "templates": {name: t.hash for name, t in prompts.TEMPLATES.items()},
        "n_examples_judged": len(records),
        "limit": limit,
        "results": merged_results,
        "usage_last": usage,
        "usage_total": add_usage(previous.get("usage_total", {}), usage),
        "cache": str(cache_path),
        "missing_verdicts": n_missing,
    }
    # metrics.json always describes the judgments written with it: a partial run's scores say what is missing.
    _write_judgments(judgments_path, earlier, judgments)
    run.write_metrics(metrics_file)
    _record_judged_here(judgments_path, panel)
    return JudgeRunResult(
        results=results, usage=usage, n_requests=len(requests), judgments=judgments, n_missing=n_missing
    )
