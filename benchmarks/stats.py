"""Statistics at Search-R1's full evaluation size: compare() and `evalsuite table`, against earlier implementations.

    python benchmarks/stats.py [--systems 10] [--resamples 10000] [--old-ref 31863aa --old-ref 3e41e1f]
                               [--no-table] [--all-old-tables] [--samples K]

Workload: Search-R1's seven benchmarks at full size (NQ 3,610, TriviaQA 11,313, PopQA 14,267, HotpotQA 7,405,
2Wiki 12,576, MuSiQue 2,417, Bamboogle 125: 51,713 examples per system), S systems, every system compared with the
first on every benchmark plus the stratified average over all seven, R bootstrap resamples and R randomization
permutations. Scores are synthetic but shaped like real runs: a per-question difficulty shared by all systems
(U-shaped: many questions every system answers, many none does; the share where all systems agree is printed), EM
0/1, and token F1 that is 1 when EM is, a token-overlap fraction (2c / (p + g), up to 8 tokens each) for a quarter
of the wrong answers and 0 otherwise (the recorded Search-R1 runs: 45% zeros, 42% ones, 26 distinct values).

`--samples K` makes every system a sampled run: K trajectories per question (each sample's own noise around the
shared difficulty), compared as avg@K per question (`em_avg`, `f1_avg`: questions are the unit, see
docs/statistics.md); the earlier revision timed by default is then dfa778e, the resampling kernels before the
byte-coded Poisson table and the cache-sized byte-table lookups (the same draws: "same numbers" says whether every
number compare() returns is equal to the last bit).

Each earlier implementation is a git revision (`--old-ref`, repeatable; default 31863aa, the pattern-count
bootstrap with index picks and a sparse selection matrix that the Poisson-count picks replaced, and 3e41e1f, the
commit before intervals by metric kind, the 2×2-table and pattern-count bootstrap, and scores.npz): its `evalsuite/`
is extracted with `git archive` into a temporary directory and timed in a subprocess on the same workload (saved to
a .npz), in the same run. `evalsuite table` is timed end to end (a fresh `python -m evalsuite table` process over S
run directories) for the current tree and the first `--old-ref` (all of them with `--all-old-tables`: 3e41e1f
parses predictions.jsonl, 517,130 records, which takes minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"nq": 3610, "triviaqa": 11313, "popqa": 14267, "hotpotqa": 7405, "2wikimultihopqa": 12576, "musique": 2417,
         "bamboogle": 125}
PARTIAL_F1 = np.unique([2 * c / (p + g) for p in range(1, 9) for g in range(1, 9) for c in range(1, min(p, g) + 1) if c < max(p, g)])

# Times compare() on the workload file; run by both trees (argv: workload.npz, metric, resamples). Prints the wall
# and CPU seconds and a digest of every number compared (means, intervals, differences, p-values), so two trees
# that draw the same resamples can be shown to give the same numbers.
TIMER = """
import hashlib, json, sys, time
import numpy as np
from evalsuite.stats import SystemScores, compare
data = np.load(sys.argv[1])
metric, resamples = sys.argv[2], int(sys.argv[3])
tasks = json.loads(str(data["tasks"]))
systems = []
for s in range(int(data["systems"])):
    systems.append(SystemScores(f"sys{s}", {t: dict(zip(data[t + "/ids"].tolist(), data[f"{t}/{metric}"][s].tolist())) for t in tasks}))
compare(systems[:2], "sys0", metric=metric, n_resamples=100, n_permutations=100)
wall, cpu = time.perf_counter(), time.process_time()
result = compare(systems, "sys0", metric=metric, groups={"all": tasks}, n_resamples=resamples, n_permutations=resamples)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
fields = ("mean", "difference", "ci_low", "ci_high", "p_value", "p_bootstrap", "p_holm")
numbers = {f"{part}/{s}/{t}": [repr(getattr(v, f, None)) for f in fields]
           for part in ("means", "differences", "averages", "average_differences") for (s, t), v in getattr(result, part).items()}
print(json.dumps([wall, cpu, hashlib.sha256(json.dumps(numbers, sort_keys=True).encode()).hexdigest()]))
"""


def make_workload(n_systems: int, seed: int = 0, samples: int = 1) -> dict[str, np.ndarray]:
    """Per benchmark: ids, and (systems × n) EM and F1 scores (with samples > 1: their avg@K, as em_avg and f1_avg)."""
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {"systems": np.array(n_systems), "tasks": np.array(json.dumps(list(SIZES)))}
    suffix = "_avg" if samples > 1 else ""
    for task, n in SIZES.items():
        difficulty = rng.beta(0.6, 0.6, n)  # many questions every system gets right, many none does
        skill = 0.35 + 0.02 * np.arange(n_systems)[:, None]
        em_sum, f1_sum = np.zeros((n_systems, n)), np.zeros((n_systems, n))
        for _ in range(samples):
            em = (skill + rng.normal(0, 0.1, (n_systems, n)) > difficulty).astype(float)
            partial = (em == 0) & (rng.random((n_systems, n)) < 0.25)
            em_sum += em
            f1_sum += np.where(em == 1, 1.0, np.where(partial, rng.choice(PARTIAL_F1, size=(n_systems, n)), 0.0))
        arrays[f"{task}/ids"] = np.array([f"{task}_{i}" for i in range(n)])
        arrays[f"{task}/em{suffix}"], arrays[f"{task}/f1{suffix}"] = em_sum / samples, f1_sum / samples
    return arrays


def old_tree(ref: str, into: Path) -> Path:
    """The `evalsuite/` package of git revision `ref`, extracted under `into`."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "evalsuite"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def time_compare(tree: Path, workload: Path, metric: str, resamples: int) -> tuple[float, float, str]:
    """Wall and CPU seconds of compare() in `tree`, and the digest of its numbers."""
    # cwd: `python -c` puts the working directory first on sys.path, before PYTHONPATH
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", TIMER, str(workload), metric, str(resamples)], env=env, check=True,
                         capture_output=True, text=True, timeout=1800, cwd=workload.parent).stdout
    wall, cpu, digest = json.loads(out.strip().splitlines()[-1])
    return wall, cpu, digest


def write_runs(arrays: dict[str, np.ndarray], into: Path) -> list[Path]:
    """One run directory per system (manifest, predictions.jsonl, metrics.json, scores.npz) via the current tree."""
    from evalsuite.provenance import provenance_fields
    from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, summarize
    from evalsuite.runs.columns import write_scores

    dirs = []
    for s in range(int(arrays["systems"])):
        run = RunDirectory(into / f"sys{s}")
        run.write_manifest(Manifest(tasks=list(SIZES), method="search-r1", **provenance_fields()))
        records = [ExampleRecord(id=i, task=t, question="q", golden_answers=["a"], prediction="a",
                                 metrics={"em": float(e), "f1": float(f)})
                   for t in SIZES for i, e, f in zip(arrays[f"{t}/ids"].tolist(), arrays[f"{t}/em"][s], arrays[f"{t}/f1"][s])]
        with run.writer(fresh=True) as writer:
            writer.extend(records)
        run.write_metrics(summarize(records))
        write_scores(run.path, records)
        dirs.append(run.path)
    return dirs


def time_table(tree: Path, dirs: list[Path], metric: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, all threads) of one `python -m evalsuite table` process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalsuite", "table", *map(str, dirs), "--metric", metric, "--format", "csv"],
                   env=env, check=True, capture_output=True, timeout=3600, cwd=dirs[0].parent)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--old-ref", action="append", help="an earlier git revision to time (repeatable)")
    parser.add_argument("--no-table", action="store_true", help="skip the end-to-end `evalsuite table` timing")
    parser.add_argument("--samples", type=int, default=1, help="K sampled trajectories per question (compared as avg@K)")
    parser.add_argument("--all-old-tables", action="store_true",
                        help="time `evalsuite table` for every --old-ref, not only the first (3e41e1f: minutes)")
    args = parser.parse_args()
    refs = args.old_ref or (["dfa778e"] if args.samples > 1 else ["31863aa", "3e41e1f"])
    metrics = ("em_avg", "f1_avg") if args.samples > 1 else ("em", "f1")
    n_total = sum(SIZES.values())
    print(f"workload: {args.systems} systems × 7 benchmarks ({n_total:,} examples each, {args.samples} sample(s) each), "
          f"{args.resamples:,} resamples and permutations; earlier implementations: git {', '.join(refs) or 'none'}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        arrays = make_workload(args.systems, samples=args.samples)
        workload = tmp_path / "workload.npz"
        np.savez(workload, **arrays)
        f1 = np.concatenate([arrays[f"{t}/{metrics[1]}"][0] for t in SIZES])
        agree = np.mean(np.concatenate([(arrays[f"{t}/{metrics[1]}"] == arrays[f"{t}/{metrics[1]}"][0]).all(axis=0) for t in SIZES]))
        print(f"F1 of sys0: {np.mean(f1 == 0):.0%} zeros, {np.mean(f1 == 1):.0%} ones, {len(np.unique(f1))} distinct values; "
              f"all systems' F1 equal on {agree:.0%} of the examples")
        trees = [ROOT] + [old_tree(ref, tmp_path / f"old-{ref}") for ref in refs]
        rows: list[tuple[str, list[tuple]]] = []  # (wall, CPU) per tree, and for compare() the digest of its numbers
        for metric in metrics:
            rows.append((f"compare(), {metric.upper()}", [time_compare(tree, workload, metric, args.resamples) for tree in trees]))
        if not args.no_table and args.samples == 1:
            dirs = write_runs(arrays, tmp_path / "runs")
            timed = trees if args.all_old_tables else trees[:2]
            for metric in ("em", "f1"):
                times = [time_table(tree, dirs, metric) if tree in timed else (np.nan, np.nan) for tree in trees]
                rows.append((f"evalsuite table, {metric.upper()} (process, end to end)", times))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end (wall time grows with the load; "
          "CPU time much less)")
    header = f"{'':44} {'now wall s':>10} {'CPU s':>7}"
    for ref in refs:
        header += f" {ref + ' wall s':>16} {'CPU s':>7} {'speed-up':>9} {'same numbers':>12}"
    print(header)
    for label, times in rows:
        new_cpu = times[0][1]
        line = f"{label:44} {times[0][0]:10.2f} {new_cpu:7.2f}"
        for old in times[1:]:
            same = "" if len(old) < 3 else ("yes" if old[2] == times[0][2] else "no")
            line += f" {old[0]:16.2f} {old[1]:7.2f} {old[1] / new_cpu:8.1f}x {same:>12}"
        print(line)
    print("speed-up: ratio of CPU seconds (user + system, all threads; compare() and the table use up to 2 threads); "
          "same numbers: every mean, interval, difference and p-value of compare() equal to the last bit")


if __name__ == "__main__":
    main()
