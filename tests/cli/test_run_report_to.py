"""`evalsuite run --report-to`: the run's per-task metrics and a sample of its trajectories reach TensorBoard (the event
file read back with TensorBoard's own reader) and Weights & Biases (offline mode, its files read back); a destination
that is unknown or whose client is missing is refused before the run starts."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from evalsuite.runs.report import SAMPLED_PER_TASK
from evalsuite.runs.store import RunDirectory
from tests.cli.test_run_progress import replay_run


def _metrics_and_sampled_ids(out):
    run = RunDirectory(out)
    metrics = run.read_metrics().tasks["nq"]
    records = {r.id: r for r in run.read_predictions()}
    return metrics, records, sorted(records)[:SAMPLED_PER_TASK]


def test_tensorboard_gets_every_metric_and_the_sampled_trajectories(tmp_path, trajectories_dir, benchmarks_dir):
    pytest.importorskip("tensorboard", reason="needs the [tensorboard] extra")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    stdout = replay_run(trajectories_dir, benchmarks_dir, out, "--limit", "10", "--report-to", "tensorboard").stdout
    assert f"tensorboard: {out / 'tensorboard'}" in stdout.splitlines()
    metrics, records, sampled = _metrics_and_sampled_ids(out)

    events = EventAccumulator(str(out / "tensorboard"), size_guidance={"tensors": 0, "scalars": 0}).Reload()
    scalars = {tag: events.Scalars(tag)[0].value for tag in events.Tags()["scalars"]}
    assert scalars["nq/n"] == 10 and scalars["nq/failed"] == 0
    for name, summary in metrics.metrics.items():  # float32 in the event file
        assert scalars[f"nq/{name}"] == pytest.approx(summary.mean, rel=1e-6, abs=1e-6)
        assert scalars[f"nq/{name}_ci_low"] == pytest.approx(summary.ci_low, rel=1e-6, abs=1e-6)
    assert scalars["nq/em"] == pytest.approx(sum(r.metrics["em"] for r in records.values()) / 10, abs=1e-6)

    texts = sorted(tag for tag in events.Tags()["tensors"] if tag.startswith("trajectories/"))
    assert texts == sorted(f"trajectories/nq/{i}" for i in sampled)  # the first 8 ids, not 10
    first = records[sampled[0]]
    shown = events.Tensors(f"trajectories/nq/{first.id}")[0].tensor_proto.string_val[0].decode("utf-8")
    assert shown.startswith(f"**nq {first.id}**: {first.question}")
    assert f"prediction: {first.prediction}" in shown
    # the trajectory, every line indented (a code block keeps <search> and <answer> literal)
    assert "    " + first.trajectory.splitlines()[-1] in shown


def wandb_records(path):
    """The records of an offline run's `.wandb` file: W&B's 7-byte header, then LevelDB's log format (32 KiB blocks of
    chunks, each with a 7-byte header: CRC, length, type 1 whole / 2 first / 3 middle / 4 last). The wandb package
    no longer ships a reader, so this is the format read directly."""
    import struct

    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    at, pending, records = 7, b"", []
    while at + 7 <= len(data):
        room = 32768 - at % 32768
        if room < 7:  # a block's tail too short for a header is padding
            at += room
            continue
        _, size, kind = struct.unpack_from("<IHB", data, at)
        chunk, at = data[at + 7: at + 7 + size], at + 7 + size
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def test_wandb_offline_gets_the_metrics_and_a_table_of_trajectories(tmp_path, trajectories_dir, benchmarks_dir, monkeypatch):
    pytest.importorskip("wandb", reason="needs the [wandb] extra")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    payload = json.loads(replay_run(trajectories_dir, benchmarks_dir, out, "--limit", "10", "--report-to", "wandb", "--json").stdout)
    (offline,) = (out / "wandb").glob("offline-run-*")
    assert payload["reported"] == [f"wandb: {offline / 'files'}"]
    metrics, records, sampled = _metrics_and_sampled_ids(out)

    (log,) = offline.glob("run-*.wandb")
    logged = {}
    for record in wandb_records(log):
        if record.WhichOneof("record_type") == "history":
            logged.update({item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item})
    for name, value in metrics.metrics.items():
        assert logged[f"nq/{name}"] == pytest.approx(value.mean)
    assert logged["nq/n"] == 10 and logged["trajectories/_type"] == "table-file" and logged["trajectories/nrows"] == 8
    (table,) = (offline / "files" / "media" / "table").glob("trajectories_*.table.json")
    rows = json.loads(table.read_text())
    assert rows["columns"][:3] == ["task", "id", "question"]
    assert [row[1] for row in rows["data"]] == sampled
    assert rows["data"][0][-1] == records[sampled[0]].trajectory


def _refused(tmp_path, *options):
    result = subprocess.run([sys.executable, "-m", "evalsuite", "run", *options, "-o", str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 2
    assert not (tmp_path / "run").exists()  # refused before any model is loaded or directory made
    return result.stderr.splitlines()


def test_an_unknown_destination_is_refused_before_the_run(tmp_path):
    assert _refused(tmp_path, "--report-to", "mlflow") == ["error: --report-to 'mlflow' is not one of none, tensorboard, wandb"]


@pytest.mark.parametrize("destination", ["tensorboard", "wandb"])
def test_a_destination_without_its_client_names_the_extra(tmp_path, destination):
    if importlib.util.find_spec(destination) is not None:
        pytest.skip(f"{destination} is installed here")
    assert _refused(tmp_path, "--report-to", destination) == [
        f"error: --report-to {destination} needs the Python package '{destination}', which is not installed.",
        f'  hint: pip install "evalsuite[{destination}]"',
    ]
