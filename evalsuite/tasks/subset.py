"""Subsets of a split: `full`, `first:N`, `sample:N:SEED`; the chosen ids are recorded in the run."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from evalsuite.errors import EvalsuiteError
from evalsuite.tasks.rows import TaskRow


@dataclass(frozen=True)
class Subset:
    kind: str  # "full" | "first" | "sample"
    n: int | None = None
    seed: int | None = None

    def __str__(self) -> str:
        if self.kind == "full":
            return "full"
        if self.kind == "first":
            return f"first:{self.n}"
        return f"sample:{self.n}:{self.seed}"


def parse_subset(spec: str) -> Subset:
    """Parse 'full', 'first:N' or 'sample:N:SEED'."""
    parts = spec.strip().split(":")
    try:
        if parts == ["full"]:
            return Subset("full")
        if parts[0] == "first" and len(parts) == 2 and int(parts[1]) > 0:
            return Subset("first", int(parts[1]))
        if parts[0] == "sample" and len(parts) == 3 and int(parts[1]) > 0:
            return Subset("sample", int(parts[1]), int(parts[2]))
    except ValueError:
        pass
    raise EvalsuiteError(f"invalid subset {spec!r}", hint="use full, first:N or sample:N:SEED (N > 0)")


def apply_subset(rows: list[TaskRow], subset: Subset | str) -> list[TaskRow]:
    """The rows of the subset, in their original order."""
    subset = parse_subset(subset) if isinstance(subset, str) else subset
    if subset.kind == "full" or (subset.n is not None and subset.n >= len(rows)):
        return list(rows)
    if subset.kind == "first":
        return rows[: subset.n]
    if subset.n is None:  # only a Subset built by hand lacks it: parse_subset gives every sample its size
        raise EvalsuiteError(f"invalid subset {subset}: a sample needs its size", hint="use sample:N:SEED (N > 0)")
    chosen = sorted(random.Random(subset.seed).sample(range(len(rows)), subset.n))
    return [rows[i] for i in chosen]


def ids_hash(ids: list[str]) -> str:
    """A stable hash of an ordered id list, for the manifest."""
    return hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()
