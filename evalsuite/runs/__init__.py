"""Run directories: schema, append-only writer, torn-line-tolerant reader, metrics summary."""

from evalsuite.runs.schema import (
    METRIC_CONVENTION,
    SCHEMA_VERSION,
    ExampleRecord,
    Manifest,
    MetricsFile,
    MetricSummary,
    Passage,
    TaskSummary,
    Turn,
)
from evalsuite.runs.store import PredictionWriter, RunDirectory, read_predictions
from evalsuite.runs.summary import mean_ci, summarize

__all__ = [
    "METRIC_CONVENTION",
    "SCHEMA_VERSION",
    "ExampleRecord",
    "Manifest",
    "MetricSummary",
    "MetricsFile",
    "Passage",
    "PredictionWriter",
    "RunDirectory",
    "TaskSummary",
    "Turn",
    "mean_ci",
    "read_predictions",
    "summarize",
]
