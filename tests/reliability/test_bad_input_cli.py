"""Bad input gets one clear line, never a traceback: the real `evalsuite` command in a subprocess, given each kind of
bad input a user can hit, must fail with a single `error:` line that names the input (and a hint saying what to do)."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest
from reliability_helpers import in_tmpfs, one_error, run_cli, write_recording, write_tasks

from evalsuite.runs import RunDirectory
from tests.conftest import requires_one_extra_of

IDS = [f"e{i}" for i in range(40)]
ANSWERS = [f"answer {i}" for i in range(40)]


@pytest.fixture()
def replay_run(tmp_path: Path):
    """`evalsuite run` of a replay recording over `data/nq.test.jsonl` (written by the test) with extra arguments."""
    recording = write_recording(tmp_path / "recording.json", [(i, f"query {i}", a) for i, a in zip(IDS, ANSWERS)])
    write_tasks(tmp_path / "data", IDS, ANSWERS)

    def run(*extra: str, out: str = "run", prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        args = ("run", "--backend", "replay", "--model", str(recording), "--retriever", "replay", "--tasks", "nq", "--data-dir", str(tmp_path / "data"))
        return run_cli(*args, "-o", out, *extra, cwd=tmp_path, prefix=prefix)

    return run


def _task_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "nq.test.jsonl"


def test_a_task_file_with_invalid_utf8(tmp_path: Path, replay_run) -> None:
    with _task_file(tmp_path).open("ab") as handle:
        handle.write(b'{"id": "x", "question": "caf\xe9?", "golden_answers": ["a"]}\n')
    one_error(replay_run(), "nq.test.jsonl:41", "not valid UTF-8")


@pytest.mark.parametrize(("depth", "expected"), [(100_000, "nested too deeply"), (100, "nested more than 64 levels")])
def test_deeply_nested_metadata(tmp_path: Path, replay_run, depth: int, expected: str) -> None:
    row = json.dumps({"id": "x", "question": "q?", "golden_answers": ["a"]})[:-1] + ', "metadata": {"m": ' + "[" * depth + "]" * depth + "}}\n"
    with _task_file(tmp_path).open("a") as handle:
        handle.write(row)
    one_error(replay_run(), "nq.test.jsonl:41", expected)


@pytest.mark.parametrize(("golds", "expected"), [("[]", "is empty"), ("[NaN]", "holds nan"), ("[Infinity]", "holds inf"), ("[null]", "holds a NoneType")])
def test_golds_that_are_not_answers(tmp_path: Path, replay_run, golds: str, expected: str) -> None:
    with _task_file(tmp_path).open("a") as handle:
        handle.write('{"id": "x", "question": "q?", "golden_answers": ' + golds + "}\n")
    one_error(replay_run(), "nq.test.jsonl:41", expected)


def test_an_empty_task_file(tmp_path: Path, replay_run) -> None:
    _task_file(tmp_path).write_text("\n")
    one_error(replay_run(), "nq.test.jsonl", "has no rows")


@pytest.mark.parametrize(("option", "value"), [("--batch-size", "0"), ("--topk", "0"), ("--max-turns", "-1"), ("--max-tokens", "0")])
def test_run_options_out_of_range_are_refused_up_front(replay_run, option: str, value: str) -> None:
    one_error(replay_run(option, value), f"{option} {value} is out of range")


def test_a_backend_option_of_the_wrong_type(replay_run) -> None:
    one_error(replay_run("--backend-option", "delay_s=abc"), "delay_s=abc", "could not convert")


@requires_one_extra_of({"demo": "xllamacpp", "llamacpp": "llama_cpp"})  # the backend a .gguf is guessed to
def test_a_file_that_is_not_gguf_given_to_llamacpp(tmp_path: Path) -> None:
    fake = tmp_path / "model.gguf"
    fake.write_text("<html>this download failed</html>")
    write_tasks(tmp_path / "data", ["a"], ["b"])
    result = run_cli("run", "--model", str(fake), "--tasks", "nq", "--data-dir", str(tmp_path / "data"), "-o", "run", cwd=tmp_path)
    one_error(result, str(fake), "is not a GGUF file")


def test_output_that_is_an_existing_file_or_under_one(tmp_path: Path, replay_run) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    one_error(replay_run(out="notes.txt"), "-o notes.txt is an existing file")
    one_error(replay_run(out="notes.txt/run"), "notes.txt/run", "Not a directory")
    assert (tmp_path / "notes.txt").read_text() == "keep me"


def test_a_manifest_that_is_json_but_not_a_manifest(tmp_path: Path) -> None:
    for name, content in (("a", {"schema_version": 1, "kind": "run"}), ("b", [1, 2])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps(content))
    one_error(run_cli("merge", "a", "b", "-o", "merged", cwd=tmp_path), "a/manifest.json", "not a valid run manifest", "evalsuite_version")
    one_error(run_cli("merge", "b", "a", "-o", "merged", cwd=tmp_path), "b/manifest.json", "expected a JSON object")


def test_a_third_party_retrieval_server_sending_a_string_score(tmp_path: Path) -> None:
    from fastapi import FastAPI

    from evalsuite.retrieval.server import ServerThread

    third_party = FastAPI()

    @third_party.post("/retrieve")
    async def retrieve() -> dict:
        return {"result": [[{"document": {"id": "1", "contents": '"T"\nsome text'}, "score": "high"}]]}

    with ServerThread(third_party) as running:
        result = run_cli("index", "search", running.url, "who wrote big fish", cwd=tmp_path)
    one_error(result, "score 'high'", "finite numbers")


def test_a_port_in_use_or_out_of_range(tmp_path: Path, tiny_index: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        one_error(run_cli("serve-retriever", "--index", str(tiny_index), "--port", str(port), cwd=tmp_path), f"127.0.0.1:{port}", "in use")
    one_error(run_cli("serve-retriever", "--index", str(tiny_index), "--port", "70000", cwd=tmp_path), "--port 70000 is out of range")


def test_an_unwritable_place(tmp_path: Path, replay_run) -> None:
    line = one_error(replay_run(out="fs/run", prefix=in_tmpfs(tmp_path, "ro,size=64k")), "cannot write fs/run", "Read-only file system")
    assert "--resume" not in line


def test_disk_full_during_a_run_is_one_line_and_keeps_the_finished_examples(tmp_path: Path, replay_run) -> None:
    result = replay_run("--batch-size", "4", out="fs/run", prefix=in_tmpfs(tmp_path, "size=48k"))
    one_error(result, "predictions.jsonl: the disk is full")  # the run names the file it could not write
    assert "--resume" in result.stderr
    kept = RunDirectory(tmp_path / "kept" / "run").read_predictions(repair=True)  # a torn last line is dropped
    assert 4 <= len(kept) < len(IDS) and all(r.status == "ok" and r.prediction == ANSWERS[IDS.index(r.id)] for r in kept)
