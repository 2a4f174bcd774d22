"""Subsets of a split: `full`, `first:N`, `sample:N:SEED`; the chosen ids are recorded in the run.

A subset is an identity: runs, submissions and leaderboard columns are grouped by it, so every spelling that
chooses the same questions must be one key. `parse_subset` accepts spaces around the parts and leading zeros
(`first: 010` is `first:10`) and refuses every other way of writing a number (`1_0`, `+10`, `-8`, non-ASCII digits):
`int()` reads those too, and `sample:5:-8` would even choose the questions of `sample:5:8`. `str(parse_subset(s))` is
the one canonical spelling.
"""

from __future__ import annotations

import hashlib
import random
import re
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


# ASCII digits only: `\d` would take other scripts' digits, which `int()` reads as the same number.
_NUMBER = r"\s*([0-9]+)\s*"
_SPECS = {
    "full": re.compile(r"\s*full\s*"),
    "first": re.compile(rf"\s*first\s*:{_NUMBER}"),
    "sample": re.compile(rf"\s*sample\s*:{_NUMBER}:{_NUMBER}"),
}


def parse_subset(spec: str) -> Subset:
    """Parse 'full', 'first:N' or 'sample:N:SEED' (N > 0, SEED >= 0) into its canonical form."""
    for kind, pattern in _SPECS.items():
        match = pattern.fullmatch(spec) if isinstance(spec, str) else None
        if match is None:
            continue
        numbers = [int(group) for group in match.groups()]
        if numbers and numbers[0] > 0:
            return Subset(kind, *numbers)
        if not numbers:
            return Subset(kind)
    raise EvalsuiteError(
        f"invalid subset {str(spec)[:100]!r}",
        hint="use full, first:N or sample:N:SEED with N > 0 and SEED >= 0 in plain digits (no sign, no '_')",
    )


def canonical_subset(spec: str) -> str:
    """The one spelling of a subset spec (`first: 010` → `first:10`); refuses what `parse_subset` refuses."""
    return str(parse_subset(spec))


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
