"""`evalsuite run --ray` against a single-process run: the same replayed NQ run, with a fixed model time per call.

    python benchmarks/ray_eval.py [--n 200] [--batch-size 8] [--delay 0.2] [--actors 2] [--cpus-per-actor 1]

The replay backend sleeps `--delay` seconds per generation call (a stand-in for a GPU's time per batch that uses no
CPU, so the figure does not depend on how many cores this machine has free). Prints the wall time of the
single-process run, the Ray run's wall time with and without starting Ray and its actors, and the ratios; checks
that both runs wrote the same records. Needs the `[ray]` extra and the recorded trajectories (../shared/data).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from evalsuite.agent.config import RunConfig
from evalsuite.agent.distributed import RayOptions
from evalsuite.agent.runner import RunSpec, execute

DATA = Path(os.environ.get("EVALSUITE_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data")
RECORDING = DATA / "trajectories" / "nq_2026_04_28_16_43_search_r1_base_seed1.json"


def spec(out: Path, n: int, batch_size: int, delay: float) -> RunSpec:
    return RunSpec(model=str(RECORDING), backend="replay", tasks="nq", out=out, split="test_sub1000", data_dir=str(DATA / "benchmarks"),
                   retriever="replay", config=RunConfig(subset=f"first:{n}", batch_size=batch_size), backend_options={"delay_s": delay})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per generation call")
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--cpus-per-actor", type=float, default=1.0, help="below 1 to fit more actors than cores")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        single = execute(spec(Path(tmp) / "single", args.n, args.batch_size, args.delay))
        single_s = time.perf_counter() - started

        marks: dict[str, float] = {}
        started = time.perf_counter()
        distributed = execute(spec(Path(tmp) / "ray", args.n, args.batch_size, args.delay), ray=RayOptions(address="local", actors=args.actors, num_cpus=args.cpus_per_actor),
                              on_start=lambda total, done: marks.setdefault("actors_ready", time.perf_counter()))
        ray_s = time.perf_counter() - started
        playing_s = time.perf_counter() - marks["actors_ready"]  # a little high: Ray's shutdown is counted too
    same = [(r.id, r.prediction, r.trajectory) for r in single.records] == [(r.id, r.prediction, r.trajectory) for r in distributed.records]
    print(f"replay of {args.n} NQ questions, batches of {args.batch_size}, {args.delay:g} s per generation call")
    print(f"  single process           {single_s:7.2f} s")
    print(f"  --ray, {args.actors} actors, all      {ray_s:7.2f} s  ({single_s / ray_s:.2f}x; includes starting Ray and the actors)")
    print(f"  --ray, {args.actors} actors, playing  {playing_s:7.2f} s  ({single_s / playing_s:.2f}x)")
    print(f"  same records: {same}")


if __name__ == "__main__":
    main()
