"""`evalsuite submit`: pack run directories into a submission with metadata (read from an --info file, the options
and the first run's manifest) and checksums."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError, EvalsuiteError
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
from evalsuite.leaderboard.verification.declared_setting import manifest_setting
from evalsuite.runs import Manifest, RunDirectory, summarize
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


def read_info_file(path: Path) -> dict[str, Any]:
    """An `evalsuite submit --info` file: a YAML or JSON mapping of metadata fields, `model` and `setting` mappings."""
    import yaml

    from evalsuite.files import MAX_CONFIG_BYTES, load_untrusted_yaml, read_untrusted_bytes

    try:
        data = load_untrusted_yaml(read_untrusted_bytes(path, MAX_CONFIG_BYTES, "metadata file").decode("utf-8"), path)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: cannot read the metadata file ({exc})") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a mapping of metadata fields", hint="see docs/leaderboard.md for the fields")
    for field, example in (("model", "model: {name: Qwen2.5-3B, source: ...}"), ("setting", "setting: {topk: 3}")):
        value = data.get(field)
        if value is not None and not isinstance(value, dict):
            raise DataError(
                f"{path}: field '{field}' must be a mapping, got {type(value).__name__} {str(value)[:60]!r}",
                hint=f"write it as a mapping, e.g. {example}",
            )
    return data


def submission_info(
    data: dict[str, Any], first: Manifest, model: dict[str, str | None], setting: dict[str, Any]
) -> SubmissionInfo:
    """A submission's metadata: `data` (an --info file with the options that override it), `model` and `setting`
    the values given as options (None: not given); a setting neither gives is the first run manifest's
    (`manifest_setting`), and so are the model and method when nothing names them. Invalid or incomplete metadata is
    refused in one line."""
    from pydantic import ValidationError

    model_info = dict(data.get("model") or {})
    model_info.update({k: v for k, v in model.items() if v is not None})
    declared = dict(data.get("setting") or {})
    for key, default in manifest_setting(first).items():
        declared[key] = setting[key] if setting.get(key) is not None else declared.get(key, default)
    info = {**data, "model": model_info or {"name": first.model.spec}, "setting": declared}
    info.setdefault("method", first.method)
    try:
        return SubmissionInfo.model_validate(info)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise EvalsuiteError(
            f"submission metadata is incomplete or invalid: {where}",
            hint="pass --name, --method and --model (or an --info file)",
        ) from None
