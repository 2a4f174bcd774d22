"""Run directories: schema, append-only writer, torn-line-tolerant reader, metrics summary.

The names below are re-exported lazily (`evalsuite.lazy_attributes`): importing `evalsuite.runs.schema`, the bottom
"records" layer, runs this file first, and an eager re-export would load the writer, the summary and through them
tasks, metrics and statistics (31 modules) with it. `tests/foundation/test_layering.py` checks that importing the
records module loads nothing above it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalsuite import lazy_attributes

if TYPE_CHECKING:  # the same names for type checkers, which do not run __getattr__
    from evalsuite.runs.schema import METRIC_CONVENTION, SCHEMA_VERSION, ExampleRecord, Manifest  # noqa: F401
    from evalsuite.runs.schema import MetricsFile, MetricSummary, Passage, TaskSummary, Turn  # noqa: F401
    from evalsuite.runs.store import PredictionWriter, RunDirectory, read_predictions  # noqa: F401
    from evalsuite.runs.summary import mean_ci, summarize  # noqa: F401

_DEFINED_IN = {
    "evalsuite.runs.schema": (
        "METRIC_CONVENTION",
        "SCHEMA_VERSION",
        "ExampleRecord",
        "Manifest",
        "MetricSummary",
        "MetricsFile",
        "Passage",
        "TaskSummary",
        "Turn",
    ),
    "evalsuite.runs.store": ("PredictionWriter", "RunDirectory", "read_predictions"),
    "evalsuite.runs.summary": ("mean_ci", "summarize"),
}
__all__ = sorted(name for names in _DEFINED_IN.values() for name in names)
__getattr__ = lazy_attributes(__name__, _DEFINED_IN)
