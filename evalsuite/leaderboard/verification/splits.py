"""The declared task splits: registered split names (and subsets `evalsuite run --subset` can choose), their rows
from the registry, never from the submission, and what each run's manifest recorded of them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Literal

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.submission import SUBSET_MARK, registered_splits, split_and_subset, split_covers, with_subset
from evalsuite.runs import Manifest
from evalsuite.tasks.loader import LoadedSplit, load_split
from evalsuite.tasks.registry import get_task
from evalsuite.tasks.subset import Subset, apply_subset, ids_hash, parse_subset
from evalsuite.leaderboard.verification.report import VerificationReport


def declared_split_rows(
    task: str, split: str, data_dir: str | Path | None, root: Path, where: str, report: VerificationReport
) -> tuple[LoadedSplit, int] | None:
    """The registry's rows of a declared task split, and how many questions the whole split holds; the split must
    be a registered name, and the rows never come from inside the submission. A declared subset narrows the rows
    (`loaded.split` names it); one that holds every question of the split is the whole split, and ranked with it."""
    try:
        registered = get_task(task)
    except EvalsuiteError as exc:
        report.add("unknown-task", where, f"{exc.message} ({exc.hint})" if exc.hint else exc.message)
        return None
    allowed = registered_splits(registered)
    whole, subset = split_and_subset(split)
    if whole not in allowed:
        report.add(
            "split",
            where,
            f"{split[:100]!r} is not a registered split of {task}; declare one of: {', '.join(allowed)}"
            f" (optionally with {SUBSET_MARK}first:N or {SUBSET_MARK}sample:N:SEED)",
        )
        return None
    chosen = _declared_subset(subset, split, where, report)
    if chosen is False:
        return None
    loaded = _whole_split(task, whole, data_dir, root, where, report)
    if loaded is None:
        return None
    n_split = len(loaded.rows)
    narrowed = _narrowing(chosen, n_split)
    if narrowed is None:
        return loaded, n_split
    # the subset's ids are rebuilt from the registry's rows, as `evalsuite run --subset` chose them; the split is
    # named in its canonical spelling (`test@first:010` is `test@first:10`): the leaderboard groups columns by it
    canonical = with_subset(whole, str(narrowed))
    return replace(loaded, split=canonical, rows=apply_subset(loaded.rows, narrowed)), n_split


def _whole_split(
    task: str, split: str, data_dir: str | Path | None, root: Path, where: str, report: VerificationReport
) -> LoadedSplit | None:
    if (task, split) in report.loaded_splits:
        return report.loaded_splits[(task, split)]
    try:
        loaded = load_split(task, split, data_dir)
    except EvalsuiteError as exc:
        report.add(
            "gold",
            where,
            f"cannot load the registry's {task}/{split}: {exc.message}" + (f" ({exc.hint})" if exc.hint else ""),
        )
        return None
    if Path(loaded.source).resolve().is_relative_to(root.resolve()):
        report.add(
            "gold",
            where,
            f"the {task}/{split} gold file resolves inside the submission; gold answers never come from a submission",
        )
        return None
    report.loaded_splits[(task, split)] = loaded
    return loaded


def _declared_subset(
    subset: str | None, split: str, where: str, report: VerificationReport
) -> Subset | None | Literal[False]:
    """The subset a declared split names (None: the whole split); False, with the problem reported, when it is not
    a subset `evalsuite run --subset` can choose."""
    if subset is None:
        return None
    try:
        chosen = parse_subset(subset)
    except EvalsuiteError as exc:
        report.add("split", where, f"{split[:100]!r}: {exc.message} ({exc.hint})")
        return False
    if chosen.kind == "full":
        report.add("split", where, f"{split[:100]!r}: a whole split is declared without {SUBSET_MARK}full")
        return False
    return chosen


def _subset_spec(spec: str | None, n_split: int) -> Subset | None:
    """The questions a subset spec chooses of a split of `n_split` (`first:0128` is `first:128`); None for the whole
    split (a subset of at least n_split questions is all of them) and for what is no `--subset` spec (an import's
    `ids:N` counts its records: the ids check is what holds it to the split)."""
    try:
        return _narrowing(parse_subset(spec) if spec else None, n_split)
    except EvalsuiteError:
        return None


def _narrowing(chosen: Subset | None, n_split: int) -> Subset | None:
    """`chosen` when it holds fewer than all `n_split` questions of its split, else None: the whole split."""
    return chosen if chosen is not None and chosen.n is not None and chosen.n < n_split else None


def check_manifest_split(
    manifest: Manifest | None,
    task: str,
    declared: str,
    loaded: LoadedSplit,
    n_split: int,
    where: str,
    report: VerificationReport,
) -> None:
    """The declared split (and subset) against what the run's manifest recorded; `loaded`: the declared questions."""
    if manifest is None:
        return
    recorded = manifest.splits.get(task)
    if (recorded is None and manifest.kind == "run") or not split_covers(declared, recorded):
        report.add(
            "split", where, f"{task}: submission.json declares split {declared!r} but the manifest records {recorded!r}"
        )
    _, subset = split_and_subset(loaded.split)
    ran = _subset_spec(manifest.subset, n_split)
    if manifest.kind == "run" and _subset_spec(subset, n_split) != ran:
        report.add(
            "split",
            where,
            f"{task}: submission.json declares split {declared!r} but the run evaluated subset "
            f"{manifest.subset or 'full'} (declare {with_subset(recorded or declared, str(ran) if ran else None)!r})",
        )
    recorded_ids = manifest.subset_ids_hash.get(task)
    if subset and recorded_ids and recorded_ids != ids_hash([row.id for row in loaded.rows]):
        report.add(
            "split",
            where,
            f"{task}: the manifest's ids of subset {subset} are not the registry's {loaded.split} "
            "(the run read other data than the registry's split)",
        )
