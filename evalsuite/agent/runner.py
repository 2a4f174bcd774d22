"""`evalsuite run`: task rows → batched rollouts → scored records appended to a run directory, resumable and
shardable. `execute` is the one orchestration, in this process or on Ray (`agent.distributed` supplies only the
actors that roll trajectories out), so sampling, seeds, resume and the manifest are the same code on every path."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from evalsuite.agent.engine import RetrievalUnavailable, Rollout, RolloutEngine
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
    """Everything `evalsuite run` was asked to do: which model, method, tasks and retriever, where the run directory
    is, and the run's settings, `config` (an `agent.config.RunConfig`, validated when it is made and only then: it is
    frozen, so a RunSpec cannot hold settings the CLI would refuse). Nothing here repeats a setting."""

    model: str
    backend: str
    tasks: str
    out: Path
    method: str = "search-r1"
    config: RunConfig = field(default_factory=RunConfig)
    split: str | None = None
    data_dir: str | None = None
    retriever: str | None = None
    shard: Shard | None = None
    resume: bool = False
    backend_options: dict[str, Any] = field(default_factory=dict)
    notes: str | None = None
    # what the manifest's `run_config` holds besides the settings: the resolved `evalsuite run` options (so
    # `run --config manifest.json` repeats the run), or `evalsuite reproduce`'s link to its recipe
    recorded_options: dict[str, Any] = field(default_factory=dict)
    # why this backend, when `evalsuite run` chose it from --model (recorded as the manifest's backend.chosen_by)
    backend_chosen_by: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.config, RunConfig):
            raise EvalsuiteError(
                f"RunSpec(config=...) takes a RunConfig, not a {type(self.config).__name__}",
                hint="pass config=RunConfig(topk=5, ...) (evalsuite.agent.config)",
            )


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
        rows = apply_subset(loaded.rows, spec.config.subset)
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
    return spec.config.resolve_schedule(chosen.supports_async, getattr(chosen, "name", None) or spec.backend)


def build_manifest(
    spec: RunSpec,
    backend_info: dict[str, Any],
    style: str,
    template_hash: str,
    retriever: dict[str, Any],
    fields: dict[str, Any],
    schedule: str = "sync",
) -> Manifest:
    """The run's manifest; `backend_info` is the loaded backend's `info()` (on Ray, the one a worker reports). The
    settings are recorded whole in `run_config` (so a new setting is recorded with no edit here); the typed sections
    that resume, merge, tables and verification compare (decoding, limits, seeds) are read from them."""
    config = spec.config
    identity = model_identity(spec.model, revision=backend_info.get("revision"))
    if backend_info.get("model_hash"):
        identity.model_hash = backend_info["model_hash"]
    return Manifest(
        **provenance_fields(),
        **fields,
        subset=config.subset,
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
        max_turns=config.max_turns,
        topk=config.topk,
        retriever=retriever,
        # the number of samples is decoding's (recorded once); older manifests also hold seeds.samples
        seeds={"seed": config.seed, **{f"sample_{j}": seed for j, seed in enumerate(config.seeds or ())}},
        shard=str(spec.shard) if spec.shard else None,
        batch_size=config.batch_size,
        notes=spec.notes,
        # the command line's own record wins where it has the key (`subset: null` with `limit: 8` repeats as given)
        run_config={**config.model_dump(mode="json"), **spec.recorded_options},
    )


def decoding(spec: RunSpec) -> dict[str, Any]:
    """The manifest's decoding: the rollout's, a sampled run's number of samples and, wherever it samples (temperature
    above 0), the scheme its requests' seeds come from (`models.base.SEEDING`), so a resume never mixes two."""
    recorded = spec.config.rollout().decoding()
    if spec.config.samples > 1:
        recorded["samples"] = spec.config.samples
    if spec.config.temperature > 0:
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
    todo = [e for e in examples if any((e.task, e.row.id, j) not in finished for j in spec.config.sample_indices())]
    if on_start and spec.config.samples > 1:  # progress in trajectories: K per question
        on_start(len(examples) * spec.config.samples, len(finished))
    elif on_start:
        on_start(len(examples), len(examples) - len(todo))
    return directory, done, todo, paper


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


class Workers(Protocol):
    """Where a run's trajectories are rolled out: this process (`LocalWorkers`) or a Ray cluster's actors
    (`agent.distributed.RayWorkers`). `execute` owns everything else; this is what it needs of them: the loaded parts'
    manifest fields, and `roll_out`."""

    backend_info: dict[str, Any]
    style: str
    retriever_info: dict[str, Any]

    def roll_out(self, todo: list[Trajectory], keep: Callable[[list[ExampleRecord]], None]) -> str | None:
        """Roll out `todo`, handing each record to `keep` as it finishes; why the run stopped early, or None."""
        ...


class RayLauncher(Protocol):
    """What `execute(ray=...)` needs of its Ray options (`agent.distributed.RayOptions`, which this module does not
    import: the Ray path imports this one)."""

    def check_installed(self) -> Any: ...

    def workers(
        self, spec: RunSpec, schedule: str, trajectories: int, stage: Callable[[str], None]
    ) -> AbstractContextManager[Workers]: ...


@dataclass
class LocalWorkers:
    """Rollouts in this process: one engine over the loaded backend and retriever, on the run's schedule."""

    engine: RolloutEngine
    method: Method
    schedule: str
    batch_size: int
    backend_info: dict[str, Any]
    style: str
    retriever_info: dict[str, Any]

    def roll_out(self, todo: list[Trajectory], keep: Callable[[list[ExampleRecord]], None]) -> str | None:
        try:
            roll_out(self.engine, self.method, todo, self.schedule, self.batch_size, keep)
        except RetrievalUnavailable as exc:
            return exc.message
        return None


@contextmanager
def local_workers(
    spec: RunSpec,
    method: Method,
    schedule: str,
    backend: Backend | None,
    stage: Callable[[str], None],
    on_tokens: Callable[[int], None] | None,
) -> Iterator[LocalWorkers]:
    """The backend (`backend`, or `spec`'s loaded here), the retriever and the engine; the backend is closed after."""
    backend = backend or load_backend(spec.backend, spec.model, **spec.backend_options)
    try:
        style = method.resolve_style(spec.config.prompt_style, backend.has_chat_template())
        if spec.retriever is not None:
            stage("loading the retriever")
        retriever = load_retriever_spec(spec.retriever, backend)
        engine = RolloutEngine(backend, method, retriever, spec.config.rollout(), style, on_generated=on_tokens)
        info = retriever_info(retriever, spec.retriever)
        yield LocalWorkers(engine, method, schedule, spec.config.batch_size, backend.info(), style, info)
    finally:
        backend.close()


def owed_trajectories(config: RunConfig, todo: list[Example], done: list[ExampleRecord]) -> list[Trajectory]:
    """The trajectories still to run, question-major: a question's K samples, each with its own seed, side by side
    (a resume: only the missing ones)."""
    finished = {(r.task, r.id, r.sample) for r in done}
    return [
        Trajectory(e, sample, config.sample_seed(sample))
        for e in todo
        for sample in config.sample_indices()
        if (e.task, e.row.id, sample) not in finished
    ]


def execute(
    spec: RunSpec,
    on_start: Callable[[int, int], None] | None = None,
    on_batch: ProgressHook | None = None,
    backend: Backend | None = None,
    on_stage: Callable[[str], None] | None = None,
    on_tokens: Callable[[int], None] | None = None,
    ray: RayLauncher | None = None,
) -> RunResult:
    """Run the whole evaluation described by `spec`, in this process or (`ray`: an `agent.distributed.RayOptions`)
    on a Ray cluster's actors. Everything but where the trajectories roll out is this one function on every path:
    the examples, each question's samples and their seeds, the schedule, the manifest, `--resume`, the writer and
    the order of the finished file. `backend` overrides loading one (tests, benchmarks; not with `ray`, whose actors
    load their own). `on_stage` is told what loads before the first example runs, `on_tokens` how many tokens each
    generation call produced (in this process only)."""
    stage = on_stage or (lambda text: None)
    if ray is not None:
        if backend is not None:
            raise EvalsuiteError(
                "a loaded backend cannot be sent to Ray actors (execute got both backend= and ray=)",
                hint="drop backend= (each actor loads spec.backend), or drop ray= to run in this process",
            )
        ray.check_installed()  # before the tasks load: a missing extra is named at once
    stage("loading the tasks")
    examples, fields = load_examples(spec)
    schedule = resolve_schedule(spec, backend)  # before a model is loaded or Ray started
    if backend is None:
        stage(f"loading the model ({spec.backend})")
        spec = with_local_model(spec)  # built once, here, not by every Ray actor
    method = get_method(spec.method)
    if ray is not None:
        workers = ray.workers(spec, schedule, len(examples) * spec.config.samples, stage)
    else:
        workers = local_workers(spec, method, schedule, backend, stage, on_tokens)
    new: list[ExampleRecord] = []
    with workers as parts:
        manifest = build_manifest(
            spec,
            parts.backend_info,
            parts.style,
            method.template_hash(parts.style),
            parts.retriever_info,
            fields,
            schedule,
        )
        directory, done, todo, paper = open_run(spec, manifest, examples, on_start)
        with directory.writer() as writer:

            def keep(batch_records: list[ExampleRecord]) -> None:
                writer.extend(batch_records)  # appended as they finish: a kill loses only trajectories in flight
                new.extend(batch_records)
                if on_batch:
                    on_batch(batch_records)

            stopped = parts.roll_out(owed_trajectories(spec.config, todo, done), keep)
    appended = list(done) + new  # the file's order: the kept records, then the new ones as they finished
    records = in_example_order(appended, examples)
    if stopped is None:
        keep_in_example_order(directory, appended, records)
    metrics = directory.finish(manifest, records, complete=stopped is None)
    return RunResult(directory=directory, records=records, metrics=metrics, stopped=stopped, paper=paper)


def roll_out(
    engine: RolloutEngine,
    method: Method,
    todo: list[Trajectory],
    schedule: str,
    batch_size: int,
    keep: Callable[[list[ExampleRecord]], None],
) -> None:
    """Roll out `todo` on one engine, each trajectory with its own seed, handing each to `keep` as it finishes (on
    both schedules; each record is kept as its trajectory finishes, not when the whole batch has). A Ray actor
    plays its batches with this too."""
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
