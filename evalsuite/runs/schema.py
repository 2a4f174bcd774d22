"""The run directory's records: manifest, one example per prediction line, and the metrics summary.

A run directory holds `manifest.json`, `predictions.jsonl` (appended and flushed per example) and
`metrics.json`. Every record carries `schema_version`; readers refuse versions they do not know.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalsuite.provenance import Provenance

SCHEMA_VERSION = 1
# The scoring version: bump when a rule every metric shares changes (answer extraction, the default normalization):
# old scores are then not comparable. A change to one metric bumps that metric's own `MetricSpec.version` instead.
METRIC_CONVENTION = "flashrag-squad-v1"
# What every run was scored with before metrics.json recorded its metric versions (all at version 1).
LEGACY_METRICS = ("em", "cover_em", "f1", "precision", "recall", "retrieval_hit", "n_searches", "n_turns", "n_invalid",
                  "has_answer")

MANIFEST_FILE = "manifest.json"
PREDICTIONS_FILE = "predictions.jsonl"
METRICS_FILE = "metrics.json"
# Per-example score columns were written beside predictions.jsonl under this name before issue 26; runs/columns.py now
# caches them by content hash in the local cache folder and never reads this file (a copied run could carry a forged one).
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


class Manifest(Provenance):
    """A run's manifest: the shared provenance fields (evalsuite.provenance), what was evaluated and how (docs/provenance.md).
    Fields that do not apply stay None."""

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
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
    model: dict[str, Any] = Field(default_factory=dict)
    method: str | None = None
    prompt_template_hash: str | None = None
    backend: dict[str, Any] = Field(default_factory=dict)
    decoding: dict[str, Any] = Field(default_factory=dict)
    max_turns: int | None = None
    topk: int | None = None
    retriever: dict[str, Any] = Field(default_factory=dict)
    corpus: dict[str, Any] = Field(default_factory=dict)
    seeds: dict[str, int] = Field(default_factory=dict)
    source: dict[str, Any] = Field(default_factory=dict)
    notes: str | None = None
    # Every `evalsuite run` option as resolved (flags, --config file, defaults): `run --config manifest.json` repeats it
    run_config: dict[str, Any] | None = None


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
