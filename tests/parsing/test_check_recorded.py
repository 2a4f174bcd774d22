"""`evalsuite score --check-recorded` on the layouts FlashRAG and Search-R1 write, and the conventions it names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.methods.search_r1.method import INSTRUCTION
from evalsuite.errors import DataError
from evalsuite.runs.conventions import PredictionContext, explain_metric, explain_prediction
from evalsuite.runs.flashrag import (
    check_against_task_data,
    compare_averages,
    compare_with_recorded,
    read_metric_score,
    read_result_source,
    records_from_source,
)
from evalsuite.protocol.search_r1 import parse_trajectory
from evalsuite.scoring import score_record
from tests.parsing.flashrag_folders import write_run_folder

EVALSUITE = [sys.executable, "-m", "evalsuite"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVALSUITE, *args], capture_output=True, text=True, timeout=300, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})


def _items(trajectories_dir: Path, prefix: str) -> list[dict]:
    return json.loads(next(trajectories_dir.glob(f"{prefix}*.json")).read_text())


def _flashrag_folder(root: Path, items: list[dict], name: str = "run_2026_04_28_16_36_note", dataset: str = "bamboogle") -> Path:
    """A run folder as FlashRAG's Evaluator and Config write it (`save_metric_score`, `Dataset.save`, yaml.dump)."""
    config = f"dataset_name: {dataset}\ndevice: !!python/object/apply:torch.device\n- cuda\nmetrics:\n- em\n- f1\n- acc\n"
    return write_run_folder(root, name, items, config)


def _scored(source):
    task, records, recorded = records_from_source(source)
    for record in records:
        record.metrics = score_record(record)
    return task, records, recorded


def test_jsonl_layout_reproduces_a_real_file(trajectories_dir: Path, tmp_path: Path) -> None:
    items = _items(trajectories_dir, "bamboogle_2026_04_29")
    path = tmp_path / "bamboogle_seed1.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    result = _run("score", str(path), "--check-recorded", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    # issue 38: ✓ with the count of each kind compared (125 predictions and 3 scores each), nothing left unchecked
    assert "✓ bamboogle_seed1 (search-r1-results): reproduced: 125 predictions, 375 per-item scores" in result.stdout


def test_flashrag_run_folder_checks_metric_score_averages(trajectories_dir: Path, tmp_path: Path) -> None:
    folder = _flashrag_folder(tmp_path, _items(trajectories_dir, "bamboogle_2026_04_28"))
    result = _run("score", str(folder), "--check-recorded", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reproduced: 125 predictions, 375 per-item scores, 3 averages" in result.stdout
    # A wrong average: flagged, and the file's own per-item scores say it is not theirs either.
    (folder / "metric_score.txt").write_text("em: 0.5\nf1: 0.1\nacc: 0.2\nretrieval_recall_top5: 0.9\n")
    result = _run("score", str(folder / "intermediate_data.json"), "--check-recorded", "-o", str(tmp_path / "out2"))
    assert result.returncode == 1
    assert "metric_score.txt: average em" in result.stdout and "no known convention explains it" in result.stdout
    # the metric FlashRAG recorded that is not ours is named, not checked
    assert "retrieval_recall_top5 [metric_score.txt]: not ours: FlashRAG Retrieval_Recall" in result.stdout


def test_average_explained_by_per_item_differences(trajectories_dir: Path, tmp_path: Path) -> None:
    items = _items(trajectories_dir, "bamboogle_2026_04_28")
    wrong = next(x for x in items if x["output"]["metric_score"]["em"] == 0.0)
    wrong["output"]["metric_score"]["em"] = 1.0
    source = read_result_source(_flashrag_folder(tmp_path, items))
    _, records, recorded = _scored(source)
    (average,) = compare_averages(source, records, recorded)
    assert average.what == "average em" and average.explanation.startswith("the file's own per-item scores average to it")
    (item,) = compare_with_recorded(records, recorded)
    assert item.item == wrong["id"] and item.explanation is None


def test_each_difference_names_the_convention_that_explains_it(trajectories_dir: Path, tmp_path: Path) -> None:
    items = _items(trajectories_dir, "nq_")
    by_id = {x["id"]: x for x in items}
    no_answer = [x for x in items if parse_trajectory(x["output"]["final_response"]).answer is None]
    answered = [x for x in items[:50] if "<answer> " in x["output"]["final_response"] and x["output"]["pred"]]
    flashrag_turn, placeholder, unstripped, upper = no_answer[0]["id"], answered[0]["id"], answered[1]["id"], answered[2]["id"]
    by_id[flashrag_turn]["output"]["pred"] = parse_trajectory(by_id[flashrag_turn]["output"]["final_response"]).turns[-1].text.strip()
    by_id[placeholder]["output"]["pred"] = "No valid answer found"
    response = by_id[unstripped]["output"]["final_response"]
    by_id[unstripped]["output"]["pred"] = response[response.rfind("<answer>") + 8 : response.rfind("</answer>")]
    by_id[upper]["output"]["pred"] = by_id[upper]["output"]["pred"].upper() + "."
    # em recorded with cover-EM's definition where the two differ
    cover = next(x for x in items if x["output"]["metric_score"]["acc"] == 1.0 and x["output"]["metric_score"]["em"] == 0.0)
    cover["output"]["metric_score"]["em"] = 1.0
    path = tmp_path / "nq_variants.json"
    path.write_text(json.dumps(items))
    _, records, recorded = _scored(read_result_source(path))
    explained = {(d.item, d.what): d.explanation for d in compare_with_recorded(records, recorded)}
    assert explained == {
        (flashrag_turn, "prediction"): "FlashRAG reasoning pipeline: a last turn without <answer> is recorded as that turn's whole text",
        (placeholder, "prediction"): "FlashRAG reasoning pipeline: turn limit reached or query not parsed, recorded as 'No valid answer found'",
        (unstripped, "prediction"): "the last <answer> block without stripping white space",
        (upper, "prediction"): "the same answer after normalization (case, punctuation, articles, white space): every metric agrees",
        (cover["id"], "em"): "cover-EM (gold contained in the prediction: FlashRAG acc, Search-R1 subem) recorded as em",
    }


def _context(response: str, prompt: str | None = None) -> PredictionContext:
    return PredictionContext(response=response, prompt=prompt, parsed=parse_trajectory(response))


def test_prediction_conventions_on_hand_made_responses() -> None:
    two = "<answer> Lyon </answer> no wait <answer> Paris </answer>"
    assert explain_prediction("Lyon", _context(two)) == "the first <answer> block instead of the last"
    leak = "<search> q </search>\n\n<information>Doc 1(Title: A) <answer> leak </answer></information>\n\n<think> none </think>"
    assert explain_prediction("", _context(leak)) == "the answer read from the model's own text only (observations left out)"
    prompt = INSTRUCTION.format(question="Where is the Colosseum?")
    assert explain_prediction("Beijing", _context("I do not know.", prompt)).startswith("Search-R1 extract_solution over prompt + response")
    assert explain_prediction("something else", _context(two)) is None


@pytest.mark.parametrize(
    ("metric", "recorded", "prediction", "golds", "why"),
    [
        ("em", 1.0, "the Eiffel Tower in Paris", ["Paris"], "cover-EM (gold contained in the prediction: FlashRAG acc, Search-R1 subem) recorded as em"),
        ("em", 0.0, "The Beatles", ["Beatles"], "exact match with no normalization (raw strings, white space collapsed)"),
        ("acc", 0.0, "Paris, France", ["paris france"], "cover-EM with no normalization (raw strings, white space collapsed)"),
        ("f1", 0.67, "Paris France", ["Paris"], "the same score rounded"),
        ("f1", 2 / 3, "yes indeed", ["yes"], "F1 without HotpotQA's yes/no/noanswer rule"),
        ("f1", 100.0, "Paris", ["Paris"], "the same score on a 0-100 scale"),
        ("em", 1.0, "Paris – France", ["Paris France"], "exact match with Unicode punctuation removed too (not only ASCII string.punctuation)"),
    ],
)
def test_metric_conventions_on_hand_computed_items(metric, recorded, prediction, golds, why) -> None:
    assert explain_metric(metric, recorded, prediction, None, golds) == why


def test_flashrag_reasoning_pipeline_output_without_final_response(tmp_path: Path) -> None:
    # FlashRAG's SearchR1Pipeline (reasoning_pipeline.py, ReasoningPipeline.run) keeps prompt and steps together in
    # output.prompt, beside finish_flag, finish_reason, retrieval_results and retrieved_times, and records pred from the last step.
    question = "Who wrote Big Fish?"
    response = '<search> Big Fish novel </search>\n\n<information>\nDoc 1(Title: "Big Fish") A novel by Daniel Wallace.\n\n</information>\n\n<answer> Daniel Wallace </answer>'
    item = {
        "id": "test_7", "question": question, "golden_answers": ["Daniel Wallace"],
        "output": {"prompt": INSTRUCTION.format(question=question) + response, "pred": "Daniel Wallace", "finish_flag": True,
                   "finish_reason": "Finished", "retrieval_results": {"0": {"query": "Big Fish novel", "docs": []}}, "retrieved_times": 1,
                   "metric_score": {"em": 1.0, "acc": 1.0, "f1": 1.0}},
    }
    path = tmp_path / "bamboogle_reasoning.json"
    path.write_text(json.dumps([item]))
    _, records, recorded = _scored(read_result_source(path))
    assert records[0].prediction == "Daniel Wallace" and records[0].turns[0].passages[0].title == "Big Fish"
    assert compare_with_recorded(records, recorded) == []


def test_metric_score_file_format(tmp_path: Path) -> None:
    path = tmp_path / "metric_score.txt"
    path.write_text("em: 0.35\nacc: 0.4\n\nf1: 0.41234\nlist_metric: [1, 2]\n")
    assert read_metric_score(path) == {"em": 0.35, "acc": 0.4, "f1": 0.41234}
    path.write_text("em 0.35\n")
    with pytest.raises(DataError, match=r"metric_score.txt:1: expected 'metric: value'"):
        read_metric_score(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[{"id": "1", "golden_answers": ["a"], "output": {"final_response": "x"}}]', "item 0 (id '1'): missing 'question'"),
        ('[{"id": "1", "question": "q", "golden_answers": ["a"], "output": {"final_response": 3}}]', "item 0 (id '1'): missing 'output.final_response'"),
        ('[{"id": "1", "question": "q", "golden_answers": ["a"], "output": {"answer": "a"}}]', "item 0: unknown result layout (output keys answer)"),
        ('{"results": []}', "unknown layout: a JSON dict with keys results, not a list of results"),
        # a FlashRAG output holding only pred (and its scores) is a pipeline's: read, no longer refused
        ('[{"id": "1", "question": "q", "golden_answers": ["a"], "output": {"pred": "a", "metric_score": {"em": 1.0}}}]', None),
        ('[{"id": "1", "question": "q", "golden_answers": ["a"], "output": {"final_response": "x"}}]\n', None),
    ],
)
def test_bad_result_files_get_one_line_naming_the_item(tmp_path: Path, content: str, message: str | None) -> None:
    path = tmp_path / "nq_bad.json"
    path.write_text(content)
    if message is None:
        _, records, _ = records_from_source(read_result_source(path))
        assert [(r.id, r.golden_answers) for r in records] == [("1", ["a"])]
        return
    with pytest.raises(DataError) as error:
        records_from_source(read_result_source(path))
    assert str(path) in error.value.message and message in error.value.message and error.value.hint
    assert "\n" not in error.value.message


def test_jsonl_line_numbers_and_unknown_folder(tmp_path: Path) -> None:
    path = tmp_path / "nq_lines.jsonl"
    path.write_text('{"id": "1", "question": "q", "golden_answers": ["a"], "output": {"final_response": "x"}}\n\n{"id": "2", "golden_answers": []}\n')
    with pytest.raises(DataError, match=r"nq_lines.jsonl:3 \(id '2'\): missing 'question'"):
        records_from_source(read_result_source(path))
    (tmp_path / "empty_folder").mkdir()
    result = _run("score", str(tmp_path / "empty_folder"), "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "unknown layout" in result.stderr and "Traceback" not in result.stderr


def test_question_not_in_the_task_data(trajectories_dir: Path, benchmarks_dir: Path, tmp_path: Path) -> None:
    items = _items(trajectories_dir, "bamboogle_2026_04_28")
    path = tmp_path / "bamboogle_mixed.json"
    path.write_text(json.dumps(items))
    source = read_result_source(path)
    task, records, _ = records_from_source(source)
    check_against_task_data(source, records, task, benchmarks_dir)  # every question is Bamboogle's
    items[7].update(id="test_99999", question="Who painted the Mona Lisa?")
    path.write_text(json.dumps(items))
    result = _run("score", str(path), "--data-dir", str(benchmarks_dir), "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{path}: item 7 (id 'test_99999'): question not in task 'bamboogle'" in result.stderr
    assert "--task" in result.stderr
