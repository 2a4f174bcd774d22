"""Compare many systems with a baseline on many benchmarks at once: means, CIs, paired tests, Holm correction."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Literal

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.registry import SignificanceTest, get_metric, is_registered
from evalsuite.stats import resample
from evalsuite.stats.correction import holm
from evalsuite.stats.intervals import (
    CONFIDENCE,
    Interval,
    interval_method,
    mean_intervals,
    method_name,
)
from evalsuite.stats.pairing import aligned_matrix
from evalsuite.stats.resample import DEFAULT_SEED, is_binary
from evalsuite.stats.significance import mcnemar_pvalues

TestChoice = Literal["auto", "mcnemar", "randomization", "bootstrap"]
# The family Holm's correction runs over: one system's benchmarks (the default), one benchmark's systems, or every
# (system, benchmark) test of the comparison.
CorrectionFamily = Literal["benchmarks", "systems", "all"]
CORRECTION_FAMILIES: dict[str, str] = {
    "benchmarks": "holm across benchmarks, per system",
    "systems": "holm across systems, per benchmark",
    "all": "holm across all systems and benchmarks",
}


@dataclass(frozen=True)
class SystemScores:
    """One system's per-example scores for one metric: task → example id → score.

    `intervals` may carry the run's own interval per task as stored in its metrics.json (computed by
    evalsuite.stats.intervals); compare() shows it as is when its mean matches the scores, instead of recomputing it.
    """

    name: str
    tasks: Mapping[str, Mapping[str, float]]
    intervals: Mapping[str, Interval] = field(default_factory=dict)


# Four typed fields, shaped like other frozen records (retrieval.types.Document); nothing to share.
@dataclass(frozen=True)
class Estimate:
    """A mean with its interval: per benchmark the run's own
    (evalsuite.stats.intervals), per average the stratified bootstrap."""

    mean: float
    ci_low: float
    ci_high: float
    n: int


@dataclass(frozen=True)
class Difference:
    """System minus baseline on one benchmark (or one average), with its interval and tests."""

    system: str
    baseline: str
    task: str
    n: int
    difference: float
    ci_low: float
    ci_high: float
    test: str
    p_value: float
    p_bootstrap: float
    p_holm: float | None
    significant: bool
    # McNemar's discordant counts (binary metrics only).
    only_system: int | None = None
    only_baseline: int | None = None


@dataclass
class Comparison:
    """Everything a table needs to mark significance and show intervals; resample counts and seed recorded."""

    metric: str
    baseline: str
    systems: list[str]
    tasks: list[str]
    groups: dict[str, list[str]]
    means: dict[tuple[str, str], Estimate]
    differences: dict[tuple[str, str], Difference]
    averages: dict[tuple[str, str], Estimate]
    average_differences: dict[tuple[str, str], Difference]
    n_resamples: int
    n_permutations: int
    seed: int
    confidence: float
    alpha: float
    correction: str = "holm across benchmarks, per system"
    notes: list[str] = field(default_factory=list)
    # How each run's own interval per benchmark was computed (evalsuite.stats.intervals.method_name).
    interval_methods: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready form (tuple keys become 'system/task')."""

        def flat(d: Mapping[tuple[str, str], object]) -> dict[str, object]:
            return {f"{s}/{t}": asdict(v) for (s, t), v in d.items()}  # type: ignore[call-overload]

        return {
            "metric": self.metric,
            "baseline": self.baseline,
            "systems": self.systems,
            "tasks": self.tasks,
            "groups": self.groups,
            "means": flat(self.means),
            "differences": flat(self.differences),
            "averages": flat(self.averages),
            "average_differences": flat(self.average_differences),
            "n_resamples": self.n_resamples,
            "n_permutations": self.n_permutations,
            "seed": self.seed,
            "confidence": self.confidence,
            "alpha": self.alpha,
            "correction": self.correction,
            "notes": self.notes,
            "interval_methods": self.interval_methods,
        }


@dataclass
class _TaskDraws:
    names: list[str]
    means: np.ndarray  # (n_resamples × systems) bootstrap means
    diffs: dict[str, np.ndarray] = field(default_factory=dict)  # system → bootstrap differences from the baseline


def _ordered_tasks(systems: Sequence[SystemScores]) -> list[str]:
    tasks: list[str] = []
    for system in systems:
        tasks.extend(t for t in system.tasks if t not in tasks)
    return tasks


def compare(
    systems: Sequence[SystemScores],
    baseline: str,
    *,
    metric: str = "em",
    groups: Mapping[str, Sequence[str]] | None = None,
    test: TestChoice = "auto",
    n_resamples: int = 10_000,
    n_permutations: int = 10_000,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    alpha: float = 0.05,
    correction: CorrectionFamily = "benchmarks",
    mid_p: bool = False,
) -> Comparison:
    """Means with CIs for every system and benchmark, and paired tests of each system against the baseline.

    `test='auto'` uses the test the metric declares (evalsuite.metrics.registry: exact McNemar for binary
    metrics, approximate randomization for continuous and count ones and for unregistered metrics); every
    difference also gets a paired-bootstrap interval and p-value. Holm's correction runs over the
    benchmarks of each system (`correction='benchmarks'`), the systems of each benchmark ('systems') or
    every test ('all'). `groups` (name → benchmarks) adds macro-averages by dataset-stratified bootstrap.
    `mid_p`: McNemar's and the randomization test's mid-p versions (ties count half; docs/statistics.md),
    which are not conservative by discreteness where few examples differ or scores are 0/1.
    """
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise EvalsuiteError(f"system names must be unique, got {names}", hint="give each run a distinct name")
    if baseline not in names:
        raise EvalsuiteError(f"baseline {baseline!r} is not among the systems {names}")
    if correction not in CORRECTION_FAMILIES:
        raise EvalsuiteError(
            f"unknown correction family {correction!r}", hint=f"choose one of {', '.join(CORRECTION_FAMILIES)}"
        )
    by_name = {s.name: s for s in systems}
    tasks = _ordered_tasks(systems)
    group_members = {g: list(ts) for g, ts in (groups or {}).items()}
    result = Comparison(
        metric,
        baseline,
        names,
        tasks,
        group_members,
        {},
        {},
        {},
        {},
        n_resamples,
        n_permutations,
        seed,
        confidence,
        alpha,
        CORRECTION_FAMILIES[correction],
    )

    def one_task(task: str) -> tuple[Comparison, _TaskDraws]:
        part = replace(result, means={}, differences={}, notes=[], interval_methods=[])
        present = [n for n in names if task in by_name[n].tasks]
        if baseline in present:
            return part, _paired_task(part, task, present, by_name, test, mid_p)
        return part, _unpaired_task(part, task, present, by_name)

    # Benchmarks draw from their own streams, so running them in parallel threads (numpy and scipy release the
    # GIL while drawing and summing) changes no number; the largest start first (the threads then finish together)
    # and parts are merged in benchmark order.
    draws: dict[str, _TaskDraws] = {}
    size = {t: max(len(s.tasks.get(t, ())) for s in systems) for t in tasks}
    with ThreadPoolExecutor(max_workers=max(1, min(len(tasks), os.cpu_count() or 1))) as pool:
        running = {task: pool.submit(one_task, task) for task in sorted(tasks, key=size.__getitem__, reverse=True)}
        for task in tasks:
            part, drawn = running[task].result()
            result.means.update(part.means)
            result.differences.update(part.differences)
            result.notes.extend(part.notes)
            result.interval_methods.extend(m for m in part.interval_methods if m not in result.interval_methods)
            draws[task] = drawn
    _correct(result, correction)
    for group, members in group_members.items():
        _average(result, group, members, draws)
    return result


def declared_test(metric: str) -> SignificanceTest:
    """The paired test a metric declares; approximate randomization for a metric the registry does not know."""
    declared = get_metric(metric).test if is_registered(metric) else None
    return declared or "randomization"


def _estimates(
    result: Comparison, task: str, names: list[str], matrix: np.ndarray, by_name: Mapping[str, SystemScores]
) -> None:
    """Each system's mean and interval: the run's stored interval when it matches these scores, else the same method."""
    n = matrix.shape[1]
    method = method_name(interval_method(result.metric))
    if method not in result.interval_methods:
        result.interval_methods.append(method)
    computed: list[Interval] | None = None
    for j, name in enumerate(names):
        stored = by_name[name].intervals.get(task)
        if stored is None or result.confidence != CONFIDENCE or abs(stored.mean - matrix[j].mean()) > 1e-9:
            computed = computed or mean_intervals(result.metric, matrix, task, confidence=result.confidence)
            stored = computed[j]
        result.means[(name, task)] = Estimate(float(matrix[j].mean()), stored.low, stored.high, n)


def _paired_task(
    result: Comparison,
    task: str,
    present: list[str],
    by_name: Mapping[str, SystemScores],
    test: TestChoice,
    mid_p: bool = False,
) -> _TaskDraws:
    baseline = result.baseline
    # Resampled in one canonical order (baseline, then by name): the shared bootstrap's score patterns are keyed in
    # row order, so rows in argument order made the numbers depend on the order of runs on the command line.
    order = [baseline] + sorted(n for n in present if n != baseline)
    _, matrix = aligned_matrix(
        {n: by_name[n].tasks[task] for n in order}, reference=baseline, where=task, sort_ids=True
    )
    n = matrix.shape[1]
    means, diffs = resample.paired_means(matrix, result.n_resamples, result.seed, task)
    _estimates(result, task, order, matrix, by_name)
    drawn = _TaskDraws(order, means, {name: diffs[:, j] for j, name in enumerate(order[1:])})
    if len(order) == 1:
        return drawn
    observed = matrix.mean(axis=1)
    obs_diff = observed[1:] - observed[0]
    ci_low, ci_high = resample.percentile_interval(diffs, result.confidence)
    p_boot = resample.bootstrap_pvalue(diffs, obs_diff)
    chosen = declared_test(result.metric) if test == "auto" else test
    binary = chosen == "mcnemar"
    if binary and not is_binary(matrix):
        raise EvalsuiteError(
            f"{task}: McNemar's test needs 0/1 scores but {result.metric} is not binary",
            hint="use --test randomization (McNemar pairs 0/1 outcomes only)",
        )
    only_sys = only_base = None
    if binary:
        base_row = matrix[0]
        only_sys = np.sum((matrix[1:] == 1.0) & (base_row == 0.0), axis=1)
        only_base = np.sum((matrix[1:] == 0.0) & (base_row == 1.0), axis=1)
        p_test, test_name = mcnemar_pvalues(only_sys, only_base, mid_p), "mcnemar-mid-p" if mid_p else "mcnemar-exact"
    elif chosen == "bootstrap":
        p_test, test_name = p_boot, "paired-bootstrap"
    else:
        permuted = resample.sign_flip_means(matrix[1:] - matrix[0], result.n_permutations, result.seed, task)
        p_test = resample.randomization_pvalue(permuted, obs_diff, mid_p)
        test_name = "approximate-randomization-mid-p" if mid_p else "approximate-randomization"
    for j, name in enumerate(order[1:]):
        result.differences[(name, task)] = Difference(
            system=name,
            baseline=baseline,
            task=task,
            n=n,
            difference=float(obs_diff[j]),
            ci_low=float(ci_low[j]),
            ci_high=float(ci_high[j]),
            test=test_name,
            p_value=float(p_test[j]),
            p_bootstrap=float(p_boot[j]),
            p_holm=None,
            significant=False,
            only_system=None if only_sys is None else int(only_sys[j]),
            only_baseline=None if only_base is None else int(only_base[j]),
        )
    return drawn


def _unpaired_task(
    result: Comparison, task: str, present: list[str], by_name: Mapping[str, SystemScores]
) -> _TaskDraws:
    # Without the baseline there is nothing to pair; each system gets its own interval (ids may differ).
    columns = []
    for name in present:
        scores = by_name[name].tasks[task]
        values = np.array([scores[i] for i in sorted(scores)], dtype=float)[None, :]
        means, _ = resample.paired_means(values, result.n_resamples, result.seed, task)
        _estimates(result, task, [name], values, by_name)
        columns.append(means[:, 0])
    result.notes.append(f"{task}: the baseline has no scores, so no system is tested there")
    return _TaskDraws(present, np.column_stack(columns))


def _families(result: Comparison, correction: CorrectionFamily) -> list[list[tuple[str, str]]]:
    """The (system, benchmark) keys of each family of tests Holm's correction runs over."""
    if correction == "systems":
        return [[(s, t) for s in result.systems if (s, t) in result.differences] for t in result.tasks]
    if correction == "all":
        return [[(s, t) for s in result.systems for t in result.tasks if (s, t) in result.differences]]
    return [[(s, t) for t in result.tasks if (s, t) in result.differences] for s in result.systems]


def _correct(result: Comparison, correction: CorrectionFamily) -> None:
    for keys in _families(result, correction):
        if not keys:
            continue
        adjusted = holm([result.differences[k].p_value for k in keys])
        for key, p_adj in zip(keys, adjusted):
            d = result.differences[key]
            result.differences[key] = Difference(
                **{**asdict(d), "p_holm": float(p_adj), "significant": bool(p_adj <= result.alpha)}
            )


def _average(result: Comparison, group: str, members: list[str], draws: Mapping[str, _TaskDraws]) -> None:
    """Macro-average of each system that has every member benchmark, and its difference where all are paired."""
    if not members or any(t not in draws for t in members):
        return
    for system in result.systems:
        if not all(system in draws[t].names for t in members):
            continue
        sys_draws = np.mean([draws[t].means[:, draws[t].names.index(system)] for t in members], axis=0)
        observed = float(np.mean([result.means[(system, t)].mean for t in members]))
        n = sum(result.means[(system, t)].n for t in members)
        low, high = resample.percentile_interval(sys_draws[:, None], result.confidence)
        result.averages[(system, group)] = Estimate(observed, float(low[0]), float(high[0]), n)
        paired = all((system, t) in result.differences for t in members)
        if system == result.baseline or not paired:
            continue
        diff_draws = np.mean([draws[t].diffs[system] for t in members], axis=0)[:, None]
        # From the per-benchmark differences: the baseline's own average may not be computed yet (or at all).
        obs = np.array([np.mean([result.differences[(system, t)].difference for t in members])])
        d_low, d_high = resample.percentile_interval(diff_draws, result.confidence)
        p = float(resample.bootstrap_pvalue(diff_draws, obs)[0])
        result.average_differences[(system, group)] = Difference(
            system=system,
            baseline=result.baseline,
            task=group,
            n=n,
            difference=float(obs[0]),
            ci_low=float(d_low[0]),
            ci_high=float(d_high[0]),
            test="stratified-bootstrap",
            p_value=p,
            p_bootstrap=p,
            p_holm=None,
            significant=p <= result.alpha,
        )
