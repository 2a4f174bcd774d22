"""Issue 26 item 6: files that may come from someone else are bounded: kind, size, YAML expansion, and a foreign
manifest never says where to write, whether to resume or whether remote code runs."""

from __future__ import annotations

import json
import os
import threading

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.files import MAX_YAML_NODES, load_untrusted_yaml, read_untrusted_bytes
from tests.conftest import requires_extra

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(6))


def test_a_pipe_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "manifest.json"
    os.mkfifo(fifo)
    result: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(result, lambda: read_untrusted_bytes(fifo, 1000, "manifest")), daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert isinstance(result[0], DataError) and result[0].message == f"{fifo}: the manifest is not a regular file"


def _capture(out: list, call) -> None:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        out.append(exc)


def test_a_file_over_the_bound_is_refused(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_bytes(b"x" * 101)
    with pytest.raises(DataError) as refused:
        read_untrusted_bytes(path, 100, "config file")
    assert refused.value.message == f"{path}: the config file is over 100 bytes"
    assert read_untrusted_bytes(path, 101) == b"x" * 101


def test_a_billion_laughs_yaml_is_refused_by_its_expansion(tmp_path):
    # Seven lines that expand to 10**7 strings; a loader that builds or walks them runs out of memory or time.
    with pytest.raises(DataError) as refused:
        load_untrusted_yaml(LAUGHS, tmp_path / "c.yaml")
    assert refused.value.message == f"{tmp_path / 'c.yaml'}: the YAML expands to more than {MAX_YAML_NODES:,} values (anchors and aliases)"
    assert load_untrusted_yaml("a: &a [1, 2]\nb: *a\n", "ok.yaml") == {"a": [1, 2], "b": [1, 2]}


def test_run_config_of_a_laughing_yaml_is_one_line(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(LAUGHS)
    result = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert isinstance(result.exception, EvalsuiteError) and "expands to more than" in result.exception.message


@pytest.mark.parametrize(("key", "value", "field"), [("out", "/etc/evalsuite-run", "out"), ("resume", True, "resume"),
                                                     ("backend_option", ["trust_remote_code=true"], "backend_option"),
                                                     # the option's own names, as a config file spells them (issue 37)
                                                     ("output", "/etc/evalsuite-run", "output"),
                                                     ("json", True, "json")])
def test_a_foreign_manifest_may_not_say_where_to_write_resume_or_run_remote_code(tmp_path, key, value, field):
    manifest = {"schema_version": 1, "kind": "run", "run_config": {"model": "m", key: value}}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    result = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert isinstance(result.exception, EvalsuiteError), result.output
    assert result.exception.message.startswith(f"{path}:1: run_config.{field}: ")
    assert "\n" not in result.exception.message


def test_a_run_directory_whose_predictions_are_a_pipe_is_refused(tmp_path):
    from evalsuite.runs.store import read_predictions

    os.mkfifo(tmp_path / "predictions.jsonl")
    with pytest.raises(DataError) as refused:
        read_predictions(tmp_path / "predictions.jsonl")
    assert refused.value.message == f"{tmp_path / 'predictions.jsonl'}: not a regular file"


def test_a_judge_panel_file_is_bounded_too(tmp_path):
    from evalsuite.judges.config import load_panel

    path = tmp_path / "panel.yaml"
    path.write_text(LAUGHS)
    with pytest.raises(DataError) as refused:
        load_panel(path)
    assert refused.value.message == f"{path}: the YAML expands to more than {MAX_YAML_NODES:,} values (anchors and aliases)"


def test_a_recipe_config_is_read_as_untrusted_input(tmp_path, monkeypatch):
    """Recipe configs (`evalsuite train --config`) are bounded like every other file from someone else: a pipe, an
    oversized file and a laughing YAML are each refused in one line naming the file."""
    import evalsuite.files
    from evalsuite.training.config import load_config

    laughs = tmp_path / "laughs.yaml"
    laughs.write_text(LAUGHS)
    with pytest.raises(DataError) as refused:
        load_config(laughs)
    assert refused.value.message.startswith(f"{laughs}: the YAML expands to more than")
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    result: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(result, lambda: load_config(fifo)), daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "reading a FIFO recipe config blocked"
    assert isinstance(result[0], DataError) and result[0].message == f"{fifo}: the recipe config is not a regular file"
    big = tmp_path / "big.yaml"
    big.write_text("method: search-r1\n" + "# padding\n" * 20)
    monkeypatch.setattr(evalsuite.files, "MAX_CONFIG_BYTES", 64)
    with pytest.raises(DataError) as refused:
        load_config(big)
    assert refused.value.message == f"{big}: the recipe config is over 64 bytes"
    broken = tmp_path / "broken.yaml"
    broken.write_text("method: [unclosed\n")
    with pytest.raises(DataError) as refused:
        load_config(broken)
    assert refused.value.message.startswith(f"{broken}: not valid YAML (") and "\n" not in refused.value.message


# ---- issue 37: the traceback list and what a run or a reader may never do -------------------------------------------

BASE_SEED1 = "bamboogle_2026_04_28_16_36_search_r1_base_seed1"


def _in_thread(call, timeout: float = 10) -> BaseException | None:
    """What `call` raised, run in a thread that must finish within `timeout` seconds (a FIFO read would block)."""
    result: list[BaseException] = []
    worker = threading.Thread(target=lambda: _capture(result, call), daemon=True)
    worker.start()
    worker.join(timeout=timeout)
    assert not worker.is_alive(), "blocked"
    return result[0] if result else None


def _replay_run(*extra, recording, out, benchmarks_dir):
    return CliRunner().invoke(app, ["run", "--backend", "replay", "--model", str(recording), "--retriever", "replay",
                                    "--tasks", "bamboogle", "--data-dir", str(benchmarks_dir), "-o", str(out),
                                    *map(str, extra)])


def test_a_replay_recording_that_is_a_fifo_is_refused_without_blocking(tmp_path, benchmarks_dir):
    fifo = tmp_path / "recording.json"
    os.mkfifo(fifo)
    out = tmp_path / "run"
    result = []
    refused = _in_thread(lambda: result.append(_replay_run(recording=fifo, out=out, benchmarks_dir=benchmarks_dir)))
    assert refused is None and isinstance(result[0].exception, EvalsuiteError)  # one line, exit 2
    assert result[0].exception.message == f"{fifo}: the recording is not a regular file"
    assert not out.exists()


def test_a_run_at_temperature_nan_is_refused(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "run"
    result = _replay_run("--temperature", "nan", recording=trajectories_dir / f"{BASE_SEED1}.json", out=out,
                         benchmarks_dir=benchmarks_dir)
    assert isinstance(result.exception, EvalsuiteError) and result.exception.message == "--temperature nan is out of range"
    assert not out.exists()


def test_a_run_refuses_a_directory_that_is_neither_empty_nor_a_run(tmp_path, trajectories_dir, benchmarks_dir):
    out = tmp_path / "someones-files"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    recording = trajectories_dir / f"{BASE_SEED1}.json"
    for extra in ((), ("--resume",)):
        result = _replay_run(*extra, recording=recording, out=out, benchmarks_dir=benchmarks_dir)
        assert isinstance(result.exception, EvalsuiteError), result.output
        assert result.exception.message == f"{out} is not empty and is not a run directory (it has no manifest.json)"
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # nothing written, nothing lost
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _replay_run(recording=recording, out=empty, benchmarks_dir=benchmarks_dir).exit_code == 0


def test_score_refuses_an_output_that_is_its_input(tmp_path, trajectories_dir):
    runner = CliRunner()
    scored = tmp_path / "scored"
    assert runner.invoke(app, ["score", str(trajectories_dir / f"{BASE_SEED1}.json"), "-o", str(scored)]).exit_code == 0
    run = scored / BASE_SEED1
    before = sorted(p.name for p in run.iterdir())
    for out in (run, run / "inside"):
        result = runner.invoke(app, ["score", str(run), "-o", str(out)])
        assert isinstance(result.exception, EvalsuiteError) and result.exception.message.startswith(f"-o {out} is the input {run}")
        assert sorted(p.name for p in run.iterdir()) == before
    assert runner.invoke(app, ["score", str(run), "-o", str(scored)]).exit_code == 0  # in place, as documented


@requires_extra("site", "jinja2")  # the site's templates
def test_view_refuses_an_output_that_is_a_symbolic_link(tmp_path, trajectories_dir):
    runner = CliRunner()
    scored = tmp_path / "scored"
    assert runner.invoke(app, ["score", str(trajectories_dir / f"{BASE_SEED1}.json"), "-o", str(scored)]).exit_code == 0
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("kept")
    for link, points_to in ((tmp_path / "link", target), (tmp_path / "dangling", tmp_path / "nowhere")):
        link.symlink_to(points_to)
        result = runner.invoke(app, ["view", str(scored / BASE_SEED1), "-o", str(link)])
        assert isinstance(result.exception, EvalsuiteError), result.output
        assert result.exception.message == f"{link} is a symbolic link; the viewer writes only into a folder of its own"
    assert [p.name for p in target.iterdir()] == ["keep.txt"] and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(("content", "message"), [
    ("[1, 2]", "expected a JSON object (a stage record), got list"),
    ('"done"', "expected a JSON object (a stage record), got str"),
    ('{"stage": "eval-base", "inputs": [1]}', "field 'inputs' must be a JSON object, got list"),
    ('{"stage": "eval-base", "inputs": {}, "complete": "yes"}', "field 'complete' must be a JSON boolean, got str"),
])
def test_reproduce_refuses_a_stage_record_of_the_wrong_shape(tmp_path, content, message):
    from evalsuite.reproduce import RECORD, Stage, decide

    stage = Stage("eval-base", tmp_path / "eval-base", {"settings": "abc"})
    stage.path.mkdir()
    (stage.path / RECORD).write_text(content)
    with pytest.raises(DataError) as refused:
        decide(stage, rerun=False, forced=False)
    assert refused.value.message == f"{stage.path / RECORD}: {message}"


def test_reproduce_refuses_a_stage_record_that_is_a_fifo_without_blocking(tmp_path):
    from evalsuite.reproduce import RECORD, Stage, decide

    stage = Stage("eval-base", tmp_path / "eval-base", {"settings": "abc"})
    stage.path.mkdir()
    os.mkfifo(stage.path / RECORD)
    refused = _in_thread(lambda: decide(stage, rerun=False, forced=False))
    assert isinstance(refused, DataError)
    assert refused.message == f"{stage.path / RECORD}: the stage record is not a regular file"


def test_a_run_directory_whose_metrics_are_a_pipe_is_refused_without_blocking(tmp_path):
    from evalsuite.runs import RunDirectory

    os.mkfifo(tmp_path / "metrics.json")
    refused = _in_thread(lambda: RunDirectory(tmp_path).read_metrics())
    assert isinstance(refused, DataError)
    assert refused.message == f"{tmp_path / 'metrics.json'}: the metrics file is not a regular file"


@pytest.mark.parametrize("key", ["o", "-o", "output_dir", "OUTPUT", "out-dir"])
def test_no_other_spelling_of_where_to_write_gets_past_a_manifest(tmp_path, key):
    # What is no option's long name is an unknown key, refused like any other: nothing of it is used.
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"schema_version": 2, "kind": "run", "run_config": {"model": "m", key: str(tmp_path / "x")}}))
    result = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert isinstance(result.exception, EvalsuiteError), result.output
    assert result.exception.message.startswith(f"{path}:1: ") and repr(key) in result.exception.message
    assert not (tmp_path / "x").exists()
