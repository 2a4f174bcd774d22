"""The run directory's records: manifest, one example per prediction line, and the metrics summary.

A run directory holds `manifest.json`, `predictions.jsonl` (appended and flushed per example) and
`metrics.json`. Every record carries `schema_version`; readers refuse versions they do not know.

The manifest is typed all the way down: model, backend, retriever (with its index's corpus and encoder), the
manifest's own corpus and decoding are pydantic sections (`ModelSection` … `DecodingSection`), written and read
only through `RunDirectory.write_manifest` / `manifest_from_json`. Each section types the fields evalsuite reads
and keeps whatever else the component reported (a backend's dtype, an index's file list) as extra fields, so a
manifest stays a complete record. Manifests of schema version 1 (sections were free dicts) are migrated on read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from evalsuite.errors import DataError
from evalsuite.provenance import Provenance

SCHEMA_VERSION = 1
# The manifest's own version. 1: model, backend, retriever, corpus and decoding were free dicts (migrated on read,
# `manifest_from_json`); 2: they are the typed sections below.
MANIFEST_VERSION = 2
MANIFEST_VERSIONS_READ = (1, 2)
# The scoring version: bump when a rule every metric shares changes (answer extraction, the default normalization):
# old scores are then not comparable. A change to one metric bumps that metric's own `MetricSpec.version` instead.
METRIC_CONVENTION = "flashrag-squad-v1"
# What every run was scored with before metrics.json recorded its metric versions (all at version 1).
LEGACY_METRICS = (
    "em",
    "cover_em",
    "f1",
    "precision",
    "recall",
    "retrieval_hit",
    "n_searches",
    "n_turns",
    "n_invalid",
    "has_answer",
)

MANIFEST_FILE = "manifest.json"
PREDICTIONS_FILE = "predictions.jsonl"
METRICS_FILE = "metrics.json"
RUN_PLOT = "metrics.png"  # drawn where matplotlib is installed (the [site] extra)
# Per-example score columns were written beside predictions.jsonl under this name before issue 26; runs/columns.py
# now caches them by content hash in the local cache folder and never reads this file (a copied run could carry a
# forged one).
SCORES_FILE = "scores.npz"


class Passage(BaseModel):
    """A retrieved passage as the model saw it."""

    title: str | None = None
    text: str
    doc_id: str | None = None
    score: float | None = None


class Turn(BaseModel):
    """One model turn: what it generated, the action it took and what came back."""

    text: str
    think: list[str] = Field(default_factory=list)
    query: str | None = None
    sub_queries: list[str] = Field(default_factory=list)
    passages: list[Passage] = Field(default_factory=list)
    answer: str | None = None
    invalid_action: bool = False
    # Filled by the rollout engine; absent for imported trajectories.
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    retrieval_latency_s: float | None = None
    finish_reason: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Segment(BaseModel):
    """A stretch of a run's trajectory, in order: `chars` characters the model generated, or the rollout loop inserted
    (an observation, the invalid-action message). A record's segments cut its trajectory whole, so which text is the
    model's is written by the loop that knows it, never searched for afterwards (evalsuite.protocol.segments)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["model", "observation"]
    chars: int = Field(ge=0)


class ExampleRecord(BaseModel):
    """One evaluated example: the question, the full trajectory, its parsed turns and its scores."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    id: str
    task: str
    split: str | None = None
    question: str
    golden_answers: list[str]
    prediction: str | None
    trajectory: str = ""
    turns: list[Turn] = Field(default_factory=list)
    # The trajectory as typed segments (model text, observation), written by `evalsuite run`; None in records written
    # before segments existed and in imported trajectories (their writers recorded one string).
    segments: list[Segment] | None = None
    protocol_errors: list[str] = Field(default_factory=list)
    stop_reason: str | None = None
    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Sampled runs (`evalsuite run --samples K`): which of the question's K trajectories this is and the seed it was
    # drawn with; None in greedy runs.
    sample: int | None = None
    sample_seed: int | None = None


class ManifestSection(BaseModel):
    """A section of the manifest: the fields evalsuite reads are typed; anything else the component reported is kept
    as an extra field (`section.model_extra`). Unset fields are left out of the JSON, so a section reads as the
    component reported it."""

    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _without_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class ModelSection(ManifestSection):
    """The evaluated model (evalsuite.provenance.ModelIdentity's record): a file's or directory's sha256, else a hub
    repo with the commit it resolved to, or the name a server was asked for."""

    spec: str | None = None
    sha256: str | None = None
    hub_repo: str | None = None
    revision: str | None = None  # the hub commit
    model_hash: str | None = None  # a backend's own identity of what it replays (a recording's hash)

    def identity(self, served: str | None = None) -> Any:
        """What must be equal for two runs to have evaluated the same model."""
        if self.sha256 or self.model_hash:
            return self.sha256 or self.model_hash
        if self.revision:
            return {"spec": self.spec, "revision": self.revision}
        return self.spec if served in (None, self.spec) else {"spec": self.spec, "served": served}


class BackendSection(ManifestSection):
    """The backend as it reported itself (`Backend.info()`), the options it was given and the schedule it ran."""

    backend: str | None = None  # the backend's name: hf, vllm, llamacpp, openai, replay, …
    version: str | None = None
    model: str | None = None  # what the backend loaded, or the model an endpoint serves
    revision: str | None = None
    model_hash: str | None = None
    prompt_style: str | None = None
    schedule: str | None = None  # async or sync
    options: dict[str, Any] = Field(default_factory=dict)  # --backend-option values


class EncoderSection(ManifestSection):
    """A dense index's encoder: the name it was loaded by (shown, never trusted) and what identifies its weights:
    `fingerprint` (`name:<hub repo>` for a hub model, `sha256:…` over a local directory's files) and `revision`
    (the hub commit the cache resolved the repo to, or the local directory's content hash)."""

    name: str | None = None
    source: str | None = None
    fingerprint: str | None = None
    revision: str | None = None
    dim: int | None = None
    query_prefix: str | None = None
    passage_prefix: str | None = None
    prefix_rule: str | None = None
    pooling: str | None = None
    normalize: bool | None = None
    max_length: int | None = None


class CorpusSection(ManifestSection):
    """A corpus as an index (or an import) recorded it: file name and path (shown, never trusted), passage count and
    sha256 (what identifies it: runs/run_setting.py's `CorpusIdentity`)."""

    name: str | None = None
    path: str | None = None
    sha256: str | None = None
    num_documents: int | None = None
    size_bytes: int | None = None
    mtime_ns: int | None = None


class RetrieverParams(ManifestSection):
    """An index's build parameters; the encoder is the one evalsuite reads (BM25's k1/b and faiss's are extra)."""

    encoder: EncoderSection | None = None


class RetrieverSection(ManifestSection):
    """The retriever the run searched: the index manifest it reported (`Retriever.info()`) plus the `--retriever`
    spec it was given. Empty when the run used no retriever."""

    retriever: str | None = None  # an index's kind: bm25, dense, http
    kind: str | None = None  # a replayed retriever's kind
    name: str | None = None
    spec: str | None = None  # --retriever as given
    index_hash: str | None = None
    corpus_hash: str | None = None
    corpus: CorpusSection | None = None
    params: RetrieverParams | None = None

    @property
    def encoder(self) -> EncoderSection | None:
        return self.params.encoder if self.params is not None else None

    @property
    def used(self) -> bool:
        return bool(self.retriever or self.kind or self.name or self.index_hash or self.spec)


class DecodingSection(ManifestSection):
    """Decoding as the rollout ran it (`RolloutConfig.decoding()`), with `samples` for sampled runs."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    max_obs_tokens: int | None = None
    max_context_tokens: int | None = None
    samples: int | None = None
    # where it samples, how request seeds come from the run's seed (models.base.SEEDING); None: greedy, or a run made
    # before the scheme was recorded
    seeding: str | None = None


SECTIONS: dict[str, type[ManifestSection]] = {
    "model": ModelSection,
    "backend": BackendSection,
    "retriever": RetrieverSection,
    "corpus": CorpusSection,
    "decoding": DecodingSection,
}


class Manifest(Provenance):
    """A run's manifest: the shared provenance fields (evalsuite.provenance), what was evaluated and how
    (docs/provenance.md). Fields that do not apply stay None (or an empty section). Read it with
    `manifest_from_json` (old versions are migrated there); write it with `RunDirectory.write_manifest`."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = MANIFEST_VERSION
    kind: Literal["run", "import"] = "run"
    metric_convention: str = METRIC_CONVENTION
    finished_at: str | None = None
    # What was evaluated
    tasks: list[str] = Field(default_factory=list)
    splits: dict[str, str] = Field(default_factory=dict)
    subset: str | None = None
    subset_ids_hash: dict[str, str] = Field(default_factory=dict)
    data_files: dict[str, dict[str, str | None]] = Field(default_factory=dict)
    # How
    model: ModelSection = Field(default_factory=ModelSection)
    method: str | None = None
    prompt_template_hash: str | None = None
    backend: BackendSection = Field(default_factory=BackendSection)
    decoding: DecodingSection = Field(default_factory=DecodingSection)
    max_turns: int | None = None
    topk: int | None = None
    retriever: RetrieverSection = Field(default_factory=RetrieverSection)
    corpus: CorpusSection = Field(default_factory=CorpusSection)
    seeds: dict[str, int] = Field(default_factory=dict)
    # `--shard i/n` of a sharded run (`evalsuite merge` combines the shards; a merged run has none)
    shard: str | None = Field(default=None, pattern=r"^[0-9]{1,9}/[0-9]{1,9}$")
    source: dict[str, Any] = Field(default_factory=dict)
    notes: str | None = None
    # Every `evalsuite run` option as resolved (flags, --config file, defaults): `run --config manifest.json` repeats it
    run_config: dict[str, Any] | None = None
    # Values a version-1 manifest held where version 2 types a field otherwise ("backend.version": 3): kept, not read.
    unparsed_v1: dict[str, Any] | None = None


MANIFEST_HINT = (
    "pass a run directory written by `evalsuite run` or `evalsuite score` "
    "(an index's index.json or a tool's own config is not a run manifest)"
)


def _pop_path(section: dict[str, Any], loc: tuple[Any, ...]) -> tuple[bool, Any]:
    """Remove `section[loc[0]][loc[1]]…` (the deepest dict key on the path); (removed, value)."""
    node: Any = section
    keys = [part for part in loc if isinstance(part, str)]
    for depth, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            return False, None
        if depth == len(keys) - 1 or not isinstance(node[key], dict):
            return True, node.pop(key)
        node = node[key]
    return False, None


def _migrate_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A version-1 manifest as version 2: each free-dict section typed; a value whose type version 2 does not accept
    moves to `unparsed_v1` under its dotted path (kept, never read), so no old manifest fails to load."""
    obj, unparsed = dict(obj), {}
    for key, section in SECTIONS.items():
        value = obj.get(key)
        if not isinstance(value, dict):
            if value not in (None, {}):
                unparsed[key] = value
            obj[key] = {}
            continue
        value = json_copy(value)
        for _ in range(64):  # each pass removes at least one offending value
            try:
                section.model_validate(value)
                break
            except ValidationError as exc:
                removed = False
                for error in exc.errors():
                    ok, bad = _pop_path(value, tuple(error["loc"]))
                    if ok:
                        unparsed[".".join([key, *(str(p) for p in error["loc"] if isinstance(p, str))])] = bad
                        removed = True
                if not removed:
                    unparsed[key], value = value, {}
                    break
        obj[key] = value
    obj["schema_version"] = MANIFEST_VERSION
    if unparsed:
        obj["unparsed_v1"] = unparsed
    return obj


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists copied; migration edits the copy, never the caller's object)."""
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    return value


def manifest_from_json(obj: object, where: str) -> Manifest:
    """The one reader of a run manifest (a run directory's, a submission's): version 1 is migrated, version 2 read;
    anything else is a `DataError` in one line naming `where`, the field and what to do."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}", hint=MANIFEST_HINT)
    version = obj.get("schema_version")
    if version is None:
        raise DataError(f"{where}: not an evalsuite run manifest (no field 'schema_version')", hint=MANIFEST_HINT)
    if version not in MANIFEST_VERSIONS_READ:
        raise DataError(
            f"{where}: field 'schema_version': manifest version {version!r} is not one this evalsuite reads "
            f"({', '.join(map(str, MANIFEST_VERSIONS_READ))})",
            hint="read it with the evalsuite that wrote it, or upgrade evalsuite",
        )
    if version == 1:
        obj = _migrate_v1(obj)
    try:
        return Manifest.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise DataError(
            f"{where}: not a valid run manifest: field '{field}': {first['msg']}",
            hint="restore the manifest written by `evalsuite run`, or run again into a new -o directory",
        ) from None


class MetricSummary(BaseModel):
    mean: float
    ci_low: float
    ci_high: float


class TaskSummary(BaseModel):
    n: int
    n_failed: int = 0
    metrics: dict[str, MetricSummary]


class MetricsFile(BaseModel):
    """`metrics.json`: per task n and means with 95% CIs, plus macro-averages over task groups.

    `metric_convention` (the scoring version) and `metric_versions` (each registered metric the run was scored
    with, by its definition version) say what the scores mean; leaderboard verification recomputes exactly those.
    Files written before metric_versions existed hold None: they were scored with `LEGACY_METRICS`, version 1.
    """

    schema_version: int = SCHEMA_VERSION
    metric_convention: str = METRIC_CONVENTION
    metric_versions: dict[str, int] | None = None
    tasks: dict[str, TaskSummary]
    averages: dict[str, dict[str, float]] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)
