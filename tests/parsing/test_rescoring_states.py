"""Rescoring says exactly what it checked (issue 38 items 1-6, issue 37 item 7): each recorded value reproduced,
differing (with what explains it) or nothing recorded to check, on files built in each writer's own format.

R1-Searcher's files are written as its eval script `evaluation/eval_search_loacl.py` main() writes a finished item
(RUCAIBox/R1-Searcher@631167c L215-221: `pred_ans` = the generation after its last `<answer>`, unstripped;
`gen_text_store` = the trajectory + `</answer>`; shot_down items keep no trajectory and record "I don't know.") plus the
`gpt4o_output` its `metric_calc_gpt_as_judge.py` adds. The Armstrong item reproduces the one in R1-Searcher's own
`data/eval_results/bamboogle_qwen.jsonl` whose trajectory answers "27 July 1953" while `pred_ans` records the gold.
AutoRefine's training log is written as `RewardManager.get_logging_scores` writes it (verl/trainer/main_ppo.py@8363788).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.agent.method import get_method
from evalsuite.errors import DataError
from evalsuite.runs import RunDirectory
from evalsuite.runs.conventions import (
    explain_metric,
    r1_searcher_cover_em,
    r1_searcher_em,
    r1_searcher_normalize,
    r1_searcher_token_scores,
)
from evalsuite.runs.flashrag import (
    compare_averages,
    compare_with_recorded,
    read_result_source,
    records_from_source,
    resolve_layout,
    retrieval_recorded,
)
from evalsuite.runs.writer_layouts import flashrag_reasoning_answer
from evalsuite.runs.recorded import check_recorded_metrics, tally_checks
from evalsuite.scoring import score_imported
from tests.parsing.flashrag_folders import write_run_folder

EVALSUITE = [sys.executable, "-m", "evalsuite"]
ARMSTRONG = "When did the war that Neil Armstrong served in end?"  # Bamboogle test_118
CELIAC = "Can people who have celiac eat camel meat?"  # Bamboogle test_8
FISH = "Who was the father of the father of psychoanalysis?"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EVALSUITE, *args], capture_output=True, text=True, timeout=300,
                          env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})


def _r1_finished(question: str, gold: str, generation: str, pred_ans: str | None = None) -> dict:
    """A finished item as the eval script writes it: pred_ans from the last generation, gen_text_store + </answer>."""
    answer = generation.split("<answer>")[-1].split("</answer>")[0]
    return {"question": question, "answer": gold, "pred_ans": answer if pred_ans is None else pred_ans,
            "stop_reason_final": "finished", "gen_text_store": generation + "</answer>", "gpt4o_output": "True"}


def _r1_shot_down(question: str, gold: str) -> dict:
    return {"question": question, "answer": gold, "stop_reason_final": "shot_down", "pred_ans": "I don't know.",
            "gpt4o_output": "False"}


ARMSTRONG_TRAJECTORY = (
    "To solve this question, I need to find out when the war that Neil Armstrong served in ended.\n\n"
    "<|begin_of_query|> Neil Armstrong military service war<|end_of_query|>\n\n<|begin_of_documents|>\n"
    "(1)Neil Armstrong served as a naval aviator in the Korean War.\n(2)The Korean War armistice was signed on "
    "July 27, 1953.\n<|end_of_documents|>\n\nFrom the search results, the Korean War ended on 27 July 1953.</think>"
    "\n\n <answer>27 July 1953"
)


def _score(path: Path, task: str | None = None, data_dir: Path | None = None):
    source = read_result_source(path)
    layout = resolve_layout(source)
    task, records, recorded = records_from_source(source, task, get_method("search-r1").parse, layout,
                                                  lambda m: get_method(m).parse)
    for record, original, retrieval in zip(records, recorded, retrieval_recorded(layout, records, recorded)):
        record.metrics = score_imported(record, original.retrieved, retrieval)
    differences = compare_with_recorded(records, recorded) + compare_averages(source, records, recorded)
    return source, layout, records, recorded, differences


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# --- 38.2, 38.3, 38.1: R1-Searcher's prediction against its trajectory, its judge verdict, the three states ----------

def test_r1_searcher_prediction_contradicting_its_trajectory_is_found(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "bamboogle_qwen.jsonl", [
        _r1_finished(ARMSTRONG, "July 27, 1953", ARMSTRONG_TRAJECTORY, pred_ans="July 27, 1953"),
        _r1_finished(CELIAC, "Yes", "Celiac disease is triggered by gluten; meat has none.</think>\n\n<answer> Yes "),
        _r1_shot_down(FISH, "Jacob Freud"),
    ])
    source, layout, records, recorded, differences = _score(path)
    # gpt4o_output, added by R1-Searcher's judge script, does not make its layout unrecognisable
    assert layout.name == "r1-searcher-eval"
    # the writer's own rule over the trajectory is scored: the unstripped " Yes " it records, "27 July 1953"
    assert [r.prediction for r in records] == ["27 July 1953", " Yes ", "I don't know."]
    assert [r.metrics["em"] for r in records] == [0.0, 1.0, 0.0]  # EM 1/3, not the 2/3 pred_ans implies
    # retrieval hit from the trajectory's documents; the shot_down item keeps no trajectory: not computed, not 0
    assert records[0].metrics["retrieval_hit"] == 1.0 and records[1].metrics["retrieval_hit"] == 0.0
    assert "retrieval_hit" not in records[2].metrics
    assert [(d.item, d.what, d.ours, d.recorded, d.explanation) for d in differences] == [
        ("0", "prediction", "'27 July 1953'", "'July 27, 1953'", None)
    ]
    tally = tally_checks(source, records, recorded, differences)
    assert (tally.predictions, tally.scores, tally.unchecked_items) == ((1, 1), (0, 0), 1)
    checks = {c.name: c for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks["gpt4o_output"].status == "judgment" and "a judgment we do not recompute" in checks["gpt4o_output"].note
    assert "metric_calc_gpt_as_judge.py" in checks["gpt4o_output"].note


def test_check_recorded_lists_the_contradiction_and_counts_each_state(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "bamboogle_qwen.jsonl", [
        _r1_finished(ARMSTRONG, "July 27, 1953", ARMSTRONG_TRAJECTORY, pred_ans="July 27, 1953"),
        _r1_finished(CELIAC, "Yes", "Gluten is not in meat.</think>\n\n<answer> Yes "),
        _r1_shot_down(FISH, "Jacob Freud"),
    ])
    result = _run("score", str(path), "--check-recorded", "--json", "-o", str(tmp_path / "out"))
    assert result.returncode == 1, result.stdout + result.stderr
    (scored,) = json.loads(result.stdout)["inputs"]
    assert scored["check"] == {
        "items": 3,
        "reproduced": {"predictions": 1, "scores": 0, "averages": 0},
        "differs": {"predictions": 1, "scores": 0, "averages": 0},
        "differs_from_task_data": 0,
        "nothing_recorded_to_check": 1, "predictions_not_checked": 0,
    }
    task = scored["metrics"]["tasks"]["bamboogle"]
    assert task["metrics"]["em"]["mean"] == pytest.approx(1 / 3)
    # retrieval hit over the 2 items whose trajectory records retrieval (1 of 2), the third left out and counted
    assert task["metrics"]["retrieval_hit"]["mean"] == 0.5
    assert scored["metrics"]["extra"]["not_computed"]["bamboogle"] == {"retrieval_hit": 1}
    result = _run("score", str(path), "--check-recorded", "-o", str(tmp_path / "out2"))
    assert result.returncode == 1
    assert ("✗ bamboogle_qwen (r1-searcher-eval): reproduced: 1 prediction; differs: 1 prediction; nothing recorded to "
            "check: 1 of 3 items record no prediction or score we recompute") in result.stdout
    assert "0: prediction '27 July 1953' != recorded 'July 27, 1953' (no known convention explains it)" in result.stdout
    assert "✓" not in result.stdout


def test_r1_searcher_file_with_nothing_to_compare_says_so_and_exits_3(tmp_path: Path) -> None:
    # the second copy of the script keeps no trajectory; R1-Searcher's metric script records no per-item score
    rows = [{"question": q, "answer": g, "pred_ans": g} for q, g in ((ARMSTRONG, "July 27, 1953"), (CELIAC, "Yes"))]
    path = _write_jsonl(tmp_path / "bamboogle_qwen.jsonl", rows)
    result = _run("score", str(path), "--check-recorded", "-o", str(tmp_path / "out"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert ("- bamboogle_qwen (r1-searcher-eval): nothing recorded to check: 2 of 2 items record no prediction or "
            "score we recompute") in result.stdout
    assert "✓" not in result.stdout and "reproduced:" not in result.stdout
    # without --check-recorded the file is scored as usual
    assert _run("score", str(path), "-o", str(tmp_path / "out2")).returncode == 0


# --- 38.4: R1-Searcher's rule-based metric ---------------------------------------------------------------------------

def test_r1_searcher_metric_on_hand_computed_items() -> None:
    assert r1_searcher_normalize("The U.S._Army’s `Big` war") == "u s army s big war"
    # punctuation becomes a space: "Jean-Paul" is "jean paul" (ours drops it: "jeanpaul")
    assert r1_searcher_em("Jean-Paul", ["Jean Paul"]) == 1.0 and r1_searcher_em("True", ["yes"]) == 1.0
    # cover-EM: every gold token among the prediction's, in any order
    assert r1_searcher_cover_em("1953, July 27", ["July 27, 1953"]) == 1.0
    assert r1_searcher_cover_em("July 1953", ["July 27, 1953"]) == 0.0
    # F1: precision and recall of the best-F1 gold (0.8 against "Korean War ended": p 1, r 2/3), not each maximised
    scores = r1_searcher_token_scores("the Korean War", ["Korean War ended", "war"])
    assert scores == pytest.approx({"f1": 0.8, "precision": 1.0, "recall": 2 / 3})
    assert r1_searcher_token_scores("yes", ["no"])["f1"] == 0.0
    # a recorded value only R1-Searcher's metric gives is explained by it, item by item
    why = explain_metric("acc", 1.0, "1953, July 27", None, ["July 27, 1953"])
    assert why is not None and "R1-Searcher's rule-based metric" in why and "any order" in why
    assert "R1-Searcher" in (explain_metric("recall", 2 / 3, "the Korean War", None, ["Korean War ended", "war"]) or "")


def test_r1_searcher_recorded_scores_reproduced_or_explained_item_by_item(tmp_path: Path) -> None:
    # a copy of the eval script storing metric_calc_rule.py's per-item values beside each item
    rows = [
        {**_r1_finished(ARMSTRONG, "July 27, 1953", "It ended in 1953.</think>\n\n<answer>1953, July 27"),
         "em": 0.0, "cover_em_1": 1.0, "f1": 1.0},
        {**_r1_finished(CELIAC, "Yes", "No gluten.</think>\n\n<answer> Yes "), "em": 1.0, "cover_em_1": 1.0, "f1": 1.0},
    ]
    source, layout, records, recorded, differences = _score(_write_jsonl(tmp_path / "bamboogle_r1.jsonl", rows))
    assert layout.name == "r1-searcher-eval"
    # ours: cover-EM 0 and F1 1.0 on "1953, July 27" (same tokens); R1-Searcher's cover-EM is 1
    assert [(d.item, d.what, d.recorded) for d in differences] == [("0", "cover_em", "cover_em_1 1.0000")]
    assert "R1-Searcher's rule-based metric" in (differences[0].explanation or "")
    tally = tally_checks(source, records, recorded, differences)
    assert tally.scores == (5, 1) and tally.predictions == (2, 0) and tally.unchecked_items == 0
    checks = {c.name: (c.status, c.ours) for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks["em"] == ("reproduced", "em") and checks["cover_em_1"] == ("differs", "cover_em")


# --- 38.6: AutoRefine's training log ----------------------------------------------------------------------------------

AUTOREFINE_PROMPT = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nAnswer the given question. "
    "... For example, <answer> Beijing </answer>. Question: {q}\n<|im_end|>\n<|im_start|>assistant\n"
)


def test_autorefine_training_log_read_and_its_scores_reproduced(tmp_path: Path) -> None:
    logged = [
        (FISH, ["Jacob Freud"], "<think> x </think><search> father of Freud </search><information>Doc 1(Title: Freud) "
         "His father was Jacob Freud.</information><refine> Jacob Freud </refine><answer> Jacob Freud </answer>",
         {"answer_em": 1.0, "answer_f1": 1.0, "answer_cem": 1.0}),
        # no <answer> in the response: extract_solution gives None and every answer score 0 (the prompt's Beijing
        # example is not the response's)
        (CELIAC, ["Yes"], "<think> unsure </think>", {"answer_em": 0.0, "answer_f1": 0.0, "answer_cem": 0.0}),
    ]
    rows = [{"step": 40, "data_source": "bamboogle",
             "scores": {**scores, "information_scores": 1.0, "information_reverse_rank": 1.0, "refine_scores": 1.0,
                        "format_scores": 1.0},
             "ground_truth": golds, "response": AUTOREFINE_PROMPT.format(q=q) + response}
            for q, golds, response, scores in logged]
    source, layout, records, recorded, differences = _score(_write_jsonl(tmp_path / "bamboogle_val.jsonl", rows))
    assert layout.name == "autorefine-log"
    assert [r.prediction for r in records] == ["Jacob Freud", None] and [r.question for r in records] == [FISH, CELIAC]
    assert differences == []
    tally = tally_checks(source, records, recorded, differences)
    assert tally.scores == (6, 0) and tally.unchecked_items == 0
    checks = {c.name: (c.status, c.ours) for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks["answer_em"] == ("reproduced", "em") and checks["answer_cem"] == ("reproduced", "cover_em")
    assert checks["answer_f1"] == ("reproduced", "f1") and checks["refine_scores"] == ("not ours", None)
    # a tampered recorded score is a difference
    rows[1]["scores"]["answer_em"] = 1.0
    _, _, _, _, differences = _score(_write_jsonl(tmp_path / "bamboogle_val.jsonl", rows))
    assert [(d.item, d.what, d.recorded) for d in differences] == [("1", "em", "answer_em 1.0000")]


# --- 38.5, 38.6: FlashRAG: retrieval hit from retrieval_result, not computed without passages, bookkeeping ---------

def _sequential_items(with_passages: bool) -> list[dict]:
    docs = [[{"id": "1", "contents": "\"Sigmund Freud\"\nFreud's father, Jacob Freud, was a wool merchant."}],
            [{"id": "2", "contents": "\"Camel\"\nCamels live in deserts."}]]
    items = []
    for i, (question, gold, pred) in enumerate(((FISH, "Jacob Freud", "Jacob Freud"), (CELIAC, "Yes", "No"))):
        output: dict = {"pred": pred, "metric_score": {"em": float(gold == pred), "f1": float(gold == pred),
                                                       "acc": float(gold == pred)}}
        if with_passages:
            output["retrieval_result"] = docs[i]
        items.append({"id": f"test_{i}", "question": question, "golden_answers": [gold], "output": output})
    return items


def test_flashrag_retrieval_result_is_scored_and_no_passages_is_not_zero(tmp_path: Path) -> None:
    naive = write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_naive", _sequential_items(True),
                             "dataset_name: bamboogle\nsave_note: naive\n")
    (naive / "metric_score.txt").write_text("em: 0.5\nf1: 0.5\nacc: 0.5\navg_input_tokens: 312.5\n")
    zero_shot = write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_zero-shot", _sequential_items(False),
                                 "dataset_name: bamboogle\nsave_note: zero-shot\n")
    _, _, records, _, _ = _score(naive)
    assert [r.metrics["retrieval_hit"] for r in records] == [1.0, 0.0]  # the gold "Jacob Freud" is in hit 1 only
    _, _, records, _, _ = _score(zero_shot)
    assert all("retrieval_hit" not in r.metrics for r in records)  # nothing retrieved is recorded: not computed
    result = _run("score", str(naive), str(zero_shot), "--check-recorded", "--json", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    inputs = {item["name"]: item for item in json.loads(result.stdout)["inputs"]}
    hit = inputs["bamboogle_2026_05_01_12_00_naive"]["metrics"]["tasks"]["bamboogle"]["metrics"]["retrieval_hit"]
    assert hit["mean"] == 0.5
    assert inputs["bamboogle_2026_05_01_12_00_zero-shot"]["metrics"]["tasks"]["bamboogle"]["metrics"]["retrieval_hit"] is None
    checks = {c["name"]: c for c in inputs["bamboogle_2026_05_01_12_00_naive"]["recorded_metrics"]}
    assert checks["avg_input_tokens"]["status"] == "bookkeeping" and "CountToken" in checks["avg_input_tokens"]["note"]
    result = _run("score", str(zero_shot), "-o", str(tmp_path / "out2"))
    row = next(line for line in result.stdout.splitlines() if line.startswith("| bamboogle_2026_05_01_12_00_zero-shot"))
    assert "—" in row  # the retrieval-hit cell: not computed, never 0.0


def test_flashrag_folder_without_intermediate_data_names_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "bamboogle_2026_05_01_12_00_naive"
    folder.mkdir()
    (folder / "metric_score.txt").write_text("em: 0.5\n")
    (folder / "config.yaml").write_text("dataset_name: bamboogle\n")
    result = _run("score", str(folder), "-o", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (f"error: {folder}: a FlashRAG run folder without intermediate_data.json (the items Dataset.save writes); "
            "it holds config.yaml, metric_score.txt") in result.stderr


# --- 37.7: golds and questions against the task data ------------------------------------------------------------------

def test_golds_replaced_by_predictions_are_reported_and_the_registry_gold_scored(
    trajectories_dir: Path, benchmarks_dir: Path, tmp_path: Path
) -> None:
    (source,) = trajectories_dir.glob("bamboogle_2026_04_28*.json")
    items = json.loads(source.read_text())
    for item in items:  # the attack: every record's golds replaced by its own prediction
        item["golden_answers"] = [item["output"]["pred"]]
        item["output"]["metric_score"] = {"em": 1.0, "acc": 1.0, "f1": 1.0}
    forged = tmp_path / "bamboogle_forged.json"
    forged.write_text(json.dumps(items))
    result = _run("score", str(forged), "--task", "bamboogle", "--data-dir", str(benchmarks_dir), "--check-recorded",
                  "--json", "-o", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    (scored,) = json.loads(result.stdout)["inputs"]
    registry = {json.loads(line)["id"]: json.loads(line)["golden_answers"]
                for line in (benchmarks_dir / "bamboogle.test.jsonl").read_text().splitlines()}
    changed = [i for i in items if sorted(registry[i["id"]]) != sorted(i["golden_answers"])]
    gold_lines = [d for d in scored["differences"] if d["what"] == "gold answers"]
    assert len(gold_lines) == len(changed) == scored["check"]["differs_from_task_data"] > 100
    # scored against the registry's golds: EM is the original file's, not 100
    original = json.loads(source.read_text())
    expected = sum(x["output"]["metric_score"]["em"] for x in original) / len(original)
    assert scored["metrics"]["tasks"]["bamboogle"]["metrics"]["em"]["mean"] == pytest.approx(expected)
    stored = RunDirectory(tmp_path / "out" / "bamboogle_forged").read_predictions()
    assert all(r.golden_answers == registry[r.id] for r in stored)
    # reported per item even without --check-recorded (rc 0: nothing was asked to be checked)
    result = _run("score", str(forged), "--task", "bamboogle", "--data-dir", str(benchmarks_dir), "-o", str(tmp_path / "o2"))
    assert result.returncode == 0, result.stderr
    first = changed[0]
    assert (f"! bamboogle_forged: {len(changed)} gold answers or questions differ from the task data; the task data's "
            "are scored:") in result.stdout
    assert (f"{first['id']}: gold answers {registry[first['id']]!r} != recorded {first['golden_answers']!r}"
            in result.stdout)


def test_ids_without_matching_questions_are_refused(trajectories_dir: Path, benchmarks_dir: Path, tmp_path: Path) -> None:
    (source,) = trajectories_dir.glob("bamboogle_2026_04_28*.json")
    result = _run("score", str(source), "--task", "nq", "--data-dir", str(benchmarks_dir), "-o", str(tmp_path / "out"))
    # ids test_i exist in NQ, but no question matches: refused, with the count
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "question not in task 'nq'" in result.stderr
    assert "125 of 125 records match no question of the task data by id and question text" in result.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# --- 38.2: ReSearch's FlashRAG pipelines: pred checked against final_response by the pipeline's own rule ------------

def test_research_pred_checked_against_its_final_response(tmp_path: Path) -> None:
    def item(i: int, question: str, gold: str, final_response: str, pred: str) -> dict:
        return {"id": f"test_{i}", "question": question, "golden_answers": [gold],
                "output": {"final_response": final_response, "pred": pred,
                           "metric_score": {"em": float(pred == gold), "f1": float(pred == gold), "acc": float(pred == gold)}}}

    research = ("<think> who </think><search> Freud father </search> <result>\nJacob Freud was his father.\n</result>"
                "<think> found </think><answer> The answer is \\boxed{Jacob Freud} </answer>")
    items = [
        item(0, FISH, "Jacob Freud", research, "Jacob Freud"),  # remove_boxed(last_boxed_only_string(...)): agrees
        item(1, CELIAC, "Yes", "<think> x </think><answer> \\boxed{No} </answer>", "Yes"),  # contradicts it
        item(2, ARMSTRONG, "July 27, 1953", "<think> x </think><answer> \\boxed{1953} </answer>", ""),  # over length
        # R1SearcherPipeline (r1r): the first <answer>, stripped
        item(3, "Who directed Jaws?", "Steven Spielberg", "<|begin_of_query|> Jaws director<|end_of_query|> "
             "<|begin_of_documents|>\nJaws was directed by Steven Spielberg.\n<|end_of_documents|><answer> Steven "
             "Spielberg </answer><answer> Spielberg </answer>", "Steven Spielberg"),
    ]
    folder = write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_research", items,
                              "dataset_name: bamboogle\nsave_note: research\n")
    source, layout, records, recorded, differences = _score(folder)
    assert layout.name == "research-flashrag"
    assert [r.prediction for r in records] == ["Jacob Freud", "No", "1953", "Steven Spielberg"]
    predictions = [(d.item, d.ours, d.recorded, d.explanation) for d in differences if d.what == "prediction"]
    assert predictions == [
        ("test_1", "'No'", "'Yes'", None),
        ("test_2", "'1953'", "''", "ReSearch's pipelines record '' for a generation that ran over length"),
    ]
    assert tally_checks(source, records, recorded, differences).predictions == (2, 2)


def test_a_run_directory_has_nothing_recorded_by_another_pipeline(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "bamboogle_qwen.jsonl", [
        _r1_finished(CELIAC, "Yes", "Gluten is not in meat.</think>\n\n<answer> Yes "),
    ])
    assert _run("score", str(path), "--check-recorded", "-o", str(tmp_path / "a")).returncode == 0
    result = _run("score", str(tmp_path / "a" / "bamboogle_qwen"), "--check-recorded", "-o", str(tmp_path / "b"))
    assert result.returncode == 3, result.stdout + result.stderr
    assert "- bamboogle_qwen: a run directory; nothing recorded by another pipeline to check" in result.stdout
    assert "✓" not in result.stdout


# --- 38.2: FlashRAG's reasoning pipelines: pred checked against the steps output.prompt keeps -------------------------
# Written as flashrag/pipeline/reasoning_pipeline.py@8bb69ac ReasoningPipeline.run L86-149 writes an item (SearchR1Pipeline
# keeps that run()): output.prompt = the chat prompt + each step's stripped text + each retrieval block
# (_retrieved_docs_to_string); finish_flag, finish_reason, retrieval_results {step: {query, docs}} (json: string keys),
# retrieved_times; pred by the branch that ended the loop; metric_score by FlashRAG's Evaluator on that pred.

SEARCH_R1_USER = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get new "
    "information. After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query "
    "</search> and it will return the top searched results between <information> and </information>. You can search as "
    "many times as your want. If you find no further external knowledge needed, you can directly provide the answer "
    "inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. "
    "Question: {question}\n"
)
R1_USER = (
    "The User asks a question, and the Assistant solves it.\nThe Assistant first thinks about the reasoning process in "
    "the mind and then provides the User with the final answer.\nThe output format of reasoning process and final "
    "answer are enclosed within <think> </think> and <answer> </answer> tags, respectively, i.e., \"<think> reasoning "
    "process here </think>\\n\\n<answer> final answer here </answer>\".\nDuring the thinking process, the Assistant can "
    "perform searching for uncertain knowledge if necessary with the format of \"<|begin_of_query|> search query (only "
    "keywords) here <|end_of_query|>\". **A query must involve only a single triple**.\nThen, the system will provide "
    "the Assistant with helpful information with the format of \"<|begin_of_documents|> ...search results... "
    "<|end_of_documents|>\".\n\nUser:{question}\nAssistant: <think>"
)


def _qwen_chat(user: str) -> str:
    return ("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")


def _search_r1_block(docs: list[str]) -> str:
    # SearchR1Pipeline._retrieved_docs_to_string: "Doc i(Title: first line) rest" per hit, in a blank-line-bounded block
    lines = "".join(f"Doc {i}(Title: {c.split(chr(10))[0]}) {chr(10).join(c.split(chr(10))[1:])}\n"
                    for i, c in enumerate(docs, start=1))
    return f"\n\n<information>\n{lines}\n</information>\n\n"


def _reasoning_item(i: int, question: str, gold: str, steps: list[tuple[str, list[str] | None]], pred: str,
                    reason: str, scores: tuple[float, float, float]) -> dict:
    """steps: each step's text and, for a search step, the hits retrieved after it."""
    # PromptTemplate's plain prompt: run_exp.py's Search-R1 model name says neither chat nor instruct
    prompt = SEARCH_R1_USER.format(question=question)
    retrieval: dict[str, dict] = {}
    for text, hits in steps:
        prompt += text.strip()
        if hits is not None:
            retrieval[str(len(retrieval))] = {"query": text.split("<search>")[-1].split("</search>")[0].strip(),
                                              "docs": [{"id": str(n), "contents": c} for n, c in enumerate(hits)]}
            prompt += _search_r1_block(hits)
    em, acc, f1 = scores
    return {"id": f"test_{i}", "question": question, "golden_answers": [gold], "metadata": {},
            "output": {"prompt": prompt, "finish_flag": True, "retrieval_results": retrieval,
                       "retrieved_times": len(retrieval), "pred": pred, "finish_reason": reason,
                       "metric_score": {"em": em, "f1": f1, "acc": acc}}}


FREUD_DOC = "\"Sigmund Freud\"\nFreud's father, Jacob Freud, was a wool merchant."
KOREA_DOC = "\"Korean War\"\nThe armistice was signed on 27 July 1953."


def _search_r1_folder(tmp_path: Path) -> Path:
    items = [
        # searched once, answered: extract_between's last <answer>, stripped
        _reasoning_item(0, FISH, "Jacob Freud", [
            ("<think> I need Freud's father. </think>\n<search> father of Sigmund Freud </search>", [FREUD_DOC]),
            ("<think> The documents say Jacob Freud. </think>\n<answer> Jacob Freud </answer>", None),
        ], "Jacob Freud", "Finished", (1.0, 1.0, 1.0)),
        # the contradiction: the trajectory answers "No", the recorded pred (and its scores) say the gold "Yes"
        _reasoning_item(1, CELIAC, "Yes", [
            ("<think> Celiac disease is triggered by gluten; camel meat has none. </think>\n<answer> No </answer>", None),
        ], "Yes", "Finished", (1.0, 1.0, 1.0)),
        # five searches, the default max_retrieval_num: the loop ran out
        _reasoning_item(2, ARMSTRONG, "July 27, 1953", [
            (f"<think> step {n} </think>\n<search> Korean War end {n} </search>", [KOREA_DOC]) for n in range(5)
        ], "No valid answer found", "Reach max retrieval number", (0.0, 0.0, 0.0)),
        # no <answer>: the step's whole text; em 0, acc 1, f1 2·(2/4·1)/(2/4+1) = 2/3
        _reasoning_item(3, "Who directed Jaws?", "Steven Spielberg", [
            ("  Steven Spielberg directed it.\n", None),
        ], "Steven Spielberg directed it.", "Normal finish without answer pattern", (0.0, 1.0, 2 / 3)),
    ]
    return write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_search-r1", items,
                            "dataset_name: bamboogle\nsave_note: search-r1\nframework: vllm\n")


def test_flashrag_reasoning_pred_checked_against_its_prompt(tmp_path: Path) -> None:
    folder = _search_r1_folder(tmp_path)
    assert (folder / "metric_score.txt").read_text() == "em: 0.5\nf1: 0.6666666666666666\nacc: 0.75\n"
    source, layout, records, recorded, differences = _score(folder)
    assert layout.name == "reasoning"
    assert [r.prediction for r in records] == ["Jacob Freud", "No", "No valid answer found",
                                               "Steven Spielberg directed it."]
    # scored on what the trajectory gives: EM 1/4, not the 2/4 metric_score.txt records
    assert [r.metrics["em"] for r in records] == [1.0, 0.0, 0.0, 0.0]
    assert [r.metrics["cover_em"] for r in records] == [1.0, 0.0, 0.0, 1.0]
    predictions = [(d.item, d.ours, d.recorded, d.explanation) for d in differences if d.what == "prediction"]
    assert predictions == [("test_1", "'No'", "'Yes'", None)]
    # the contradicting item's three recorded scores and the three averages follow from it
    assert sorted((d.item, d.what) for d in differences if d.what != "prediction") == [
        ("metric_score.txt", "average cover_em"), ("metric_score.txt", "average em"), ("metric_score.txt", "average f1"),
        ("test_1", "cover_em"), ("test_1", "em"), ("test_1", "f1"),
    ]
    tally = tally_checks(source, records, recorded, differences)
    # 4 predictions (3 reproduced, 1 differs); 4 items × em, f1, acc = 12 scores (9, 3); 3 averages (0, 3)
    assert (tally.predictions, tally.scores, tally.averages, tally.unchecked_items) == ((3, 1), (9, 3), (0, 3), 0)


def test_check_recorded_lists_the_reasoning_pipeline_contradiction(tmp_path: Path) -> None:
    folder = _search_r1_folder(tmp_path)
    result = _run("score", str(folder), "--check-recorded", "-o", str(tmp_path / "out"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("✗ bamboogle_2026_05_01_12_00_search-r1 (reasoning): reproduced: 3 predictions, 9 per-item scores; "
            "differs: 1 prediction, 3 per-item scores, 3 averages") in result.stdout
    assert "test_1: prediction 'No' != recorded 'Yes' (no known convention explains it)" in result.stdout
    assert "✓" not in result.stdout


def _r1_record(question: str, generation: str, reason: str | None = "Finished", user: str = R1_USER) -> dict:
    output: dict = {"prompt": _qwen_chat(user.format(question=question)) + generation, "finish_flag": True, "pred": "x"}
    if reason is not None:
        output["finish_reason"] = reason
    return {"id": "test_0", "question": question, "golden_answers": ["g"], "output": output}


R1_BLOCK = "\n\n<|begin_of_documents|>\n(1)Title: \"Jaws\" Text: Jaws was directed by Steven Spielberg.\n\n<|end_of_documents|>\n\n"


@pytest.mark.parametrize(("generation", "reason", "expected"), [
    # ReasoningPipeline's own tags: the last step after the last block
    ("<|begin_of_query|> Jaws director<|end_of_query|>" + R1_BLOCK + "It is Spielberg.</think>\n\n<answer> Steven Spielberg </answer>",
     "Finished", "Steven Spielberg"),
    # an <answer> in an earlier step is not the last step's
    ("<answer> Lyon <|begin_of_query|> q<|end_of_query|>" + R1_BLOCK + "<answer> Paris </answer>", "Finished", "Paris"),
    # a last step ending with </answer> that no <answer> opens: str(None)
    ("It is Spielberg.</answer>", "Finished", "None"),
    # no step after the last block and fewer than five blocks: a blank last step, not the turn limit
    ("<|begin_of_query|> q<|end_of_query|>" + R1_BLOCK, "Normal finish without answer pattern", ""),
    ("<|begin_of_query|> q<|end_of_query|>" + R1_BLOCK, "Reach max retrieval number", "No valid answer found"),
    ("".join(f"<|begin_of_query|> q{n}<|end_of_query|>" + R1_BLOCK for n in range(5)), None, "No valid answer found"),
    # a last step that asks for a search ends no loop of run(): nothing to check
    ("<|begin_of_query|> q<|end_of_query|>", "Finished", None),
])
def test_reasoning_pipeline_rule_on_hand_made_trajectories(generation: str, reason: str | None, expected: str | None) -> None:
    assert flashrag_reasoning_answer(_r1_record("Who directed Jaws?", generation, reason)) == expected


def test_autorefine_pipeline_prompt_tail_is_not_read_as_its_answer() -> None:
    # AutoRefinePipeline keeps ReasoningPipeline.run with <documents> blocks; its plain prompt ends " </user>"
    user = ("... The retrieval system will provide you with the three most relevant documents enclosed in<documents> and "
            "</documents>. ...\n<user> Question: {question} </user>")
    question = "Who directed Jaws?"
    record = {"id": "0", "question": question, "golden_answers": ["g"],
              "output": {"prompt": user.format(question=question) + "Steven Spielberg.", "finish_flag": True,
                         "finish_reason": "Normal finish without answer pattern", "pred": "Steven Spielberg."}}
    assert flashrag_reasoning_answer(record) == "Steven Spielberg."
    block = "\n\n<documents>\nDoc 1(Title: \"Jaws\") Jaws is a film by Steven Spielberg.\n\n</documents>\n\n"
    record["output"]["prompt"] = (user.format(question=question) + "<search> Jaws director </search>" + block
                                  + "<refine> Spielberg </refine><answer> Steven Spielberg </answer>")
    assert flashrag_reasoning_answer(record) == "Steven Spielberg"


def test_reasoning_pipeline_rule_checks_nothing_it_cannot_read() -> None:
    # SimpleDeepSearcherPipeline has a run() of its own (\boxed answers): its tags are none of these pipelines'
    deep = "Provide your final answer in the format \\boxed{{YOUR_ANSWER}}. <|begin_search_result|>\n\nQuestion:\n{question}\n\n"
    assert flashrag_reasoning_answer(_r1_record("Who directed Jaws?", "\\boxed{Spielberg}", user=deep)) is None
    # a prompt that does not hold the question: no trajectory of it
    record = _r1_record("Who directed Jaws?", "<answer> x </answer>")
    record["question"] = "Who directed Alien?"
    assert flashrag_reasoning_answer(record) is None


def test_a_kept_trajectory_no_rule_reads_is_said_unchecked_never_reproduced(tmp_path: Path) -> None:
    """A SimpleDeepSearcher-style item (a run() of its own, \\boxed answers) in a reasoning folder: its trajectory is
    kept, no extraction rule applies, so its prediction is scored as recorded and counted as not checked."""
    deep = ("Provide your final answer in the format \\boxed{{YOUR_ANSWER}}. <|begin_search_result|>\n\n"
            "Question:\n{question}\n\n")
    item = {"id": "test_0", "question": "Who directed Jaws?", "golden_answers": ["Steven Spielberg"], "metadata": {},
            "output": {"prompt": deep.format(question="Who directed Jaws?") + "\\boxed{Steven Spielberg}",
                       "finish_flag": True, "finish_reason": "Finished", "pred": "Steven Spielberg",
                       "metric_score": {"em": 1.0, "f1": 1.0, "acc": 1.0}}}
    folder = write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_deep", [item],
                              "dataset_name: bamboogle\nsave_note: deep\nframework: vllm\n")
    source, layout, records, recorded, differences = _score(folder)
    assert layout.name == "reasoning" and records[0].prediction == "Steven Spielberg"
    tally = tally_checks(source, records, recorded, differences)
    assert tally.predictions == (0, 0) and tally.unchecked_predictions == 1
    assert ("not checked: 1 prediction scored as recorded; the trajectory is kept, but no extraction rule of its "
            "writer applies to it") in tally.lines()


@pytest.mark.parametrize(("name", "text"), [("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("empty.json", "[]")])
def test_a_result_file_without_records_is_one_line_and_writes_nothing(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    result = _run("score", str(tmp_path / name), "--task", "bamboogle", "--check-recorded", "-o", str(tmp_path / "out"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.splitlines()[0] == f"error: {tmp_path / name}: holds no result records"
    assert not (tmp_path / "out").exists()
