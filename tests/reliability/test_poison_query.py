"""One poison example does not wedge a run: a query the retrieval server rejects (4xx) fails only its example."""

from __future__ import annotations

from pathlib import Path

from reliability_helpers import run_cli, write_recording, write_tasks

from evalsuite.runs import RunDirectory

IDS = [f"e{i}" for i in range(10)]
ANSWERS = ["Daniel Wallace", "Luke", "France", "Himalayas", "Babbage", "Mediterranean", "radioactivity", "Jupiter", "Seine", "Tim Burton"]
POISON = "e3"
POISON_QUERY = "who wrote big fish " * 500  # 9,499 characters once stripped: over the server's 8,192-character limit


def _run(tmp_path: Path, url: str, *extra: str):
    queries = {i: (POISON_QUERY if i == POISON else f"{a} fact") for i, a in zip(IDS, ANSWERS)}
    recording = write_recording(tmp_path / "recording.json", [(i, queries[i], a) for i, a in zip(IDS, ANSWERS)])
    write_tasks(tmp_path / "data", IDS, ANSWERS)
    return run_cli(
        "run", "--backend", "replay", "--model", str(recording), "--retriever", url, "--tasks", "nq", "--data-dir", str(tmp_path / "data"),
        "--batch-size", "4", "-o", str(tmp_path / "run"), *extra, cwd=tmp_path,
    )


def test_a_rejected_query_fails_its_example_and_the_run_goes_on(tmp_path: Path, retrieval_server: str) -> None:
    result = _run(tmp_path, retrieval_server)
    assert "Traceback" not in result.stderr and "stopped early" not in result.stderr, result.stderr
    records = {r.id: r for r in RunDirectory(tmp_path / "run").read_predictions()}
    assert sorted(records) == sorted(IDS)  # every batch ran, including the ones after the poison
    poison = records.pop(POISON)
    assert poison.status == "failed" and poison.stop_reason == "error"
    assert "rejected the search" in poison.error and "422" in poison.error and f"({len(POISON_QUERY.strip())} characters)" in poison.error
    assert all(r.status == "ok" and r.prediction == ANSWERS[IDS.index(r.id)] for r in records.values())
    assert RunDirectory(tmp_path / "run").read_manifest().finished_at is not None

    again = _run(tmp_path, retrieval_server, "--resume")  # the retried poison fails again; resume does not stop there
    assert "stopped early" not in again.stderr, again.stderr
    records = {r.id: r for r in RunDirectory(tmp_path / "run").read_predictions()}
    assert sorted(records) == sorted(IDS) and records[POISON].status == "failed"


def test_settings_the_server_rejects_for_every_search_stop_the_run(tmp_path: Path, retrieval_server: str) -> None:
    result = _run(tmp_path, retrieval_server, "--topk", "500")  # over the server's max_topk (100)
    assert "Traceback" not in result.stderr and result.returncode != 0
    assert "rejected every search of the batch" in result.stderr and "topk" in result.stderr, result.stderr
