"""`evalsuite submit`: pack run directories into a submission with metadata and checksums."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.files import untaken_name
from evalsuite.leaderboard.submission import (
    PREDICTIONS_GZ,
    RUNS_DIR,
    SUBMISSION_FILE,
    RunRef,
    SubmissionFile,
    SubmissionInfo,
    is_tarball,
    with_subset,
    write_checksums,
    write_gzip,
    write_tarball,
)
from evalsuite.provenance import provenance_fields
from evalsuite.runs import RunDirectory, summarize
from evalsuite.runs.schema import MANIFEST_FILE, METRICS_FILE


def _run_name(path: Path, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", path.resolve().name).strip("-.") or "run"
    return untaken_name(base, taken)


def _declared_splits(
    run: RunDirectory, records_tasks: dict[str, str | None], overrides: dict[str, str]
) -> dict[str, str]:
    """Task → split for a run: `--split` overrides, else the manifest's (with the subset it evaluated, e.g.
    `test@first:128`), else the records'."""
    manifest = run.read_manifest()
    # an evalsuite run's subset is a spec the verifier rebuilds; an import's ("ids:N") only counts its records
    subset = manifest.subset if manifest.kind == "run" else None
    splits: dict[str, str] = {}
    for task, record_split in records_tasks.items():
        recorded = manifest.splits.get(task) or record_split
        split = overrides.get(task) or (recorded and with_subset(recorded, subset))
        if not split:
            raise EvalsuiteError(f"{run.path}: no split known for task {task!r}", hint=f"pass --split {task}=SPLIT")
        splits[task] = split
    return splits


def _pack_run(
    run: RunDirectory, target: Path, overrides: dict[str, str], include_failed: bool
) -> tuple[dict[str, str], bool]:
    """Copy one run into the submission; returns its task → split and whether it holds failed records."""
    records = run.read_predictions()
    if not records:
        raise EvalsuiteError(
            f"{run.path} has no predictions", hint="finish the run (or `evalsuite run --resume`) before submitting"
        )
    failed = sum(r.status == "failed" for r in records)
    if failed and not include_failed:
        raise EvalsuiteError(
            f"{run.path} holds {failed} failed records",
            hint="finish them with `evalsuite run --resume`, or submit them as failed with --include-failed",
        )
    tasks: dict[str, str | None] = {}
    for record in records:
        tasks.setdefault(record.task, record.split)
    splits = _declared_splits(run, tasks, overrides)
    target.mkdir(parents=True)
    shutil.copyfile(run.manifest_path, target / MANIFEST_FILE)
    # Records are re-serialized (not copied) so a torn last line of a killed run never reaches the submission.
    write_gzip("".join(r.model_dump_json() + "\n" for r in records).encode("utf-8"), target / PREDICTIONS_GZ)
    if run.metrics_path.is_file():
        shutil.copyfile(run.metrics_path, target / METRICS_FILE)
    else:
        RunDirectory(target).write_metrics(summarize(records))  # the one metrics.json writer (atomic)
    return splits, failed > 0


def pack_submission(
    run_dirs: list[Path],
    output: Path,
    info: SubmissionInfo,
    split_overrides: dict[str, str] | None = None,
    overwrite: bool = False,
    include_failed: bool = False,
) -> Path:
    """Write a submission (a directory, or a tarball when `output` ends in .tar.gz/.tgz) from run directories;
    runs with failed records are refused unless `include_failed` (then the submission declares them)."""
    overrides = split_overrides or {}
    if output.exists() and not overwrite:
        raise EvalsuiteError(f"{output} already exists", hint="choose another -o or pass --overwrite")
    with tempfile.TemporaryDirectory(prefix="evalsuite-submit-") as tmp:
        root = Path(tmp) / "submission"
        taken: set[str] = set()
        refs: list[RunRef] = []
        owner: dict[str, str] = {}
        for path in run_dirs:
            run = RunDirectory(path)
            name = _run_name(path, taken)
            splits, has_failed = _pack_run(run, root / RUNS_DIR / name, overrides, include_failed)
            for task in splits:
                if task in owner:
                    raise EvalsuiteError(
                        f"task {task!r} appears in both {owner[task]} and {path}",
                        hint="submit one run per task (merge shards with `evalsuite merge` first)",
                    )
                owner[task] = str(path)
            refs.append(RunRef(name=name, tasks=splits, includes_failed=has_failed))
        unused = set(overrides) - set(owner)
        if unused:
            raise EvalsuiteError(f"--split names tasks that no run holds: {', '.join(sorted(unused))}")
        meta = SubmissionFile(**provenance_fields(), info=info, runs=refs)
        data = meta.model_dump(mode="json")
        for run in data["runs"]:
            if not run["includes_failed"]:
                del run["includes_failed"]  # only a run with failures says so; the others read as before
        (root / SUBMISSION_FILE).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        write_checksums(root)
        if is_tarball(output):
            if output.exists():
                output.unlink()
            return write_tarball(root, output)
        if output.exists():
            shutil.rmtree(output)
        shutil.copytree(root, output)
        return output
