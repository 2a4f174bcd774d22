"""`evalsuite merge`: shard run directories → one run directory, exactly as an unsharded run would have written it."""

from __future__ import annotations

from pathlib import Path

from evalsuite.agent.settings import MERGE_KEYS, settings_differences
from evalsuite.errors import EvalsuiteError
from evalsuite.runs import ExampleRecord, Manifest, MetricsFile, RunDirectory, summarize
from evalsuite.runs.columns import write_scores
from evalsuite.runs.provenance import now_iso


def merge_runs(shard_dirs: list[Path], out: Path) -> tuple[Manifest, list[ExampleRecord], MetricsFile]:
    """Check the shards are one sharded run (same settings, shards 0..n-1 each once, all finished) and combine them."""
    if not shard_dirs:
        raise EvalsuiteError("no shard directories given", hint="evalsuite merge RUN_0 RUN_1 ... -o MERGED")
    manifests = [RunDirectory(d).read_manifest() for d in shard_dirs]
    shards: dict[int, Path] = {}
    count = None
    for directory, manifest in zip(shard_dirs, manifests):
        shard = getattr(manifest, "shard", None)
        if not shard:
            raise EvalsuiteError(f"{directory} is not a shard (its manifest has no shard)", hint="merge directories written with --shard i/n")
        index, total = (int(x) for x in str(shard).split("/"))
        if count is not None and total != count:
            raise EvalsuiteError(f"{directory} is shard {shard}, but another shard says there are {count} shards")
        count = total
        if index in shards:
            raise EvalsuiteError(f"shard {shard} is given twice: {shards[index]} and {directory}")
        shards[index] = directory
        if manifest.finished_at is None:
            raise EvalsuiteError(f"{directory} (shard {shard}) did not finish", hint=f"run it again with --resume -o {directory}")
        differences = settings_differences(manifests[0], manifest, MERGE_KEYS)
        if differences:
            raise EvalsuiteError(f"{directory} was run with different settings from {shard_dirs[0]}:\n  " + "\n  ".join(differences))
    missing = sorted(set(range(count or 0)) - set(shards))
    if missing:
        raise EvalsuiteError(f"shards missing: {', '.join(f'{i}/{count}' for i in missing)}", hint="run them, then merge all of them")
    records: list[ExampleRecord] = []
    seen: dict[tuple[str, str], Path] = {}
    for directory in shard_dirs:
        for record in RunDirectory(directory).read_predictions():
            key = (record.task, record.id)
            if key in seen:
                raise EvalsuiteError(f"example {record.task}/{record.id} appears in both {seen[key]} and {directory}")
            seen[key] = directory
            records.append(record)
    order = {task: i for i, task in enumerate(manifests[0].tasks)}
    records.sort(key=lambda r: (order.get(r.task, len(order)), getattr(r, "position", 0)))
    merged = manifests[0].model_copy(deep=True)
    merged.shard = None
    if merged.run_config:  # repeating the merged run from its manifest runs it whole
        merged.run_config = {**merged.run_config, "shard": None}
    merged.merged_from = [str(d) for d in shard_dirs]
    merged.created_at = min(m.created_at for m in manifests)
    merged.finished_at = now_iso()
    metrics = summarize(records)
    target = RunDirectory(out)
    if target.exists():
        raise EvalsuiteError(f"{out} is already a run directory", hint="choose another -o")
    target.write_manifest(merged)
    target.rewrite_predictions(records)
    target.write_metrics(metrics)
    write_scores(out, records)
    return merged, records, metrics
