"""The whole judge path against a real OpenAI-compatible server (llama.cpp with SmolLM2-135M-Instruct).

The small model's verdicts are poor; these tests check the path: requests, parsing, caching, voting, accounting,
fault tolerance, and that the recorded aggregates are those of the recorded verdicts.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import yaml
from fault_proxy import FaultProxy

from evalsuite.judges.config import load_panel
from evalsuite.judges.evaluate import judge_run
from evalsuite.metrics.coverage import coverage
from evalsuite.metrics.process import extract_queries
from evalsuite.provenance import provenance_fields
from evalsuite.runs import Manifest, RunDirectory, summarize
from evalsuite.runs.schema import ExampleRecord, Turn

PRICE_IN, PRICE_OUT = 0.15, 0.60  # $/Mtok, as a hosted judge would charge


def _panel(path: Path, base_url: str, *, timeout_s: float = 120, max_retries: int = 2, concurrency: int = 2) -> Path:
    common = {"base_url": base_url, "response_format": "none", "max_tokens": 6, "timeout_s": timeout_s, "max_retries": max_retries,
              "backoff_base_s": 0.05, "backoff_max_s": 0.2, "price_input_per_mtok": PRICE_IN, "price_output_per_mtok": PRICE_OUT}
    judges = [{"name": "smol-greedy", "model": "smollm2-a", "temperature": 0.0, **common}, {"name": "smol-sampled", "model": "smollm2-b", "temperature": 0.8, "seed": 7, **common}]
    path.write_text(yaml.safe_dump({"judges": judges, "concurrency": concurrency}))
    return path


def _scored_run(trajectories_dir: Path, out: Path, pattern: str = "bamboogle_2026_04_24_17_37*.json") -> Path:
    (source,) = trajectories_dir.glob(pattern)
    result = subprocess.run([sys.executable, "-m", "evalsuite", "score", str(source), "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return out / source.stem


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "judgments.jsonl").read_text().splitlines()]


def _key(j: dict) -> tuple[str, str, str, str]:
    return (j["example_id"], j["metric"], j["item"], j["judge"])


def test_whole_judge_path_with_cache_and_cost_accounting(trajectories_dir: Path, tmp_path: Path, counting_proxy: FaultProxy) -> None:
    run = _scored_run(trajectories_dir, tmp_path / "runs")
    first = RunDirectory(run).read_predictions()[0]
    n_items = 1 + len(extract_queries(first.turns))  # one completeness item plus one granularity item per query
    panel = _panel(tmp_path / "panel.yaml", counting_proxy.url)
    predictions_hash = hashlib.sha256((run / "predictions.jsonl").read_bytes()).hexdigest()
    command = [sys.executable, "-m", "evalsuite", "judge", str(run), "--panel", str(panel), "--metrics", "completeness,granularity", "--limit", "1", "--cache", str(tmp_path / "cache.sqlite")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "evalsuite judge" in result.stdout and "judge usage" in result.stdout

    lines = _lines(run)
    assert len(lines) == 2 * n_items == len({_key(j) for j in lines})
    assert counting_proxy.counts["upstream_ok"] == 2 * n_items  # counted at the server's door
    for j in lines:
        assert j["reply"] and (j["verdict"] is not None) == (j["parse_error"] is None)
        assert j["model"] == {"smol-greedy": "smollm2-a", "smol-sampled": "smollm2-b"}[j["judge"]]
    metrics = RunDirectory(run).read_metrics()
    judges = metrics.extra["judges"]
    assert [p["name"] for p in judges["panel"]] == ["smol-greedy", "smol-sampled"]
    for name, usage in judges["usage_last"].items():
        mine = [j for j in lines if j["judge"] == name]
        tokens_in, tokens_out = sum(j["prompt_tokens"] for j in mine), sum(j["completion_tokens"] for j in mine)
        assert (usage["calls"], usage["requests"], usage["cache_hits"], usage["retries"]) == (n_items, n_items, 0, 0)
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (tokens_in, tokens_out) and tokens_out <= 6 * n_items
        assert usage["cost_usd"] == pytest.approx((tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6)
    # the recorded aggregates are those of the recorded verdicts
    gran = [j["verdict"] for j in lines if j["metric"] == "granularity" and j["verdict"] is not None]
    result_g = judges["results"]["bamboogle"]["granularity"]
    assert result_g["score"] == (pytest.approx(np.mean(gran)) if gran else None)
    assert result_g["n_verdicts"] + result_g["n_unparseable"] == 2 * (n_items - 1)
    comp = [j["verdict"] for j in lines if j["metric"] == "completeness" and j["verdict"] is not None]
    assert judges["results"]["bamboogle"]["completeness"]["score"] == (pytest.approx(np.mean(comp)) if comp else None)

    # rerun: every reply comes from the cache, zero requests reach the server, nothing is charged
    counting_proxy.reset()
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert counting_proxy.counts["received"] == 0
    again = RunDirectory(run).read_metrics().extra["judges"]
    for usage in again["usage_last"].values():
        assert (usage["calls"], usage["cache_hits"], usage["requests"], usage["prompt_tokens"], usage["cost_usd"]) == (n_items, n_items, 0, 0, 0.0)
    assert again["usage_total"]["smol-greedy"]["calls"] == 2 * n_items
    assert [(_key(j), j["verdict"], j["reply"]) for j in _lines(run)] == [(_key(j), j["verdict"], j["reply"]) for j in lines]
    assert all(j["cached"] for j in _lines(run))
    assert hashlib.sha256((run / "predictions.jsonl").read_bytes()).hexdigest() == predictions_hash  # never rewritten


@pytest.mark.slow
def test_faults_are_retried_and_the_judged_run_equals_the_fault_free_run(trajectories_dir: Path, tmp_path: Path, judge_server: str) -> None:
    # the instruct seed-1 Bamboogle run: two queries in each of its first two examples -> 6 items x 2 judges
    pattern = "bamboogle_2026_04_29_06_48*.json"
    clean_run = _scored_run(trajectories_dir, tmp_path / "clean", pattern)
    faulty_run = _scored_run(trajectories_dir, tmp_path / "faulty", pattern)
    metrics = ["completeness", "granularity"]
    clean = judge_run(clean_run, load_panel(_panel(tmp_path / "clean.yaml", f"{judge_server}/v1")), metrics, cache_path=tmp_path / "clean.sqlite", limit=2)
    # One request in flight at a time, so that normally only the injected hangs reach the timeout.
    timeout_s = 40.0
    proxy = FaultProxy(judge_server, fault_rate=0.3, seed=3, hang_s=timeout_s + 2).start()
    try:
        faulty_panel = _panel(tmp_path / "faulty.yaml", proxy.url, timeout_s=timeout_s, max_retries=10, concurrency=1)
        faulty = judge_run(faulty_run, load_panel(faulty_panel), metrics, cache_path=tmp_path / "faulty.sqlite", limit=2)
    finally:
        proxy.stop()
    counts = proxy.counts
    assert counts["429"] and counts["500"] and counts["hang"], counts
    assert 0.15 < counts["faults"] / counts["received"] < 0.5, counts
    usage = faulty.usage
    # Every retry answers an injected fault or a forwarded request the client stopped waiting for (on a loaded
    # machine a real reply can outlast the timeout too); each of the 12 judgments was served exactly once.
    abandoned = counts["forward"] - 12
    assert sum(u["retries"] for u in usage.values()) == counts["faults"] + abandoned and sum(u["failures"] for u in usage.values()) == 0
    assert sum(u["requests"] for u in usage.values()) == counts["received"]
    clean_lines, faulty_lines = _lines(clean_run), _lines(faulty_run)
    assert len(faulty_lines) == 12 and all(n == 1 for n in Counter(_key(j) for j in faulty_lines).values())
    assert [(_key(j), j["verdict"], j["reply"]) for j in faulty_lines] == [(_key(j), j["verdict"], j["reply"]) for j in clean_lines]
    assert faulty.results == clean.results


def _musique_run(benchmarks_dir: Path, out: Path, n: int) -> Path:
    """A run whose policy asks the whole question first, then the gold first hop (real MuSiQue text, no retrieval)."""
    rows = [json.loads(line) for line in (benchmarks_dir / "musique.dev_ctx.jsonl").open()][:n]
    records = []
    for row in rows:
        first_hop = row["metadata"]["question_decomposition"][0]["question"]
        turns = [Turn(text=f"<search>{row['question']}</search>", query=row["question"]), Turn(text=f"<search>{first_hop}</search>", query=first_hop), Turn(text="<answer>x</answer>", answer="x")]
        records.append(ExampleRecord(id=row["id"], task="musique", split="dev_ctx", question=row["question"], golden_answers=row["golden_answers"], prediction="x", turns=turns, metrics={"em": 0.0}))
    run = RunDirectory(out)
    run.write_manifest(Manifest(kind="import", tasks=["musique"], **provenance_fields()))
    with run.writer(fresh=True) as writer:
        writer.extend(records)
    run.write_metrics(summarize(records))
    return out


@pytest.mark.slow
def test_coverage_against_musique_gold_decompositions(benchmarks_dir: Path, tmp_path: Path, judge_server: str) -> None:
    run = _musique_run(benchmarks_dir, tmp_path / "musique", 2)
    result = judge_run(run, load_panel(_panel(tmp_path / "p.yaml", f"{judge_server}/v1")), ["coverage"], cache_path=tmp_path / "c.sqlite", data_dir=benchmarks_dir, teacher_split="dev_ctx")
    lines = _lines(run)
    assert len(lines) == 2 * 2 * 2 * 2  # examples x policy queries x teacher queries (2-hop rows) x judges
    f1s = []
    for record in RunDirectory(run).read_predictions():
        votes = {}
        for j in lines:
            if j["example_id"] == record.id:
                votes.setdefault(j["item"], []).append(j["verdict"])
        matrix = [[sum(v is True for v in votes[f"p{i}-t{t}"]) > sum(v is False for v in votes[f"p{i}-t{t}"]) for t in range(2)] for i in range(2)]
        f1s.append(coverage(matrix, 2, 2).f1)
    assert result.results["musique"]["coverage"]["f1"] == pytest.approx(np.mean(f1s))
    assert RunDirectory(run).read_metrics().tasks["musique"].metrics["coverage_f1"].mean == pytest.approx(np.mean(f1s))


@pytest.mark.slow
def test_teacher_queries_from_a_teacher_model_are_cached(benchmarks_dir: Path, tmp_path: Path, counting_proxy: FaultProxy) -> None:
    panel = _panel(tmp_path / "p.yaml", counting_proxy.url)
    command = [sys.executable, "-m", "evalsuite", "teacher-queries", "--task", "musique", "--split", "dev_ctx", "--data-dir", str(benchmarks_dir),
               "--panel", str(panel), "--judge-name", "smol-greedy", "--limit", "2", "--cache", str(tmp_path / "c.sqlite"), "-o", str(tmp_path / "t.jsonl")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["2hop__673655_316668", "2hop__574419_270105"]
    for row in rows:  # six tokens rarely hold a whole JSON list: then the row says so instead of inventing queries
        assert row["source"] == "teacher:smollm2-a" and (row["teacher_queries"] == []) == (row["error"] is not None)
    assert counting_proxy.counts["upstream_ok"] == 2
    counting_proxy.reset()
    assert subprocess.run(command, capture_output=True, text=True, timeout=600).returncode == 0
    assert counting_proxy.counts["received"] == 0 and [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()] == rows


def test_training_usefulness_judge_scores_smartsearch_turns_through_the_panel(tmp_path: Path, counting_proxy: FaultProxy) -> None:
    from evalsuite.methods.smartsearch.method import SmartSearch
    from evalsuite.methods.smartsearch.usefulness import PanelUsefulnessJudge
    from evalsuite.runs.schema import Passage

    panel = _panel(tmp_path / "panel.yaml", counting_proxy.url)
    question = "Who directed the film Jaws?"
    judge = PanelUsefulnessJudge(panel, {question: ["Steven Spielberg"]}, cache_path=tmp_path / "cache.sqlite")
    earlier = Turn(text="<search> Jaws </search>", query="Jaws", passages=[Passage(doc_id="1", title="Jaws (film)", text="Jaws is a 1975 film.")])
    turn = Turn(text="<search> Jaws director </search>", query="Jaws director", passages=[Passage(doc_id="2", title="Steven Spielberg", text="Spielberg directed Jaws.")])
    method = SmartSearch(judge=judge)
    method.annotate_search(question, [earlier], turn)
    assert counting_proxy.counts["received"] == 2  # one request per panel judge
    assert turn.extra["usefulness"] in (0, 1) and turn.extra["query_score"] == turn.extra["usefulness"] * turn.extra["novelty"]
    again = turn.model_copy(deep=True)
    method.annotate_search(question, [earlier], again)
    assert counting_proxy.counts["received"] == 2 and again.extra["usefulness"] == turn.extra["usefulness"]  # cached
    with pytest.raises(Exception, match="no golden answers"):
        judge("another question", [], turn)
