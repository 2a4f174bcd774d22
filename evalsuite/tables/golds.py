"""The registry's gold answers for `evalsuite table`: a run is rescored against its tasks' gold answers loaded from
the benchmark data, never the golds its predictions.jsonl carries (someone else's run directory can carry edited
ones), whenever that data is on this machine.

Only local files are read (`--data-dir`'s places: $EVALSUITE_DATA_DIR and the download cache, then the data
packaged with evalsuite); a table never reaches the hub. Where a split's file is not here, or an example is not in
it, the run's stored scores are used, and `GoldBasis.note` says so in one line of the table's footnotes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.files import file_sha256
from evalsuite.metrics.registry import list_metrics
from evalsuite.runs import ExampleRecord, Manifest
from evalsuite.scoring import score_record, task_metrics
from evalsuite.tasks.loader import find_split_file, read_jsonl_rows, read_parquet_rows
from evalsuite.tasks.packaged import packaged_split_file
from evalsuite.tasks.registry import get_task


@dataclass
class GoldBasis:
    """What a run's table scores are computed against: for each task the run's manifest names, the registry split
    file found here (path and sha256) or not found, and how many examples were not in their registry split."""

    found: dict[tuple[str, str], tuple[Path, str]] = field(default_factory=dict)
    missing: list[tuple[str, str]] = field(default_factory=list)
    unknown_ids: int = 0

    def cache_key(self) -> str:
        """Mixed into the score cache's key: columns rescored against these gold files are cached apart from the
        run's stored scores (runs/columns.py)."""
        if not self.found:
            return ""
        text = ";".join(f"{task}/{split}={sha}" for (task, split), (_, sha) in sorted(self.found.items()))
        return "registry:" + hashlib.sha256(text.encode()).hexdigest()

    def note(self, run: str) -> str:
        """One line: the registry's golds, or what was used instead and how to get them."""
        found = ", ".join(f"{t}/{s}" for t, s in sorted(self.found))
        parts = [f"{run}: rescored against the registry's gold answers ({found})"] if found else []
        if self.missing:
            names = ", ".join(f"{t}/{s}" for t, s in self.missing)
            tasks = " ".join(sorted({t for t, _ in self.missing}))
            parts.append(
                f"{'' if found else run + ': '}scores as stored in predictions.jsonl for {names} (gold file not found "
                f"here: `evalsuite data download --tasks {tasks}`, or set EVALSUITE_DATA_DIR)"
            )
        if self.unknown_ids:
            parts.append(f"{self.unknown_ids} examples not in their registry split kept their stored scores")
        return "; ".join(parts) + "."


def _split_file(task: str, split: str) -> Path | None:
    """A registry split's local or packaged file; None when it is not on this machine (the hub is never asked)."""
    try:
        registered = get_task(task)
        found = find_split_file(registered, split)
        return found[0] if found else packaged_split_file(registered, split)
    except EvalsuiteError:
        return None


def registry_basis(manifest: Manifest) -> GoldBasis:
    """The registry split of each task the manifest names (its recorded split, else the task's evaluation split):
    hashed where found here, listed as missing otherwise. Rows are read only when a run is rescored."""
    basis = GoldBasis()
    for task in manifest.tasks:
        try:
            split = manifest.splits.get(task) or get_task(task).eval_split
        except EvalsuiteError:
            continue  # a task this evalsuite does not register has no registry golds
        path = _split_file(task, split)
        if path is None:
            basis.missing.append((task, split))
        else:
            basis.found[(task, split)] = (path, file_sha256(path))
    return basis


def rescore_with_registry(records: Sequence[ExampleRecord], basis: GoldBasis) -> list[ExampleRecord]:
    """The records with the registry's gold answers and every registered metric they carry (and their task's)
    recomputed; a record of a split not found here, or not in it, is returned as it is (counted in `basis`)."""
    golds: dict[tuple[str, str], dict[str, list[str]]] = {}
    for key, (path, _) in basis.found.items():
        rows = read_parquet_rows(path) if path.suffix == ".parquet" else read_jsonl_rows(path)
        golds[key] = {row.id: list(row.golden_answers) for row in rows}
    by_task = {key[0]: key for key in golds}
    per_example = {spec.name for spec in list_metrics()}  # not the metrics over samples (em_avg, pass@k)
    out = []
    for record in records:
        split_key = by_task.get(record.task)
        if split_key is None:  # a task whose split file is not here (listed in `basis.missing`)
            out.append(record)
            continue
        gold = golds[split_key].get(record.id) if record.split in (None, split_key[1]) else None
        if gold is None:
            basis.unknown_ids += 1
            out.append(record)
            continue
        rescored = record.model_copy(update={"golden_answers": gold})
        names = list(dict.fromkeys((*task_metrics(record.task), *(m for m in record.metrics if m in per_example))))
        rescored.metrics = {**record.metrics, **score_record(rescored, names)}
        out.append(rescored)
    return out
