"""Speed of evalsuite.stats.compare against a naive Python loop and a per-system numpy gather (sacrebleu's style).

    python benchmarks/stats.py [--systems 10] [--tasks 7] [--n 1000] [--resamples 10000] [--naive-resamples 200]

Workload: S systems × T tasks × N examples; every system is compared with the first (the baseline) on every task:
paired bootstrap CI and p-value of the difference (R resamples, the same draws for every system), the per-system CI of
each mean, exact McNemar (EM, 0/1 scores) or paired approximate randomization with R permutations (F1, continuous),
Holm across tasks, and the dataset-stratified bootstrap of the average over all tasks.

Alternatives timed on the same bootstrap part (the dominant cost):
- naive: pure Python, one `random.choices` draw and Python sums per resample and system pair. Timed on
  --naive-resamples resamples of one task and one system pair, then extrapolated linearly to the full workload (the
  loop does the same work per resample, so the extrapolation is exact up to timer noise).
- gather: numpy, one (R × N) index draw per task and `scores[idx].mean(axis=1)` per system, as sacrebleu's
  `_paired_bs_test` does (full workload, measured).
"""

from __future__ import annotations

import argparse
import os
import random
import time

import numpy as np

from evalsuite.stats import SystemScores, compare
from evalsuite.stats.resample import stream


def make_systems(n_systems: int, n_tasks: int, n: int, binary: bool, seed: int = 0) -> list[SystemScores]:
    """Synthetic per-example scores with a shared per-question difficulty, as real systems have."""
    rng = np.random.default_rng(seed)
    systems = {f"sys{s}": {} for s in range(n_systems)}
    for t in range(n_tasks):
        difficulty = rng.random(n)
        ids = [f"t{t}-{i}" for i in range(n)]
        for s in range(n_systems):
            p = np.clip(difficulty + 0.02 * s - 0.3, 0, 1)
            values = (rng.random(n) < p).astype(float) if binary else np.clip(p + rng.normal(0, 0.2, n), 0, 1)
            systems[f"sys{s}"][f"task{t}"] = dict(zip(ids, values.tolist()))
    return [SystemScores(name, tasks) for name, tasks in systems.items()]


def time_compare(systems: list[SystemScores], resamples: int, metric: str) -> tuple[float, float]:
    """Wall and CPU seconds of one compare() call (CPU time is what the call costs on an idle machine)."""
    tasks = list(systems[0].tasks)
    wall, cpu = time.perf_counter(), time.process_time()
    result = compare(systems, systems[0].name, metric=metric, groups={"all": tasks}, n_resamples=resamples, n_permutations=resamples)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert len(result.differences) == (len(systems) - 1) * len(tasks)
    return wall, cpu


def time_naive(systems: list[SystemScores], resamples: int, naive_resamples: int) -> tuple[float, float]:
    """Seconds for `naive_resamples` of one pair on one task, and that extrapolated to the full workload."""
    task = next(iter(systems[0].tasks))
    ids = list(systems[0].tasks[task])
    a = [systems[1].tasks[task][i] for i in ids]
    b = [systems[0].tasks[task][i] for i in ids]
    n = len(ids)
    rng = random.Random(0)
    start = time.process_time()
    diffs = []
    for _ in range(naive_resamples):
        idx = rng.choices(range(n), k=n)
        diffs.append(sum(a[i] for i in idx) / n - sum(b[i] for i in idx) / n)
    diffs.sort()
    elapsed = time.process_time() - start
    pairs = (len(systems) - 1) * len(systems[0].tasks)
    return elapsed, elapsed * (resamples / naive_resamples) * pairs


def time_gather(systems: list[SystemScores], resamples: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    for task in systems[0].tasks:
        ids = list(systems[0].tasks[task])
        matrix = np.array([[s.tasks[task][i] for i in ids] for s in systems])
        idx = stream(0, task).integers(0, len(ids), size=(resamples, len(ids)))
        base = matrix[0][idx].mean(axis=1)
        for row in matrix[1:]:
            diff = row[idx].mean(axis=1) - base
            np.quantile(diff, [0.025, 0.975])
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=7)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--naive-resamples", type=int, default=200)
    args = parser.parse_args()
    shape = f"{args.systems} systems × {args.tasks} tasks × {args.n} examples, {args.resamples} resamples"
    print(f"workload: {shape}")
    binary = make_systems(args.systems, args.tasks, args.n, binary=True)
    continuous = make_systems(args.systems, args.tasks, args.n, binary=False)
    compare(binary[:2], binary[0].name, n_resamples=100)  # warm-up: imports and first allocations
    em, em_cpu = time_compare(binary, args.resamples, "em")
    f1, f1_cpu = time_compare(continuous, args.resamples, "f1")
    gather, gather_cpu = time_gather(binary, args.resamples)
    measured, naive = time_naive(binary, args.resamples, args.naive_resamples)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (wall time grows with the load; CPU time does not)")
    print(f"{'':64} {'wall s':>8} {'CPU s':>8} {'CPU ratio':>10}")
    print(f"{'evalsuite.stats.compare, EM (bootstrap, McNemar, stratified avg)':64} {em:8.2f} {em_cpu:8.2f} {1.0:9.1f}x")
    print(f"{'evalsuite.stats.compare, F1 (bootstrap, randomization)':64} {f1:8.2f} {f1_cpu:8.2f} {f1_cpu / em_cpu:9.1f}x")
    print(f"{'numpy gather per system (sacrebleu style), bootstrap only':64} {gather:8.2f} {gather_cpu:8.2f} {gather_cpu / em_cpu:9.1f}x")
    print(f"{'naive Python loop, bootstrap only (extrapolated, see below)':64} {'':>8} {naive:8.1f} {naive / em_cpu:9.0f}x")
    print(f"  naive: {measured:.3f} CPU s for {args.naive_resamples} resamples of 1 pair × 1 task, "
          f"× {args.resamples / args.naive_resamples:.0f} (resamples) × {(args.systems - 1) * args.tasks} (pairs)")


if __name__ == "__main__":
    main()
