"""Evaluation logs where training logs go: a run's per-task metrics and a sample of its trajectories, sent to
TensorBoard or Weights & Biases (`evalsuite run --report-to`).

The destinations and the extra that installs each one's client are the same ones training's `report_to:` accepts
(`evalsuite.training.config` checks a recipe through `check_destinations`), so a run and a training job log to the
same places under the same names. Both clients are imported only when asked for.

TensorBoard gets an event file in `RUN/tensorboard/`: one scalar per task and metric (`adqa/em`, with `adqa/em_ci_low`
and `_ci_high`, and the macro-averages as `average/<group>/<metric>`), and one text entry per sampled example
(`trajectories/<task>/<id>`). It is written with the tensorboard package's own event writer and protos, so neither
TensorFlow nor torch is needed. Weights & Biases gets the same scalars in one `log` call, in the run's summary, and
the sampled examples as a table; `WANDB_PROJECT` names the project (default `evalsuite`) and `WANDB_MODE=offline`
keeps it on disk.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError, require
from evalsuite.runs.schema import ExampleRecord, MetricsFile

# destination -> (module to import, extra that installs it)
REPORT_EXTRAS = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb")}
TENSORBOARD_DIR = "tensorboard"
SAMPLED_PER_TASK = 8  # trajectories sent per task: enough to read a few, few enough to keep a 50k-example run light


def check_destinations(destinations: Iterable[str], where: str) -> list[str]:
    """The destinations other than "none", each known and with its client installed; `where` starts the error
    ("--report-to", or "recipe.yaml: report_to")."""
    wanted = [d for d in destinations if d != "none"]
    for destination in wanted:
        if destination not in REPORT_EXTRAS:
            raise DataError(f"{where} {destination!r} is not one of none, {', '.join(REPORT_EXTRAS)}")
        module, extra = REPORT_EXTRAS[destination]
        require(module, extra, f"{where} {destination}")
    return wanted


def scalars(metrics: MetricsFile) -> dict[str, float]:
    """Every number of metrics.json under a tag: `task/metric` (and its interval ends), `average/group/metric`."""
    out: dict[str, float] = {}
    for task, summary in metrics.tasks.items():
        out[f"{task}/n"] = float(summary.n)
        out[f"{task}/failed"] = float(summary.n_failed)
        for name, value in summary.metrics.items():
            out[f"{task}/{name}"] = value.mean
            out[f"{task}/{name}_ci_low"] = value.ci_low
            out[f"{task}/{name}_ci_high"] = value.ci_high
    for group, values in metrics.averages.items():
        for name, mean in values.items():
            out[f"average/{group}/{name}"] = float(mean)
    return out


def sample_records(records: Iterable[ExampleRecord], per_task: int = SAMPLED_PER_TASK) -> list[ExampleRecord]:
    """The first `per_task` examples of each task by id: the same ones on every run of the same questions, so two
    runs' logs show the same trajectories."""
    by_task: dict[str, list[ExampleRecord]] = {}
    for record in records:
        by_task.setdefault(record.task, []).append(record)
    return [r for task in sorted(by_task) for r in sorted(by_task[task], key=lambda r: r.id)[:per_task]]


def _scores(record: ExampleRecord) -> str:
    return ", ".join(f"{k} {v:g}" for k, v in sorted(record.metrics.items()))


def example_markdown(record: ExampleRecord) -> str:
    """One example as TensorBoard's text plugin shows it (Markdown): question, golds, prediction, scores, trajectory."""
    lines = [
        f"**{record.task} {record.id}**: {record.question}",
        "",
        f"gold: {' | '.join(record.golden_answers)}  ",
        f"prediction: {record.prediction}  ",
        f"scores: {_scores(record)}" if record.status == "ok" else f"failed: {record.error}",
        "",
    ]
    lines += ["    " + line for line in record.trajectory.splitlines()]  # an indented block keeps the tags literal
    return "\n".join(lines)


def report_run(
    destinations: list[str], run_dir: Path, metrics: MetricsFile, records: list[ExampleRecord], name: str
) -> list[str]:
    """Send the run to each destination; returns one line per destination saying where it went."""
    sample = sample_records(records)
    where = []
    for destination in destinations:
        if destination == "tensorboard":
            where.append(f"tensorboard: {_to_tensorboard(run_dir / TENSORBOARD_DIR, metrics, sample)}")
        elif destination == "wandb":
            where.append(f"wandb: {_to_wandb(run_dir, metrics, sample, name)}")
    return where


def _to_tensorboard(log_dir: Path, metrics: MetricsFile, sample: list[ExampleRecord]) -> Path:
    require("tensorboard", "tensorboard", "--report-to tensorboard")
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    log_dir.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(log_dir))
    now = time.time()
    values = [Summary.Value(tag=tag, simple_value=value) for tag, value in scalars(metrics).items()]
    text = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    for record in sample:
        tensor = TensorProto(
            dtype=7,
            string_val=[example_markdown(record).encode("utf-8")],  # 7: DT_STRING
            tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
        )
        values.append(Summary.Value(tag=f"trajectories/{record.task}/{record.id}", metadata=text, tensor=tensor))
    writer.add_event(Event(wall_time=now, step=0, summary=Summary(value=values)))
    writer.close()
    return log_dir


def _to_wandb(run_dir: Path, metrics: MetricsFile, sample: list[ExampleRecord], name: str) -> str:
    wandb = require("wandb", "wandb", "--report-to wandb")
    run = wandb.init(
        project=os.environ.get("WANDB_PROJECT", "evalsuite"),
        name=name,
        dir=str(run_dir),
        job_type="evaluation",
        config={"run_directory": str(run_dir)},
    )
    try:
        numbers = scalars(metrics)
        run.log(numbers)
        run.summary.update(numbers)
        columns = ["task", "id", "question", "golds", "prediction", "status", "scores", "trajectory"]
        rows: list[list[Any]] = [
            [r.task, r.id, r.question, " | ".join(r.golden_answers), r.prediction, r.status, _scores(r), r.trajectory]
            for r in sample
        ]
        run.log({"trajectories": wandb.Table(columns=columns, data=rows)})
        where = run.url or run.dir  # offline: the local folder `wandb sync` uploads later
    finally:
        run.finish()
    return str(where)
