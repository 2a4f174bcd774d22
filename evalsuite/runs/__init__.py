"""Run directories: schema, append-only writer, torn-line-tolerant reader, metrics summary.

The names below are re-exported lazily (PEP 562): importing `evalsuite.runs.schema`, the bottom "records" layer,
runs this file first, and an eager re-export would load the writer, the summary and through them tasks, metrics
and statistics (31 modules) with it. `tests/foundation/test_layering.py` checks that importing the records module
loads nothing above it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names for type checkers, which do not run __getattr__
    from evalsuite.runs.schema import METRIC_CONVENTION, SCHEMA_VERSION, ExampleRecord, Manifest  # noqa: F401
    from evalsuite.runs.schema import MetricsFile, MetricSummary, Passage, TaskSummary, Turn  # noqa: F401
    from evalsuite.runs.store import PredictionWriter, RunDirectory, read_predictions  # noqa: F401
    from evalsuite.runs.summary import mean_ci, summarize  # noqa: F401

# the module that defines each name, imported on the name's first use
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
_MODULE_OF = {name: module for module, names in _DEFINED_IN.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
