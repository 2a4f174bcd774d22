"""`evalsuite merge`: shard run directories → one run directory, exactly as an unsharded run would have written it."""

from __future__ import annotations

import hashlib
from pathlib import Path

from evalsuite.agent.settings import MERGE_KEYS, settings_differences
from evalsuite.errors import EvalsuiteError
from evalsuite.provenance import now_iso
from evalsuite.runs import ExampleRecord, Manifest, MetricsFile, RunDirectory


def merge_runs(shard_dirs: list[Path], out: Path) -> tuple[Manifest, list[ExampleRecord], MetricsFile]:
    """Check the shards are one sharded run (same settings, shards 0..n-1 each once, all finished) and combine them."""
    if not shard_dirs:
        raise EvalsuiteError("no shard directories given", hint="evalsuite merge RUN_0 RUN_1 ... -o MERGED")
    manifests = [RunDirectory(d).read_manifest() for d in shard_dirs]
    shards: dict[int, Path] = {}
    count = None
    for directory, manifest in zip(shard_dirs, manifests):
        shard = manifest.shard
        if not shard:
            raise EvalsuiteError(
                f"{directory} is not a shard (its manifest has no shard)",
                hint="merge directories written with --shard i/n",
            )
        index, total = (int(x) for x in str(shard).split("/"))
        if count is not None and total != count:
            raise EvalsuiteError(f"{directory} is shard {shard}, but another shard says there are {count} shards")
        count = total
        if index in shards:
            raise EvalsuiteError(f"shard {shard} is given twice: {shards[index]} and {directory}")
        shards[index] = directory
        if manifest.finished_at is None:
            raise EvalsuiteError(
                f"{directory} (shard {shard}) did not finish", hint=f"run it again with --resume -o {directory}"
            )
        differences = settings_differences(manifests[0], manifest, MERGE_KEYS)
        if differences:
            raise EvalsuiteError(
                f"{directory} was run with different settings from {shard_dirs[0]}:\n  " + "\n  ".join(differences)
            )
    missing = sorted(set(range(count or 0)) - set(shards))
    if missing:
        raise EvalsuiteError(
            f"shards missing: {', '.join(f'{i}/{count}' for i in missing)}", hint="run them, then merge all of them"
        )
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
    return _write_merged(merged, manifests, shard_dirs, records, out)


def _run_seed(manifest: Manifest) -> int | None:
    """The seed a one-trajectory run was drawn with (`run --seed`), None when its manifest records none (imports)."""
    seed = manifest.seeds.get("seed")
    return None if seed is None else int(seed)


def _model_identity(manifest: Manifest) -> object | None:
    """The evaluated model's recorded identity (a file's hash, a hub commit, a name), None when the manifest records
    none (an imported file: its writer recorded no model)."""
    model = manifest.model
    if not (model.sha256 or model.model_hash or model.spec):
        return None
    return model.identity(served=manifest.backend.model)


def _unrecorded(manifest: Manifest, rows: list[ExampleRecord]) -> list[str]:
    """What a run lacks to be a seed on its record: a model identity, a seed for each of its samples."""
    missing = [] if _model_identity(manifest) is not None else ["no model identity"]
    if any((r.sample_seed if r.sample is not None else _run_seed(manifest)) is None for r in rows):
        missing.append("no seed")
    return missing


def _content_key(rows: list[ExampleRecord]) -> str:
    """What two copies of one file share whatever their names: every question's trajectories and predictions (for
    a run with recorded seeds, its imported file's hash when it has one, else this)."""
    items = sorted(((r.task, r.id, r.trajectory, r.prediction or "") for r in rows), key=lambda item: item)
    return hashlib.sha256(repr(items).encode()).hexdigest()


def merge_seed_runs(
    run_dirs: list[Path], out: Path, declared: bool = False
) -> tuple[Manifest, list[ExampleRecord], MetricsFile]:
    """Runs of one setting repeated with different seeds (or `run --seeds` runs) → one multi-seed run directory.

    Each one-trajectory run becomes one sample of every question (run i is sample i, recorded with its seed) and a
    sampled run brings its own samples, renumbered after the ones before it: the result is exactly what
    `evalsuite run --seeds` writes, so metrics.json, tables (mean ± sd over seeds) and the leaderboard read it as a
    sampled run, with questions as clusters. The runs must share every result-changing setting but the seed, the
    model's recorded identity, and hold the same questions; no seed twice, no two runs with the same trajectories.

    A run that records no model identity or no seed (an imported file: its writer recorded neither) is a seed only
    on the word of whoever merges: refused unless `declared`, and then the merged manifest's `declared_seeds` names
    each such run and what it lacks. Which run comes first changes no metric (evalsuite.metrics.samples).
    """
    if len(run_dirs) < 2:
        raise EvalsuiteError(
            "merging seeds needs two or more run directories",
            hint="evalsuite merge --as-seeds RUN_SEED1 RUN_SEED2 ... -o MERGED",
        )
    resolved = [d.resolve() for d in run_dirs]
    for i, path in enumerate(resolved):
        if path in resolved[:i]:
            raise EvalsuiteError(f"{run_dirs[i]} is given twice", hint="pass each seed's run directory once")
    manifests = [RunDirectory(d).read_manifest() for d in run_dirs]
    for directory, manifest in zip(run_dirs, manifests):
        if manifest.kind == "run" and manifest.finished_at is None:
            raise EvalsuiteError(f"{directory} did not finish", hint=f"run it again with --resume -o {directory}")
        differences = settings_differences(manifests[0], manifest, tuple(k for k in MERGE_KEYS if k != "decoding"))
        first, own = manifests[0].decoding.model_dump(), manifest.decoding.model_dump()
        decoding = [
            f"decoding {key}: {run_dirs[0]} has {first.get(key)!r}, {directory} has {own.get(key)!r}"
            for key in sorted(set(first) | set(own))
            if key not in ("samples", "seed") and first.get(key) != own.get(key)
        ]
        if differences or decoding:
            raise EvalsuiteError(
                f"{directory} was run with different settings from {run_dirs[0]}: "
                + "; ".join(differences + decoding)[:400],
                hint="merge repeats of one setting that differ only in their seed",
            )
    records: list[ExampleRecord] = []
    seeds: list[int | None] = []
    seed_owner: dict[int, Path] = {}
    copies: dict[str, Path] = {}  # trajectories' hash → the run holding them
    declared_copies: dict[str, Path] = {}  # the same, of runs that are seeds on declaration only
    sources: dict[str, Path] = {}  # an imported file's hash → the run importing it
    declared_runs: dict[str, str] = {}
    questions: list[tuple[str, str]] | None = None
    for directory, manifest in zip(run_dirs, manifests):
        rows = RunDirectory(directory).read_predictions()
        if not rows:
            raise EvalsuiteError(f"{directory} holds no predictions", hint="merge finished runs")
        unrecorded = _unrecorded(manifest, rows)
        if unrecorded and not declared:
            raise EvalsuiteError(
                f"{directory} records {' and '.join(unrecorded)}: nothing shows it is a seed of the same model",
                hint="merge runs of one model made with --seed; for imported files you know to be seeds of one "
                "model, pass --declared-seeds (the merged run then says the seeds are declared)",
            )
        if unrecorded:
            declared_runs[str(directory)] = ", ".join(unrecorded)
        # Recorded distinct seeds may give the same trajectories (a deterministic backend: replay); a run that is
        # a seed on declaration only must differ from every other, and no file may be imported twice.
        content, source = _content_key(rows), str(manifest.source.get("sha256") or "")
        twin = (copies if unrecorded else declared_copies).get(content) or sources.get(source)
        if twin is not None:
            raise EvalsuiteError(
                f"{directory} holds the same trajectories as {twin}: two copies of one run are not two seeds",
                hint="merge runs drawn with different seeds",
            )
        copies[content] = directory
        if unrecorded:
            declared_copies[content] = directory
        if source:
            sources[source] = directory
        held = list(dict.fromkeys((r.task, r.id) for r in rows))
        if questions is None:
            questions = held
        elif set(held) != set(questions):
            only = sorted(set(questions) - set(held)) or sorted(set(held) - set(questions))
            where = directory if set(questions) - set(held) else run_dirs[0]
            raise EvalsuiteError(
                f"{where} lacks question {only[0][0]}/{only[0][1]} that another run holds "
                f"({len(set(questions) ^ set(held))} questions differ)",
                hint="merge runs of the same questions (the same tasks, splits and --limit)",
            )
        # (the run's sample index, its seed) → the merged sample index
        mine = sorted(
            {(r.sample, r.sample_seed if r.sample is not None else _run_seed(manifest)) for r in rows},
            key=lambda pair: pair[0] or 0,
        )
        renumber = {}
        for sample, seed in mine:
            if seed is not None and seed in seed_owner:
                raise EvalsuiteError(
                    f"seed {seed} is in both {seed_owner[seed]} and {directory}",
                    hint="merge runs drawn with different seeds (a repeated seed repeats the samples)",
                )
            if seed is not None:
                seed_owner[seed] = directory
            renumber[sample] = len(seeds)
            seeds.append(seed)
        for r in rows:
            j = renumber[r.sample]
            records.append(r.model_copy(update={"sample": j, "sample_seed": seeds[j]}))
    assert questions is not None
    order = {question: position for position, question in enumerate(questions)}
    records.sort(key=lambda r: (order[(r.task, r.id)], r.sample))
    merged = manifests[0].model_copy(deep=True)
    merged.decoding = merged.decoding.model_copy(update={"samples": len(seeds), "seed": None})  # seeds: per sample
    merged.seeds = {"samples": len(seeds), **{f"sample_{j}": seed for j, seed in enumerate(seeds) if seed is not None}}
    merged.run_config = None  # no one command repeats runs made separately
    if declared_runs:  # an extra field of the manifest, as `shard` is
        setattr(merged, "declared_seeds", declared_runs)
    return _write_merged(merged, manifests, run_dirs, records, out)


def _write_merged(
    merged: Manifest, manifests: list[Manifest], sources: list[Path], records: list[ExampleRecord], out: Path
) -> tuple[Manifest, list[ExampleRecord], MetricsFile]:
    """Write a merged run directory as `RunDirectory.write` writes every run directory, its manifest recording what
    it was merged from."""
    setattr(merged, "merged_from", [str(d) for d in sources])  # an extra field of the manifest, as `shard` is
    merged.created_at = min(m.created_at for m in manifests)
    merged.finished_at = now_iso()
    target = RunDirectory(out)
    if target.exists():
        raise EvalsuiteError(f"{out} is already a run directory", hint="choose another -o")
    metrics = target.write(merged, records)
    return merged, records, metrics
