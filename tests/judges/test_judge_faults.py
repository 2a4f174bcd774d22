"""Judges keep what they learned: failed calls are never cached, a failing rerun never loses verdicts, a partial
run says how many are missing, and a malformed 200 or a 4xx fails one call, not the run. Real llama.cpp judge
server behind a real fault-injecting proxy."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from fault_proxy import FaultProxy
from test_judge_server import _lines, _panel, _scored_run

from evalsuite.judges.config import load_panel
from evalsuite.judges.evaluate import judge_run
from evalsuite.runs import RunDirectory

METRICS = "completeness,granularity"


def _judge(run: Path, panel: Path, cache: Path, limit: int) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "evalsuite", "judge", str(run), "--panel", str(panel), "--metrics", METRICS, "--limit", str(limit), "--cache", str(cache)]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})


def _cached_texts(cache: Path) -> list[str]:
    with sqlite3.connect(cache) as db:
        return [row[0] for row in db.execute("SELECT text FROM replies")]


def test_an_empty_or_null_reply_is_an_error_and_never_cached(trajectories_dir: Path, tmp_path: Path, judge_server: str) -> None:
    run = _scored_run(trajectories_dir, tmp_path / "runs")
    cache = tmp_path / "cache.sqlite"
    with FaultProxy(judge_server, script=["empty", "null"]) as proxy:
        panel = _panel(tmp_path / "panel.yaml", proxy.url)
        first = _judge(run, panel, cache, limit=1)
        n_calls = proxy.counts["received"]
        assert first.returncode != 0 and "Traceback" not in first.stderr
        assert f"2 of {n_calls} verdicts are missing" in first.stderr, first.stderr
        missing = [j for j in _lines(run) if j["reply"] is None]
        assert len(missing) == 2 and all("empty reply" in j["parse_error"] for j in missing)
        assert len(_cached_texts(cache)) == n_calls - 2 and all(text.strip() for text in _cached_texts(cache))

        proxy.reset()
        # the two failed calls are asked again; the rest come from the cache
        second = judge_run(run, load_panel(panel), METRICS.split(","), cache_path=cache, limit=1)
        assert second.n_missing == 0 and proxy.counts["received"] == 2 == proxy.counts["upstream_ok"]
    assert all(j["reply"] for j in _lines(run))


def test_a_failing_rerun_keeps_every_verdict_and_reports_the_missing_ones(trajectories_dir: Path, tmp_path: Path, judge_server: str) -> None:
    run = _scored_run(trajectories_dir, tmp_path / "runs")
    panel = _panel(tmp_path / "panel.yaml", f"{judge_server}/v1")
    assert _judge(run, panel, tmp_path / "first.sqlite", limit=1).returncode == 0
    before = _lines(run)
    assert before and all(j["reply"] for j in before)

    # The judge server now fails every call, and the rerun has a fresh cache and one more example to judge.
    with FaultProxy(judge_server, fault_rate=1.0) as down:
        down.hang_s = 0.0
        failing = _panel(tmp_path / "down.yaml", down.url, max_retries=1, timeout_s=2)
        rerun = _judge(run, failing, tmp_path / "fresh.sqlite", limit=3)
    after = _lines(run)
    new = [j for j in after if j["example_id"] not in {b["example_id"] for b in before}]
    assert len(after) == len(before) + len(new) and new
    assert [j for j in after if j["example_id"] in {b["example_id"] for b in before}] == before  # nothing lost
    assert all(j["reply"] is None for j in new)
    assert rerun.returncode != 0 and f"{len(new)} of {len(after)} verdicts are missing" in rerun.stderr, rerun.stderr
    judges = RunDirectory(run).read_metrics().extra["judges"]
    assert judges["missing_verdicts"] == len(new) and judges["n_examples_judged"] == 3  # metrics.json is this run's


def test_a_malformed_200_or_a_4xx_fails_that_call_not_the_run(trajectories_dir: Path, tmp_path: Path, judge_server: str) -> None:
    run = _scored_run(trajectories_dir, tmp_path / "runs")
    with FaultProxy(judge_server, script=["nonjson", "nochoices", "badjson", "400"]) as proxy:
        panel = load_panel(_panel(tmp_path / "panel.yaml", proxy.url, max_retries=3))
        result = judge_run(run, panel, METRICS.split(","), cache_path=tmp_path / "cache.sqlite", limit=1)
        assert proxy.counts["received"] == len(result.judgments)  # none of the four was retried
    assert result.n_missing == 4
    errors = sorted(j.parse_error for j in result.judgments if j.reply is None)
    assert sum("not a chat completion" in e or "without a reply" in e for e in errors) == 3 and sum("400" in e for e in errors) == 1
    assert sum(json.loads(line)["reply"] is None for line in (run / "judgments.jsonl").read_text().splitlines()) == 4
