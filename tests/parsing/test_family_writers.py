"""`evalsuite score` on the result files ReSearch, ZeroSearch and StepSearch write, and R1-Searcher's passages.

Each fixture is built from the shape its writer produces (cited in the layout's `writer`, file, commit, function and
lines), not from a file in the wild. Each writer's own answer extraction and scoring is written out here from its code,
so that "our metric of their prediction equals their definition" is a differential test:
- ReSearch (`research-flashrag`): `ReSearchPipeline.run_item` in its FlashRAG fork stores `final_response` and
  `pred` = remove_boxed(last_boxed_only_string(extract_answer(final_response))); FlashRAG's Evaluator scores `pred`.
- ZeroSearch (`zerosearch-validation`): `AccManager.__call__` stores {prompt, response_str, ground_truth, em_score,
  f1_score = em_score}; `qa_em.compute_score` reads the last `<answer>` of prompt + response if there are two or more.
- StepSearch (`stepsearch-predictions`): `_validate` stores {id, data_source, prompt, response, ground_truth};
  `qa_step` scores query_f1_score(extract_solution(response)), a token F1 rounded to 4 places.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.runs.writer_layouts import LAYOUTS, r1_searcher_passages, zerosearch_prediction, zerosearch_response
from evalsuite.runs.recorded import check_recorded_metrics
from tests.parsing.flashrag_folders import write_run_folder
from tests.parsing.test_flashrag_pipelines import QUESTIONS, _score, flashrag_em, flashrag_scores, r1_searcher_rows

BIG_FISH = '"Big Fish"\nBig Fish is a 1998 novel by Daniel Wallace.'
CANBERRA = '"Canberra"\nCanberra is the capital city of Australia.'


def chat(system: str, user: str) -> str:
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


# --- ReSearch: its FlashRAG fork's ReSearchPipeline / R1SearcherPipeline, written out ---------------------------------

def research_extract_answer(text: str) -> str | None:  # re_search.py extract_answer: the first <answer>
    match = re.search(r"<answer>(.*?)</answer>", text.strip(), re.DOTALL)
    return match.group(1) if match else None


def research_last_boxed(s: str) -> str | None:  # re_search.py last_boxed_only_string
    idx = s.rfind("\\boxed")
    if "\\boxed " in s:
        return "\\boxed " + s.split("\\boxed ")[-1].split("$")[0]
    if idx < 0:
        return None
    depth = 0
    for i in range(idx, len(s)):
        depth += (s[i] == "{") - (s[i] == "}")
        if s[i] == "}" and depth == 0:
            return s[idx : i + 1]
    return None


def research_remove_boxed(s: str) -> str:  # re_search.py remove_boxed (raises where the writer's try gives "")
    if "\\boxed " in s:
        return s[len("\\boxed ") :]
    assert s.startswith("\\boxed{") and s.endswith("}")
    return s[len("\\boxed{") : -1]


def research_pred(final_response: str, over_length: bool = False) -> str:  # ReSearchPipeline.run_item's pred, L286-297
    if over_length:
        return ""
    part = research_extract_answer(final_response)
    if part is None:
        return ""
    try:
        return research_remove_boxed(research_last_boxed(part))
    except Exception:
        return ""


def research_result(*contents: str) -> str:
    # ReSearchPipeline.run_item L254-261 (active_pipeline.py@205fc92): query += f"{output_str} <result>\n{retrieval_text}\n</result>",
    # retrieval_text = contents + "\n\n" each, stripped
    return " <result>\n" + "".join(f"{c}\n\n" for c in contents).strip() + "\n</result>"


def research_items() -> list[dict]:
    generations = [
        "<think> I should look it up. </think>\n<search> Big Fish author </search>" + research_result(BIG_FISH, CANBERRA)
        + "<think> Wallace wrote it. </think>\n<answer> The answer is \\boxed{Daniel Wallace} </answer>",
        "<search> capital of Australia </search>" + research_result(CANBERRA) + "<answer> \\boxed{Canberra} city </answer>",
        # last_boxed_only_string takes "\\boxed " + what follows it: pred "here " (the writer's reading, kept as is)
        "<think> I know it. </think>\n<answer> Michelangelo, no \\boxed here </answer>",
        "<think> Paris is in France so the answer is",  # over length: pred ""
    ]
    items = []
    for i, ((qid, question, golds, _), generation) in enumerate(zip(QUESTIONS, generations)):
        pred = research_pred(generation, over_length=i == 3)
        output = {"final_response": generation, "pred": pred, "metric_score": flashrag_scores(pred, golds)}
        items.append({"id": qid, "question": question, "golden_answers": golds, "metadata": {}, "output": output})
    return items


@pytest.mark.parametrize("save_note", ["research", "research_qwen7b_ins"])
def test_research_flashrag_folder_reproduces_its_metric_score(tmp_path: Path, save_note: str) -> None:
    items = research_items()
    folder = write_run_folder(tmp_path, f"bamboogle_2026_05_01_12_00_{save_note}", items, f"dataset_name: bamboogle\nsave_note: {save_note}\n")
    source, layout, records, recorded, differences = _score(folder)
    assert layout.name == "research-flashrag" and differences == []
    assert [r.prediction for r in records] == ["Daniel Wallace", "Canberra", "here ", ""] == [i["output"]["pred"] for i in items]
    # our em / f1 / acc of their pred equal FlashRAG's definitions, item by item (metric_score) and on average
    for record, item in zip(records, items):
        theirs = item["output"]["metric_score"]
        assert (record.metrics["em"], record.metrics["cover_em"]) == (theirs["em"], theirs["acc"])
        assert record.metrics["f1"] == pytest.approx(theirs["f1"])
    checks = {c.name: c.status for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks == {"em": "reproduced", "f1": "reproduced", "acc": "reproduced"}
    # <search> turns with the <result> blocks split into passages as run_item joined them
    turn = records[0].turns[0]
    assert turn.query == "Big Fish author" and [p.title for p in turn.passages] == ["Big Fish", "Canberra"]
    assert records[0].metrics["retrieval_hit"] == 1.0 and records[2].turns[0].answer is not None
    # the same two keys with Search-R1's <information> observations are a Search-R1 reproduction, its answer parsed
    items[0]["output"]["final_response"] = "<search> x </search>\n\n<information>Doc 1(Title: a) b</information>\n\n<answer> Daniel Wallace </answer>"
    folder = write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_search_r1", items, "dataset_name: bamboogle\n")
    assert _score(folder)[1].name == "search-r1-results"


def test_research_r1r_pipeline_uses_r1_searcher_tags(tmp_path: Path) -> None:
    # R1SearcherPipeline.run_item L122-129, L154-170: "<|begin_of_documents|>\n" + contents joined by blank lines + "\n<|end_of_documents|>";
    # pred = the first <answer>, stripped
    generation = (" <|begin_of_query|> Big Fish author<|end_of_query|> <|begin_of_documents|>\n" + BIG_FISH + "\n<|end_of_documents|>"
                  "The documents say so. </think>\n\n<answer> Daniel Wallace </answer>")
    qid, question, golds, _ = QUESTIONS[0]
    pred = research_extract_answer(generation).strip()
    items = [{"id": qid, "question": question, "golden_answers": golds, "output": {"final_response": generation, "pred": pred,
                                                                                   "metric_score": flashrag_scores(pred, golds)}}]
    folder = write_run_folder(tmp_path, "bamboogle_2026_05_01_12_00_r1r", items, "dataset_name: bamboogle\n")
    _, layout, records, _, differences = _score(folder)
    assert layout.name == "research-flashrag" and differences == [] and records[0].prediction == "Daniel Wallace"
    assert records[0].turns[0].query == "Big Fish author" and records[0].turns[0].passages[0].title == "Big Fish"
    assert records[0].metrics["retrieval_hit"] == 1.0


# --- ZeroSearch: AccManager.__call__ and qa_em, written out -----------------------------------------------------------

ZS_PREFIX = ("Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get new "
             "information. After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query "
             "</search> and it will return the top searched results between <information> and </information>. You can search as "
             "many times as your want. If you find no further external knowledge needed, you can directly provide the answer "
             "inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. Question: {q}\n")


def zs_normalize(s: str | None) -> str:  # qa_em.normalize_answer: None is 'No answer'
    if s is None:
        return "No answer"
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def zs_extract(solution: str) -> str | None:  # qa_em.extract_solution L117-128: None if 0 or 1 matches
    matches = list(re.finditer(r"<answer>(.*?)</answer>", solution, re.DOTALL))
    return matches[-1].group(1).strip() if len(matches) > 1 else None


def zs_em(pred: str | None, golds: list[str]) -> float:  # qa_em.em_check's em_score, L94-101
    return float(max(int(zs_normalize(g) in zs_normalize(pred)) for g in golds))


def zerosearch_record(question: str, golds: list[str], generation: str, padding: int) -> dict:
    prompt = chat("You are a helpful assistant.", ZS_PREFIX.format(q=question))
    # AccManager.__call__ (main_ppo.py@9fb5935 L111-135): decode(valid prompt ids + valid response ids), eos kept
    response_str = prompt + generation + "<|im_end|>"
    em = zs_em(zs_extract(response_str), golds)
    return {"prompt": "<|endoftext|>" * padding + prompt, "response_str": response_str, "ground_truth": golds,
            "em_score": em, "f1_score": em}  # AccManager stores float(score_em) under f1_score


def zerosearch_items() -> list[dict]:
    generations = [
        "<think> Search it. </think>\n<search> Big Fish author </search>\n\n<information>Doc 1(Title: \"Big Fish\") Big Fish is a "
        "1998 novel by Daniel Wallace.\n</information>\n\n<think> Found. </think>\n<answer> Daniel Wallace </answer>",
        "<think> I know it. </think>\n<answer> it is Canberra </answer>",
        # no answer: extract_solution reads the prompt's own "<answer> Beijing </answer>" (the prompt's "<answer> and
        # </answer>" is the other of the two matches it needs), as ZeroSearch scored it
        "<think> Unsure. </think>\n<search> Mona Lisa painter </search>",
        "<answer> yes </answer>",
    ]
    return [zerosearch_record(q, golds, g, padding=i) for (_, q, golds, _), g, i in zip(QUESTIONS, generations, range(4))]


def test_zerosearch_validation_record_is_read_and_its_scores_reproduced(tmp_path: Path) -> None:
    items = zerosearch_items()
    path = tmp_path / "record_init.json"
    path.write_text(json.dumps(items))
    source, layout, records, recorded, differences = _score(path, task="bamboogle")
    assert layout.name == "zerosearch-validation" and differences == []
    assert [r.id for r in records] == ["0", "1", "2", "3"] and records[0].question == QUESTIONS[0][1]
    assert [r.prediction for r in records] == ["Daniel Wallace", "it is Canberra", "Beijing", "yes"]
    assert [r.prediction for r in records] == [zs_extract(i["response_str"]) for i in items]
    # the generation alone is the trajectory: the prompt (its example answer included) and its left padding are not
    assert records[1].trajectory == "<think> I know it. </think>\n<answer> it is Canberra </answer><|im_end|>"
    assert records[0].turns[0].query == "Big Fish author" and records[0].metrics["retrieval_hit"] == 1.0
    # differential: ZeroSearch's em_score is our cover_em of its prediction, item by item
    assert [r.metrics["cover_em"] for r in records] == [i["em_score"] for i in items] == [1.0, 1.0, 0.0, 1.0]
    checks = {c.name: c for c in check_recorded_metrics(source, records, recorded, differences)}
    assert (checks["em_score"].status, checks["em_score"].ours) == ("reproduced", "cover_em")
    assert (checks["f1_score"].status, checks["f1_score"].ours) == ("reproduced", "cover_em")
    assert "stores float(score_em) under 'f1_score'" in checks["f1_score"].note


def test_a_zerosearch_score_we_do_not_reproduce_is_listed_as_differing(tmp_path: Path) -> None:
    items = zerosearch_items()
    items[1]["em_score"] = 0.0
    path = tmp_path / "record_init.json"
    path.write_text(json.dumps(items))
    source, _, records, recorded, differences = _score(path, task="bamboogle")
    checks = {c.name: c for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks["em_score"].status == "differs" and "1 of 4 items differ" in checks["em_score"].note


@settings(max_examples=200, deadline=None)
@given(
    generation=st.lists(st.sampled_from(["<answer>", "</answer>", " x ", "Beijing", "<think>", "\n"]), max_size=8).map("".join),
    padding=st.integers(0, 3),
)
def test_zerosearch_reading_equals_its_writer(generation: str, padding: int) -> None:
    # for any generation: our generation is what AccManager decoded after the prompt, our prediction qa_em's extract_solution
    record = zerosearch_record("Who?", ["x"], generation, padding)
    assert zerosearch_prediction(record) == zs_extract(record["response_str"])
    response = zerosearch_response(record)
    assert response == ((generation + "<|im_end|>") if (generation + "<|im_end|>").strip() else None)


# --- StepSearch: RayPPOTrainer._validate and qa_step, written out -----------------------------------------------------

def step_normalize(s: str) -> str:  # qa_step.normalize_answer
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def step_extract(solution: str) -> str | None:  # qa_step.extract_solution L27-39: the last <answer>
    matches = list(re.finditer(r"<answer>(.*?)</answer>", solution, re.DOTALL))
    return matches[-1].group(1).strip() if matches else None


def step_f1(prediction: str | None, golds: str | list[str]) -> float:  # qa_step.query_f1_score L72-107
    if prediction is None:
        return 0.0
    pred_tokens = step_normalize(prediction).split()
    best = 0.0
    for gold in [golds] if isinstance(golds, str) else golds:
        ans_tokens = step_normalize(gold).split()
        overlap = sum((Counter(pred_tokens) & Counter(ans_tokens)).values())
        if overlap == 0:
            continue
        precision, recall = overlap / len(pred_tokens), overlap / len(ans_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return round(best, 4)


def stepsearch_items() -> list[dict]:
    # RayPPOTrainer._validate (ray_trainer.py@312a340 L611-617): {id, data_source, prompt, response, ground_truth}
    generations = [
        "<think> Search. </think>\n<search> Big Fish author </search>\n\n<information> <## Title: Big Fish ##> Big Fish is a 1998 "
        "novel by Daniel Wallace. <## Title: Canberra ##> Canberra is the capital. </information>\n\n<answer> Daniel Wallace </answer>",
        "<answer> Sydney </answer> <answer> The capital of Australia is Canberra </answer>",
        "<think> No idea. </think>",
        "<answer> Yes. </answer>",
    ]
    return [{"id": qid, "data_source": "bamboogle", "prompt": chat("You are a helpful assistant.", f"Answer it. Question: {q}\n"),
             "response": g + "<|im_end|>", "ground_truth": golds if i % 2 else golds[0]}
            for i, ((qid, q, golds, _), g) in enumerate(zip(QUESTIONS, generations))]


def test_stepsearch_predictions_are_read_and_scored_as_qa_step_does(tmp_path: Path) -> None:
    items = stepsearch_items()
    path = tmp_path / "20250601_120000.json"
    path.write_text(json.dumps(items, indent=2))
    _, layout, records, _, differences = _score(path, task="bamboogle")
    assert layout.name == "stepsearch-predictions" and differences == []
    assert [r.id for r in records] == [q[0] for q in QUESTIONS] and records[1].question == QUESTIONS[1][1]
    assert [r.prediction for r in records] == [step_extract(i["response"]) for i in items]
    # differential: StepSearch's answer_correct (query_f1_score, 4 places) is our f1 of its prediction
    assert [round(r.metrics["f1"], 4) for r in records] == [step_f1(step_extract(i["response"]), i["ground_truth"]) for i in items]
    assert [round(r.metrics["f1"], 4) for r in records] == [1.0, 0.3333, 0.0, 1.0]
    assert [p.title for p in records[0].turns[0].passages] == ["Big Fish", "Canberra"] and records[0].metrics["retrieval_hit"] == 1.0


# --- R1-Searcher's eval script: passages split as it writes them -----------------------------------------------------

def test_r1_searcher_eval_documents_are_split_into_passages(tmp_path: Path) -> None:
    path = tmp_path / "bamboogle-ckpt_base_temp0.0_typeNone.jsonl"
    rows = r1_searcher_rows("<|end_of_query|>", with_idx=False)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, _, records, _, differences = _score(path)
    (passage,) = records[0].turns[0].passages
    assert differences == [] and passage.title == "Big Fish" and "Daniel Wallace" in passage.text
    assert records[0].metrics["retrieval_hit"] == 1.0 == flashrag_em(" Daniel Wallace", ["Daniel Wallace"])
    # "(i)" + the document + "\n" per document, i = 1, 2, …: a line of a document that starts with another number stays in it
    content = '\n(1)"A"\ntext a\n(7) not a marker\n(2)"B"\ntext b\n'
    assert [(p.title, p.text) for p in r1_searcher_passages(content)] == [("A", "text a\n(7) not a marker"), ("B", "text b")]


# --- Every layout cites where its writer was read, with lines ---------------------------------------------------------
# (the read tool gives text without line numbers: the lines were counted on the text it gave, at the commit named)

@pytest.mark.parametrize("name", list(LAYOUTS))
def test_every_layout_cites_its_writer_with_commit_and_lines(name: str) -> None:
    writer = LAYOUTS[name].writer
    assert re.search(r"@[0-9a-f]{7}\b", writer), f"{name}: no commit in {writer!r}"
    assert re.search(r"\bL\d+(-\d+)?\b", writer), f"{name}: no line range in {writer!r}"
    assert "L{" not in writer, f"{name}: an unfilled line placeholder in {writer!r}"
