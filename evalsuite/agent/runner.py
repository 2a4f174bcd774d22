"""`evalsuite run`: task rows → batched rollouts → scored
records appended to a run directory, resumable and shardable."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalsuite.agent.engine import (
    RetrievalUnavailable,
    Rollout,
    RolloutConfig,
    RolloutEngine,
)
from evalsuite.agent.config import RunConfig
from evalsuite.agent.method import Method, get_method
from evalsuite.agent.papers import PaperCheck
from evalsuite.agent.resume_check import settings_differences
from evalsuite.runs.comparable import generation_options
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.process import add_process_metrics
from evalsuite.metrics.termination import RUN_METRICS
from evalsuite.models.base import SEEDING, Backend
from evalsuite.models.identity import model_identity
from evalsuite.models.packaged import resolve_model
from evalsuite.models.registry import backend_class, load_backend
from evalsuite.protocol.segments import typed_segments
from evalsuite.provenance import DataFile, provenance_fields, rows_sha256
from evalsuite.runs import ExampleRecord, Manifest, MetricsFile, RunDirectory
from evalsuite.runs.schema import MANIFEST_FILE
from evalsuite.scoring import score_record
from evalsuite.tasks import TaskRow, apply_subset, load_split, parse_task_list
from evalsuite.tasks.subset import ids_hash


@dataclass(frozen=True)
class Shard:
    """Share `index` of `count`: the examples at positions p ≡ index (mod count) of each task's subset."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def takes(self, position: int) -> bool:
        return position % self.count == self.index


def parse_shard(spec: str | None) -> Shard | None:
    """Parse 'i/n' with 0 <= i < n."""
    if spec is None:
        return None
    try:
        index, count = (int(part) for part in spec.split("/"))
    except ValueError:
        raise EvalsuiteError(f"invalid shard {spec!r}", hint="use --shard i/n, e.g. 0/4 (i counts from 0)") from None
    if count < 1 or not 0 <= index < count:
        raise EvalsuiteError(f"invalid shard {spec!r}: need 0 <= i < n", hint="use --shard 0/4 ... 3/4 for four shards")
    return Shard(index, count)


@dataclass
class RunSpec:
    """Everything `evalsuite run` was asked to do. The settings with defaults are `agent.config.RunConfig`'s (its
    defaults, its validation: a RunSpec the CLI would refuse cannot be made); `RunSpec(**config.spec_fields(), ...)`."""

    model: str
    backend: str
    tasks: str
    out: Path
    method: str = "search-r1"
    prompt_style: str = RunConfig.default("prompt_style")
    split: str | None = None
    data_dir: str | None = None
    subset: str = RunConfig.default("subset")
    retriever: str | None = None
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    batch_size: int = RunConfig.default("batch_size")
    shard: Shard | None = None
    resume: bool = False
    backend_options: dict[str, Any] = field(default_factory=dict)
    notes: str | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the resolved `evalsuite run` options, for the manifest
    # "sync" (turn-synchronous batches), "async" (each trajectory on its own; `batch_size` trajectories in flight),
    # None: async where the backend supports it
    schedule: str | None = RunConfig.default("schedule")
    # K sampled trajectories per question (sample j drawn with seed rollout.seed + j); 1: one greedy-style record
    samples: int = RunConfig.default("samples")
    # `--seeds 1,2,3`: sample j drawn with seeds[j] instead of rollout.seed + j (len(seeds) == samples)
    seeds: tuple[int, ...] | None = None
    # why this backend, when `evalsuite run` chose it from --model (recorded as the manifest's backend.chosen_by)
    backend_chosen_by: str | None = None

    def __post_init__(self) -> None:
        self.run_config()

    def run_config(self) -> RunConfig:
        """This run's settings, validated (the errors `evalsuite run` gives for the same values)."""
        return RunConfig.from_spec(self)


@dataclass
class Example:
    task: str
    split: str
    position: int
    row: TaskRow


@dataclass
class RunResult:
    directory: RunDirectory
    records: list[ExampleRecord]
    metrics: MetricsFile
    stopped: str | None = None  # why the run stopped early (retrieval down), None when it completed
    paper: PaperCheck | None = None  # the run against its method's paper evaluation setting (None: it has none)


def load_examples(spec: RunSpec) -> tuple[list[Example], dict[str, Any]]:
    """The examples of every task's subset (this shard's share) and the manifest fields describing them."""
    examples: list[Example] = []
    fields: dict[str, Any] = {"tasks": [], "splits": {}, "subset_ids_hash": {}, "data_files": {}}
    for task in parse_task_list(spec.tasks):
        loaded = load_split(task, spec.split, spec.data_dir)
        rows = apply_subset(loaded.rows, spec.subset)
        fields["tasks"].append(task.name)
        fields["splits"][task.name] = loaded.split
        fields["subset_ids_hash"][task.name] = ids_hash([row.id for row in rows])
        # the rows' own hash (all shards' rows): an edited question or gold answer is caught, not only a new file
        fields["data_files"][task.name] = DataFile(
            path=loaded.source, sha256=loaded.source_hash, rows_sha256=rows_sha256(rows)
        ).model_dump()
        for position, row in enumerate(rows):
            if spec.shard is None or spec.shard.takes(position):
                examples.append(Example(task.name, loaded.split, position, row))
    return examples, fields


def with_local_model(spec: RunSpec) -> RunSpec:
    """`spec` with a packaged model's name (`smollm2-135m`) replaced by what its backend loads (the GGUF, or the
    dequantized directory, built once), so the manifest identifies the weights themselves."""
    return replace(spec, model=resolve_model(spec.model, spec.backend))


def load_retriever_spec(spec: str | None, backend: Backend | None) -> Any:
    """A retriever from an index directory, an http://host:port/retrieve URL, `adqa` (BM25 over the shipped AD-QA
    corpus) or `replay` (the recording's passages)."""
    if spec is None:
        return None
    if spec == "adqa":
        from evalsuite.agent.default import demo_index_dir

        spec = str(demo_index_dir())
    if spec == "replay":
        from evalsuite.models.replay import ReplayBackend
        from evalsuite.retrieval.replay import ReplayRetriever

        if not isinstance(backend, ReplayBackend):
            raise EvalsuiteError(
                "--retriever replay needs --backend replay",
                hint="it returns the passages recorded with the replayed trajectories",
            )
        return ReplayRetriever(backend.examples)
    try:
        from evalsuite.retrieval import load_retriever
    except ImportError as exc:
        raise EvalsuiteError(f"retrieval is not available in this installation ({exc})") from None
    return load_retriever(spec)


def retriever_info(retriever: Any, spec: str | None) -> dict[str, Any]:
    if retriever is None:
        return {}
    info = dict(retriever.info()) if hasattr(retriever, "info") else {}
    info["spec"] = spec
    return info


def resolve_schedule(spec: RunSpec, backend: Backend | type[Backend] | None = None) -> str:
    """The schedule `spec` runs on with `backend` (default: its registered class), before a model is loaded; the
    decision itself is `RunConfig.resolve_schedule`."""
    chosen = backend if backend is not None else backend_class(spec.backend)
    return spec.run_config().resolve_schedule(chosen.supports_async, getattr(chosen, "name", None) or spec.backend)


def build_manifest(
    spec: RunSpec,
    backend_info: dict[str, Any],
    style: str,
    template_hash: str,
    retriever: dict[str, Any],
    fields: dict[str, Any],
    schedule: str = "sync",
) -> Manifest:
    """The run's manifest; `backend_info` is the loaded backend's `info()` (on Ray, the one a worker reports)."""
    identity = model_identity(spec.model, revision=backend_info.get("revision"))
    if backend_info.get("model_hash"):
        identity.model_hash = backend_info["model_hash"]
    return Manifest(
        **provenance_fields(),
        **fields,
        subset=spec.subset,
        model=identity.record(),
        method=spec.method,
        prompt_template_hash=template_hash,
        backend={
            **backend_info,
            "prompt_style": style,
            "options": generation_options(spec.backend_options, spec.backend),
            "schedule": schedule,
            **({"chosen_by": spec.backend_chosen_by} if spec.backend_chosen_by else {}),
        },
        decoding=decoding(spec),
        max_turns=spec.rollout.max_turns,
        topk=spec.rollout.topk,
        retriever=retriever,
        seeds={
            "seed": spec.rollout.seed,
            **({"samples": spec.samples} if spec.samples > 1 else {}),
            **{f"sample_{j}": seed for j, seed in enumerate(spec.seeds or ())},
        },
        shard=str(spec.shard) if spec.shard else None,
        batch_size=spec.batch_size,
        notes=spec.notes,
        run_config=spec.config or None,
    )


def decoding(spec: RunSpec) -> dict[str, Any]:
    """The manifest's decoding: the rollout's, a sampled run's number of samples and, wherever it samples (temperature
    above 0), the scheme its requests' seeds come from (`models.base.SEEDING`), so a resume never mixes two."""
    recorded = spec.rollout.decoding()
    if spec.samples > 1:
        recorded["samples"] = spec.samples
    if spec.rollout.temperature > 0:
        recorded["seeding"] = SEEDING
    return recorded


def check_seeding(out: Path, old: Manifest, new: Manifest) -> None:
    """Refuse to continue a sampled run whose finished trajectories were seeded by another scheme (a run written
    before the scheme was recorded has none): its samples and the new ones would not be one run's."""
    sampled = (old.decoding.temperature or 0) > 0 and (new.decoding.temperature or 0) > 0
    if sampled and old.decoding.seeding != new.decoding.seeding:
        before = old.decoding.seeding or "an older evalsuite's scheme (sha256 of seed and key)"
        raise EvalsuiteError(
            f"cannot resume {out}: its samples were seeded by {before}, "
            f"this evalsuite seeds them by {new.decoding.seeding}",
            hint="run it again in a new -o directory (its finished samples cannot be continued with their seeds)",
        )


def record_paper_check(manifest: Manifest) -> PaperCheck | None:
    """Check the run's setting against its method's paper evaluation setting and record it in the manifest's
    `paper_setting` field (`evalsuite methods --paper METHOD` prints that setting)."""
    from evalsuite.agent.papers import manifest_paper_check

    paper = manifest_paper_check(manifest)
    if paper is not None:
        setattr(manifest, "paper_setting", paper.to_dict())  # an extra of the manifest (extra="allow"), as merge.py's
    return paper


def to_record(example: Example, rollout: Rollout, method: Method) -> ExampleRecord:
    """A finished rollout as a scored run-directory record (protocol errors by the method's own protocol)."""
    record = ExampleRecord(
        id=example.row.id,
        task=example.task,
        split=example.split,
        question=example.row.question,
        golden_answers=example.row.golden_answers,
        prediction=rollout.prediction,
        trajectory=rollout.response,
        turns=rollout.turns,
        segments=typed_segments(rollout.segments),
        protocol_errors=method.protocol_errors(rollout.response, rollout.turns),
        stop_reason=rollout.stop_reason,
        status="failed" if rollout.error else "ok",
        error=rollout.error,
        metadata={
            **example.row.metadata,
            "prompt": rollout.prompt,
            "prompt_tokens": rollout.prompt_tokens,
            "context_tokens": rollout.context_tokens,
        },
        position=example.position,
    )
    # termination and cost (evalsuite.metrics.termination): only a run records what they read
    record.metrics = {**score_record(record), **score_record(record, RUN_METRICS)}
    add_process_metrics([record])  # the search-round counts `score` adds: run and score give the same columns
    return record


def prepare_directory(spec: RunSpec, manifest: Manifest) -> tuple[RunDirectory, list[ExampleRecord]]:
    """Create the run directory, or on --resume check its settings and keep its finished (status ok) records."""
    directory = RunDirectory(spec.out)
    if not directory.exists():
        if directory.predictions_path.exists() and not spec.resume:
            raise EvalsuiteError(f"{spec.out} holds predictions but no manifest", hint="choose another -o directory")
        if directory.path.is_dir() and any(directory.path.iterdir()):
            # a run writes only into a folder of its own: never among someone's files (nor over them, on --resume)
            raise EvalsuiteError(
                f"{spec.out} is not empty and is not a run directory (it has no {MANIFEST_FILE})",
                hint="give -o a new or empty directory",
            )
        directory.start(manifest)
        return directory, []
    if not spec.resume:
        raise EvalsuiteError(
            f"{spec.out} is already a run directory", hint="pass --resume to continue it, or choose another -o"
        )
    old = directory.read_manifest()
    check_seeding(spec.out, old, manifest)
    differences = settings_differences(old, manifest)
    if differences:
        raise EvalsuiteError(
            f"cannot resume {spec.out}: it was made with different settings\n  " + "\n  ".join(differences),
            hint="rerun with the run's original settings, or write to a new -o directory",
        )
    records = directory.read_predictions(repair=True)
    kept: dict[tuple[str, str, int | None], ExampleRecord] = {}
    for record in records:
        if record.status == "ok":
            kept.setdefault((record.task, record.id, record.sample), record)
    if len(kept) != len(records):
        # failed or duplicated lines are rewritten away so the retried examples appear once; atomically, so a kill
        # or a full disk during the rewrite leaves the old file with every finished record
        directory.rewrite_predictions(kept.values())
    manifest.created_at = old.created_at
    directory.write_manifest(manifest)
    return directory, list(kept.values())


ProgressHook = Callable[[list[ExampleRecord]], None]


def open_run(
    spec: RunSpec, manifest: Manifest, examples: list[Example], on_start: Callable[[int, int], None] | None
) -> tuple[RunDirectory, list[ExampleRecord], list[Example], PaperCheck | None]:
    """Check the setting against the paper's, create (or reopen with --resume) the run directory, and say how many
    examples are done: (directory, finished records, examples still to do, paper check)."""
    paper = record_paper_check(manifest)
    directory, done = prepare_directory(spec, manifest)
    finished = {(r.task, r.id, r.sample) for r in done}
    todo = [e for e in examples if any((e.task, e.row.id, j) not in finished for j in sample_indices(spec))]
    if on_start and spec.samples > 1:  # progress in trajectories: K per question
        on_start(len(examples) * spec.samples, len(finished))
    elif on_start:
        on_start(len(examples), len(examples) - len(todo))
    return directory, done, todo, paper


def sample_indices(spec: RunSpec) -> list[int | None]:
    """The sample index of each trajectory a question gets: [None] for a one-trajectory run, else 0..K−1."""
    return [None] if spec.samples == 1 else list(range(spec.samples))


def sample_seed(spec: RunSpec, sample: int | None) -> int:
    """The seed sample j is drawn with: --seeds' j-th, else the run's --seed plus j (the run's seed itself for a
    one-trajectory run)."""
    if spec.seeds is not None and sample is not None:
        return spec.seeds[sample]
    return spec.rollout.seed + (sample or 0)


@dataclass(frozen=True)
class Trajectory:
    """One trajectory a run owes: its question, its sample index (None in a one-trajectory run) and its seed."""

    example: Example
    sample: int | None
    seed: int

    @property
    def item(self) -> tuple[str, str]:
        """The engine's (key, question): every sample shares the key, so its requests' seeds differ by the sample's."""
        return self.example.row.id, self.example.row.question

    def record(self, rollout: Rollout, method: Method) -> ExampleRecord:
        record = to_record(self.example, rollout, method)
        if self.sample is not None:
            record.sample, record.sample_seed = self.sample, self.seed
        return record


def execute(
    spec: RunSpec,
    on_start: Callable[[int, int], None] | None = None,
    on_batch: ProgressHook | None = None,
    backend: Backend | None = None,
    on_stage: Callable[[str], None] | None = None,
    on_tokens: Callable[[int], None] | None = None,
) -> RunResult:
    """Run the whole evaluation described by `spec`; `backend` overrides loading one (tests, benchmarks).
    `on_stage` is told what loads before the first example runs, `on_tokens` how many tokens each generation call
    produced (progress while a batch is in flight)."""
    stage = on_stage or (lambda text: None)
    spec.run_config()  # a RunSpec changed after it was made is checked again
    stage("loading the tasks")
    examples, fields = load_examples(spec)
    schedule = resolve_schedule(spec, backend)  # before a model is loaded
    if backend is None:
        stage(f"loading the model ({spec.backend})")
        spec = with_local_model(spec)
    backend = backend or load_backend(spec.backend, spec.model, **spec.backend_options)
    method = get_method(spec.method)
    style = method.resolve_style(spec.prompt_style, backend.has_chat_template())
    if spec.retriever is not None:
        stage("loading the retriever")
    retriever = load_retriever_spec(spec.retriever, backend)
    manifest = build_manifest(
        spec,
        backend.info(),
        style,
        method.template_hash(style),
        retriever_info(retriever, spec.retriever),
        fields,
        schedule,
    )
    directory, done, todo, paper = open_run(spec, manifest, examples, on_start)
    finished = {(r.task, r.id, r.sample) for r in done}
    # question-major: a question's K samples, each with its own seed, side by side (a resume: only the missing ones)
    pending = [
        Trajectory(e, sample, sample_seed(spec, sample))
        for e in todo
        for sample in sample_indices(spec)
        if (e.task, e.row.id, sample) not in finished
    ]
    new: list[ExampleRecord] = []
    stopped = None
    with directory.writer() as writer:

        def keep(batch_records: list[ExampleRecord]) -> None:
            writer.extend(batch_records)  # appended as they finish: a kill loses only trajectories in flight
            new.extend(batch_records)
            if on_batch:
                on_batch(batch_records)

        try:
            _roll_out(
                RolloutEngine(backend, method, retriever, spec.rollout, style, on_generated=on_tokens),
                method,
                pending,
                schedule,
                spec.batch_size,
                keep,
            )
        except RetrievalUnavailable as exc:
            stopped = exc.message
    appended = list(done) + new  # the file's order: the kept records, then the new ones as they finished
    records = in_example_order(appended, examples)
    if stopped is None:
        keep_in_example_order(directory, appended, records)
    metrics = directory.finish(manifest, records, complete=stopped is None)
    backend.close()
    return RunResult(directory=directory, records=records, metrics=metrics, stopped=stopped, paper=paper)


def _roll_out(
    engine: RolloutEngine,
    method: Method,
    todo: list[Trajectory],
    schedule: str,
    batch_size: int,
    keep: Callable[[list[ExampleRecord]], None],
) -> None:
    """Roll out `todo` on one engine, each trajectory with its own seed, handing each to `keep` as it finishes (on
    both schedules; each record is kept as its trajectory finishes, not when the whole batch has)."""
    if schedule == "async":
        asyncio.run(
            engine.run_async(
                [t.item for t in todo],
                batch_size,
                lambda index, rollout: keep([todo[index].record(rollout, method)]),
                seeds=[t.seed for t in todo],
            )
        )
        return
    for batch in question_batches(todo, batch_size):

        def finished(index: int, rollout: Rollout, batch: list[Trajectory] = batch) -> None:
            keep([batch[index].record(rollout, method)])

        engine.run([t.item for t in batch], finished, seeds=[t.seed for t in batch])


def question_batches(todo: list[Trajectory], batch_size: int) -> list[list[Trajectory]]:
    """`todo` (question-major) in batches of at most `batch_size` trajectories that never split a question's samples
    (a question with more samples than that is a batch of its own): its samples' turns go to the backend in one call,
    where vLLM draws their first turns as one `n` request (`models.base.native_n_groups`)."""
    batches: list[list[Trajectory]] = []
    for _, question in itertools.groupby(todo, key=lambda t: (t.example.task, t.example.row.id)):
        samples = list(question)
        if not batches or len(batches[-1]) + len(samples) > batch_size:
            batches.append([])
        batches[-1].extend(samples)
    return batches


def in_example_order(records: list[ExampleRecord], examples: list[Example]) -> list[ExampleRecord]:
    """Records in the order of the run's examples (task by task, subset order; a question's samples in sample
    order), as a single-process run has them."""
    order = {(example.task, example.row.id): position for position, example in enumerate(examples)}
    return sorted(records, key=lambda record: (order.get((record.task, record.id), len(order)), record.sample or 0))


def keep_in_example_order(directory: RunDirectory, written: list[ExampleRecord], ordered: list[ExampleRecord]) -> None:
    """A completed run's predictions.jsonl holds its records in example order, whatever order they were appended in
    (the asynchronous schedule, a resume, Ray actors), so two runs of the same setting give the same file."""
    if [(r.task, r.id, r.sample) for r in written] != [(r.task, r.id, r.sample) for r in ordered]:
        directory.rewrite_predictions(ordered)
