"""Cost of a tarball flooded with empty members: refusing it, and checking it in full, against listing it.

    python benchmarks/leaderboard_tar.py [--members 20000]

Prints, for tarballs of N empty members: the time `verify_submission` takes to refuse one at the member limit
(default), the time it takes to unpack and check every member with the limit lifted (linear: the per-file
problems are counted in O(1)), and the time Python's `tarfile` takes merely to list the same archive, the floor
any reader pays. Ratios are against that listing.
"""

from __future__ import annotations

import argparse
import io
import tarfile
import tempfile
import time
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard import Limits, verify_submission


def flood(path: Path, members: int) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for i in range(members):
            tar.addfile(tarfile.TarInfo(f"runs/r/{i}.txt"), io.BytesIO(b""))
    return path


def seconds(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def refuse(path: Path, limits: Limits | None = None) -> None:
    try:
        report = verify_submission(path, limits=limits)
    except EvalsuiteError:
        return
    assert not report.accepted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'members':>8} {'list (s)':>9} {'refuse (s)':>11} {'full check (s)':>15} {'refuse/list':>12} {'full/list':>10}")
        for members in (args.members // 4, args.members // 2, args.members):
            path = flood(Path(tmp) / f"flood-{members}.tar.gz", members)
            listing = seconds(lambda path=path: tarfile.open(path).getmembers())
            refused = seconds(lambda path=path: refuse(path))
            full = seconds(lambda path=path: refuse(path, Limits(max_files=10**9)))
            print(f"{members:>8} {listing:>9.3f} {refused:>11.3f} {full:>15.3f} {refused / listing:>12.3f} {full / listing:>10.1f}")


if __name__ == "__main__":
    main()
