"""`evalsuite score` on a run folder of every FlashRAG pipeline and on the Search-R1 family's eval-script results.

Each fixture is built from the shape its writer produces, not from a file in the wild; the writer is cited beside it
(FlashRAG at the commits the index holds: `flashrag/pipeline/pipeline.py` 6195456, `active_pipeline.py` and
`branching_pipeline.py` 16074be, `reasoning_pipeline.py` 8e16b75, `flashrag/utils` `selfask_pred_parse` /
`ircot_pred_parse`, `flashrag/dataset/dataset.py` 8e16b75 `Dataset.save`, `flashrag/evaluator/evaluator.py` 785a901
`save_metric_score`). Each folder's `metric_score.txt` and per-item `metric_score` are computed here with FlashRAG's
own metric definitions (`flashrag/evaluator/metrics.py` ddaeb3c: `ExactMatch.calculate_em`, `Sub_ExactMatch.calculate_sub_em`,
`F1_Score.token_level_scores`), so a pipeline whose averages we reproduce is a differential test of our EM/acc/F1.
"""

from __future__ import annotations

import json
import re
import string
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.agent.method import get_method
from evalsuite.runs.flashrag import (
    ResultItem,
    compare_averages,
    extract_item,
    response_of,
    compare_with_recorded,
    read_result_source,
    records_from_source,
    resolve_layout,
)
from evalsuite.runs.writer_layouts import detect_layout, parse_fields
from evalsuite.runs.recorded import check_recorded_metrics
from evalsuite.scoring import score_record
from tests.parsing.flashrag_folders import write_run_folder

EVALSUITE = [sys.executable, "-m", "evalsuite"]


# --- FlashRAG's metric definitions, written out from flashrag/evaluator/metrics.py and evaluator/utils.py ---------

def flashrag_normalize(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def flashrag_em(pred: str, golds: list[str]) -> float:  # ExactMatch.calculate_em
    return float(any(flashrag_normalize(g) == flashrag_normalize(pred) for g in golds))


def flashrag_acc(pred: str, golds: list[str]) -> float:  # Sub_ExactMatch.calculate_sub_em
    return float(any(flashrag_normalize(g) in flashrag_normalize(pred) for g in golds))


def flashrag_token_scores(pred: str, golds: list[str]) -> dict[str, float]:  # F1_Score.token_level_scores
    final = {"f1": 0.0, "precision": 0.0, "recall": 0.0}
    for gold in golds:
        p, g = flashrag_normalize(pred), flashrag_normalize(gold)
        if p in ("yes", "no", "noanswer") and p != g:
            continue
        if g in ("yes", "no", "noanswer") and p != g:
            continue
        same = sum((Counter(p.split()) & Counter(g.split())).values())
        if same == 0:
            continue
        precision, recall = same / len(p.split()), same / len(g.split())
        scores = {"f1": 2 * precision * recall / (precision + recall), "precision": precision, "recall": recall}
        final = {k: max(final[k], scores[k]) for k in final}
    return final


def flashrag_scores(pred: str, golds: list[str]) -> dict[str, float]:
    tokens = flashrag_token_scores(pred, golds)
    return {"em": flashrag_em(pred, golds), "f1": tokens["f1"], "acc": flashrag_acc(pred, golds)}


# --- Items: a question, its golds, and what the model generated ------------------------------------------------

QUESTIONS = [
    ("test_0", "Who wrote the novel Big Fish?", ["Daniel Wallace"], "Daniel Wallace"),
    ("test_1", "What is the capital city of Australia?", ["Canberra"], "The capital of Australia is Canberra"),
    ("test_2", "Who painted the Mona Lisa?", ["Leonardo da Vinci"], "Michelangelo Buonarroti"),
    ("test_3", "Is Paris in France?", ["yes"], "yes"),
]
DOCS = [{"id": "9", "contents": '"Big Fish"\nBig Fish is a 1998 novel by Daniel Wallace.'}]


def chat_prompt(user: str) -> str:
    # PromptTemplate.get_string with a chat model: the chat template up to the assistant header, no response.
    return f"<|im_start|>system\nAnswer the question.<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def sequential(i: int, q: str, answer: str) -> dict:
    # pipeline.py@6195456 SequentialPipeline.run L82-130: update_output("retrieval_result"), ("prompt"), ("pred")
    return {"retrieval_result": DOCS, "prompt": chat_prompt(f"Question: {q}"), "pred": answer}


def conditional(i: int, q: str, answer: str) -> dict:
    # pipeline.py@6195456 ConditionalPipeline.run L161-179: judge_result per item; True items ran SequentialPipeline.run, False ones naive_run
    if i % 2:
        return {"judge_result": False, "prompt": chat_prompt(f"Question: {q}"), "pred": answer}
    return {"judge_result": True, **sequential(i, q, answer)}


def adaptive(i: int, q: str, answer: str) -> dict:
    # pipeline.py@6195456 AdaptivePipeline.run L231-253: "A" naive_run, "B" SequentialPipeline.run, "C" IRCOTPipeline.run (+ ircot_pred_parse)
    symbol = "ABC"[i % 3]
    if symbol == "C":
        return {"judge_result": "C", **ircot(i, q, answer)}
    if symbol == "B":
        return {"judge_result": "B", **sequential(i, q, answer)}
    return {"judge_result": "A", "prompt": chat_prompt(f"Question: {q}"), "pred": answer}


def replug(i: int, q: str, answer: str) -> dict:
    # branching_pipeline.py@16074be REPLUGPipeline.run L32-60: retrieval_result, doc_scores, pred
    return {"retrieval_result": DOCS, "doc_scores": [81.5], "pred": answer}


def sure(i: int, q: str, answer: str) -> dict:
    # branching_pipeline.py@16074be SuRePipeline.run L167-250: candidates, all_summary, val_scores, ranking_scores; pred = best candidate
    return {"retrieval_result": DOCS, "candidates": [answer, "Lyon"], "all_summary": ["s1", "s2"], "val_scores": [1, 0],
            "ranking_scores": [1.0, 0.0], "pred": answer}


def iterative(i: int, q: str, answer: str) -> dict:
    # active_pipeline.py@16074be IterativePipeline.run L19-52: retrieval_result_iter_k, prompt_iter_k, pred_iter_k; pred = last pred_iter
    output: dict = {}
    for k in range(3):
        output |= {f"retrieval_result_iter_{k}": DOCS, f"prompt_iter_{k}": chat_prompt(q), f"pred_iter_{k}": answer if k == 2 else "draft"}
    return output | {"retrieval_result": DOCS, "pred": answer}


def self_rag(i: int, q: str, answer: str) -> dict:
    # active_pipeline.py@16074be SelfRAGPipeline.run_batch_pred L618-675: retrieval_result, retrieval_flag, prompt (a list), critic_result, pred
    prompt = f"### Instruction:\nAnswer the following question, give me a short answer.\n\n## Input:\n\n{q}\n\n### Response:\n"
    return {"retrieval_result": DOCS, "retrieval_flag": True, "prompt": [prompt + "[Retrieval]<paragraph>x</paragraph>"],
            "critic_result": {"retrieval_0": {"pred": f"[Relevant]{answer}[Utility:5]", "score": 1.2}}, "pred": answer}


def flare(i: int, q: str, answer: str) -> dict:
    # active_pipeline.py@16074be FLAREPipeline.run_item L733-778: judge_result_iter{k}, gen_iter_{k} (when retrieving), retrieval_result, pred
    return {"judge_result_iter0": False, "retrieval_result": DOCS, "gen_iter_0": answer, "judge_result_iter1": True, "pred": answer}


def self_ask(i: int, q: str, answer: str) -> dict:
    # active_pipeline.py@16074be SelfAskPipeline.run_item L823-893, then selfask_pred_parse (run L895-900): raw_pred = the chain, pred = the final answer line
    chain = f"Context1: x\n\nQuesiton: {q}\nAre follow up questions needed here: No.\nSo the final answer is: {answer}"
    return {"intermediate_output_iter0": f"So the final answer is: {answer}", "retrieval_result": DOCS, "raw_pred": chain, "pred": answer}


def ircot(i: int, q: str, answer: str) -> dict:
    # active_pipeline.py@16074be IRCOTPipeline.run_item L924-973, then ircot_pred_parse (run L975-980): raw_pred = thoughts joined, pred = after "So the answer is:"
    thought = f"The answer follows from the documents. So the answer is: {answer}"
    return {"intermediate_output_iter1": {"input_prompt": f"Question: {q}\nThought:", "new_thought": thought},
            "retrieval_result": DOCS, "raw_pred": thought, "pred": answer}


def rqrag(i: int, q: str, answer: str) -> dict:
    # active_pipeline.py RQRAGPipeline.run (select_best_path_single_turn, generate_tree_of_thoughts_batch): paths = the best
    # path, pred = its final_answer. Read from a FlashRAG-derived copy the index holds (its FlashRAG commit 16074be of the
    # file predates the class; pipeline/__init__.py@f792919 L4 imports it and run_exp.py rqrag() runs it).
    path = {"prompt": f"<s><|user|>\n{q}</s>\n<|assistant|>\n[A_Response]{answer}[EOS]", "depth": 1, "done": True,
            "final_answer": answer, "confidence": 0.9}
    return {"paths": path, "pred": answer}


def reasoning(i: int, q: str, answer: str) -> dict:
    # reasoning_pipeline.py@8e16b75 ReasoningPipeline.run L82-145: prompt grows by each step (step_output.strip()) and the
    # documents string (_retrieved_docs_to_string L70-80); finish_flag, finish_reason, retrieval_results {step: {query, docs}}, retrieved_times;
    # pred = extract_between(<answer>, </answer>). json turns the int step keys into strings.
    user = f"The User asks a question, and the Assistant solves it.\n\nUser:{q}\nAssistant: <think>"
    steps = ("I should search. <|begin_of_query|> Big Fish author <|end_of_query|>"
             "\n\n<|begin_of_documents|>\n(1)Title: \"Big Fish\" Text: Big Fish is a 1998 novel by Daniel Wallace.\n\n<|end_of_documents|>\n\n"
             f"The documents answer it.</think>\n\n<answer>{answer}</answer>")
    return {"prompt": chat_prompt(user) + steps, "finish_flag": True, "retrieval_results": {"0": {"query": "Big Fish author", "docs": DOCS}},
            "retrieved_times": 1, "finish_reason": "Finished", "pred": answer}


PIPELINES: dict[str, tuple[str, Callable[[int, str, str], dict]]] = {
    # layout name: (save_note from examples/methods/run_exp.py, output writer)
    "sequential": ("naive", sequential),
    "conditional": ("skr", conditional),
    "adaptive": ("adaptive-rag", adaptive),
    "replug": ("replug", replug),
    "sure": ("SuRe", sure),
    "iterative": ("iter-retgen", iterative),
    "self-rag": ("self-rag", self_rag),
    "flare": ("flare", flare),
    "self-ask": ("Ret-Robust", self_ask),
    "ircot": ("ircot", ircot),
    "rqrag": ("rqrag", rqrag),
    "reasoning": ("r1-searcher", reasoning),
}


def flashrag_folder(root: Path, pipeline: str, save_note: str | None = None, items: list[dict] | None = None) -> Path:
    """A run folder of `pipeline` under FlashRAG's folder name `<dataset>_<%Y_%m_%d_%H_%M>_<save_note>`, each item's
    metric_score computed with FlashRAG's definitions above."""
    note, writer = PIPELINES[pipeline]
    note = note if save_note is None else save_note
    if items is None:
        items = []
        for i, (qid, question, golds, answer) in enumerate(QUESTIONS):
            output = writer(i, question, answer)
            output["metric_score"] = flashrag_scores(output["pred"], golds)
            items.append({"id": qid, "question": question, "golden_answers": golds, "metadata": {}, "output": output})
    config = f"dataset_name: bamboogle\nsave_note: {note}\nmetrics:\n- em\n- f1\n- acc\n"
    return write_run_folder(root, f"bamboogle_2026_05_01_12_00_{note}", items, config)


def _score(path: Path, task: str | None = None, **options):
    source = read_result_source(path)
    layout = resolve_layout(source, **options)
    task, records, recorded = records_from_source(source, task, get_method("search-r1").parse, layout, lambda m: get_method(m).parse)
    for record in records:
        record.metrics = score_record(record)
    differences = compare_with_recorded(records, recorded) + compare_averages(source, records, recorded)
    return source, layout, records, recorded, differences


@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_every_flashrag_pipeline_reproduces_its_metric_score(pipeline: str, tmp_path: Path) -> None:
    folder = flashrag_folder(tmp_path, pipeline)
    source, layout, records, recorded, differences = _score(folder)
    assert layout.name == pipeline
    assert differences == []
    # the prediction is the `pred` FlashRAG evaluated, whatever the prompt field holds
    assert [r.prediction for r in records] == [answer for *_, answer in QUESTIONS]
    # hand-computed: em 1,0,0,1; acc 1,1,0,1; f1 of "capital of australia is canberra" (5 tokens) vs "canberra": 2*(1/5)/(6/5) = 1/3
    assert [r.metrics["em"] for r in records] == [1.0, 0.0, 0.0, 1.0]
    assert [r.metrics["cover_em"] for r in records] == [1.0, 1.0, 0.0, 1.0]
    assert records[1].metrics["f1"] == pytest.approx(1 / 3)
    checks = {c.name: c.status for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks == {"em": "reproduced", "f1": "reproduced", "acc": "reproduced"}


@pytest.mark.parametrize("pipeline", list(PIPELINES))
def test_each_pipeline_is_recognised_from_its_keys_alone(pipeline: str, tmp_path: Path) -> None:
    # a save_note nobody registered: the output keys still name the writer
    folder = flashrag_folder(tmp_path, pipeline, save_note="my-run")
    assert _score(folder)[1].name == pipeline


def test_sequential_chat_prompt_is_never_read_as_the_response(tmp_path: Path) -> None:
    # issue #27: the prompt ends at the assistant header; the generation is output.pred
    _, _, records, _, differences = _score(flashrag_folder(tmp_path, "sequential"))
    assert records[0].trajectory == "Daniel Wallace" and records[0].prediction == "Daniel Wallace" and differences == []


def test_a_prompt_ending_at_the_assistant_header_holds_no_response() -> None:
    question = QUESTIONS[0][1]
    assert response_of({"prompt": chat_prompt(f"Question: {question}")}, question) is None
    # without a chat template (a base model): the template's own tail after the question is prompt too
    assert response_of({"prompt": f"The User asks a question.\nUser:{question}\nAssistant: <think>"}, question) is None
    assert response_of({"prompt": f"User:{question}\nAssistant: <think> I know it.</think><answer> x </answer>"}, question) == " I know it.</think><answer> x </answer>"
    assert response_of({"prompt": chat_prompt(f"Question: {question}") + "<answer> Daniel Wallace </answer>"}, question) == "<answer> Daniel Wallace </answer>"
    # a reasoning record whose prompt holds no step yet: no response, the prediction is still its pred, and no turns are invented
    output = {**reasoning(0, question, "No valid answer found"), "prompt": chat_prompt(f"User:{question}\nAssistant: <think>")}
    record = {"id": "test_0", "question": question, "golden_answers": ["Daniel Wallace"], "output": output}
    item = extract_item(ResultItem("mem: item 0", record), detect_layout(record), 0)
    assert (item.prediction, item.response) == ("No valid answer found", None)


def test_a_folder_whose_outputs_hold_only_pred_and_metric_score_is_read(tmp_path: Path) -> None:
    # issue #27: such folders were refused for lacking output.final_response, a field FlashRAG never writes for them
    items = [{"id": qid, "question": q, "golden_answers": golds, "output": {"pred": answer, "metric_score": flashrag_scores(answer, golds)}}
             for qid, q, golds, answer in QUESTIONS]
    source, layout, records, recorded, differences = _score(flashrag_folder(tmp_path, "sequential", save_note="my-run", items=items))
    assert layout.name == "sequential" and differences == [] and source.averages["em"] == 0.5
    assert sum(r.metrics["em"] for r in records) / len(records) == 0.5 and records[0].trajectory == "Daniel Wallace"


def test_raw_generations_are_parsed_into_turns(tmp_path: Path) -> None:
    _, _, records, _, _ = _score(flashrag_folder(tmp_path, "reasoning"))
    turns = records[0].turns
    assert records[0].trajectory.startswith("I should search.")
    assert turns[0].query == "Big Fish author" and turns[0].passages and "Daniel Wallace" in turns[0].passages[0].text
    assert records[0].metadata["parsed_answer"] == "Daniel Wallace" and records[0].metrics["retrieval_hit"] == 1.0
    _, _, records, _, _ = _score(flashrag_folder(tmp_path, "self-ask"))
    assert "So the final answer is: Daniel Wallace" in records[0].trajectory  # raw_pred, not pred


@settings(max_examples=200, deadline=None)
@given(
    pipeline=st.sampled_from(list(PIPELINES)),
    answer=st.text(max_size=30) | st.sampled_from(["", "<|im_start|>assistant\n", "<answer> x </answer>", "So the answer is: y", "No valid answer found"]),
)
def test_the_prediction_is_the_pred_flashrag_evaluated_whatever_it_holds(pipeline: str, answer: str) -> None:
    record = {"id": "test_9", "question": QUESTIONS[0][1], "golden_answers": ["g"], "output": PIPELINES[pipeline][1](0, QUESTIONS[0][1], answer)}
    layout = detect_layout(record)
    assert layout is not None and layout.name == pipeline
    assert extract_item(ResultItem("mem: item 0", record), layout, 0).prediction == answer


@settings(max_examples=300, deadline=None)
@given(
    pred=st.text(alphabet=st.sampled_from(list("ab cdeThe,.!-yesno")), max_size=20),
    golds=st.lists(st.text(alphabet=st.sampled_from(list("ab cdeThe,.!-yesno")), max_size=20), min_size=1, max_size=3),
)
def test_our_answer_metrics_equal_flashrag_definitions(pred: str, golds: list[str]) -> None:
    from evalsuite.metrics.answer import cover_exact_match, exact_match, token_scores

    theirs = flashrag_token_scores(pred, golds)
    assert exact_match(pred, golds) == flashrag_em(pred, golds)
    assert cover_exact_match(pred, golds) == flashrag_acc(pred, golds)
    assert token_scores(pred, golds) == pytest.approx(theirs)


# --- The Search-R1 family's eval scripts -----------------------------------------------------------------------------

def r1_searcher_rows(close_query: str, with_idx: bool) -> list[dict]:
    # R1-Searcher's eval script main() (evaluation/eval_search_loacl.py lineage; the index holds an unnamed copy and
    # WangYuzzu/GenR1-Searcher evaluation/eval_search_local.py@ccac151 main() L93-386, records L198-209, L281-291,
    # documents L309-325): a query step stores generated_text.strip() + close tag +
    # "\n\n<|begin_of_documents|>\n" + "(i)doc\n" per document + close documents tag + "\n\n"; the answer step stores the
    # text + "</answer>" and pred_ans = text.split("<answer>")[-1].split("</answer>")[0]; a step with neither is
    # "shot_down" with pred_ans "I don't know." and no gen_text_store. The GenR1-Searcher copy adds idx and closes with </|...|>.
    close_docs = close_query.replace("query", "documents")
    gen = (f"I should search. <|begin_of_query|> Big Fish author{close_query}\n\n<|begin_of_documents|>\n(1)\"Big Fish\"\nBig Fish is a "
           f"1998 novel by Daniel Wallace.\n{close_docs}\n\nThe documents answer it. </think>\n\n<answer> Daniel Wallace</answer>")
    rows = [
        {"question": QUESTIONS[0][1], "answer": "Daniel Wallace", "pred_ans": " Daniel Wallace", "stop_reason_final": "finished", "gen_text_store": gen},
        {"question": QUESTIONS[2][1], "answer": "Leonardo da Vinci", "stop_reason_final": "shot_down", "pred_ans": "I don't know."},
    ]
    return [{"idx": i, **row} for i, row in enumerate(rows)] if with_idx else rows


@pytest.mark.parametrize(("close_query", "with_idx"), [("<|end_of_query|>", False), ("</|end_of_query|>", True)])
def test_r1_searcher_eval_script_results(tmp_path: Path, close_query: str, with_idx: bool) -> None:
    path = tmp_path / "bamboogle-ckpt_base_temp0.0_typeNone.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in r1_searcher_rows(close_query, with_idx)))
    source, layout, records, recorded, differences = _score(path)
    assert layout.name == "r1-searcher-eval" and differences == []
    assert [r.id for r in records] == ["0", "1"] and [r.prediction for r in records] == [" Daniel Wallace", "I don't know."]
    # FlashRAG's definitions on the same predictions: flashrag_em(" Daniel Wallace", ["Daniel Wallace"]) == 1
    assert [r.metrics["em"] for r in records] == [flashrag_em(" Daniel Wallace", ["Daniel Wallace"]), flashrag_em("I don't know.", ["Leonardo da Vinci"])]
    assert records[0].stop_reason == "finished" and records[1].trajectory == "" and records[1].turns == []
    assert records[0].metadata["parsed_answer"] == "Daniel Wallace"
    if close_query == "<|end_of_query|>":
        # R1-Searcher's own tags parse into a search turn; its documents ("(i)" + the retrieval server's string) are
        # split as the script wrote them (layouts.r1_searcher_passages), so the retrieval hit is computed.
        assert records[0].turns[0].query == "Big Fish author" and records[0].turns[0].passages[0].title == "Big Fish"
        assert records[0].metrics["retrieval_hit"] == 1.0


def test_autorefine_results_read_by_its_llm_judge(tmp_path: Path) -> None:
    # AutoRefine cmd/llm_judge.py@0d79ca9 reads {response, ground_truth, data_source} (L20-21), takes extract_answer
    # L32-34 (the last <answer>, else the whole response, L45-47) and adds llm_score (score_item L40-71); we read the same record and the judge's verdict is not ours.
    rows = [
        {"response": f"Question: {QUESTIONS[0][1]}\n<think> x </think><search> Big Fish </search><answer> Daniel Wallace </answer>",
         "ground_truth": {"target": ["Daniel Wallace"]}, "data_source": "bamboogle", "llm_score": True},
        {"response": "<answer> Paris </answer>", "ground_truth": ["Canberra"], "data_source": "bamboogle", "llm_score": False},
    ]
    path = tmp_path / "bamboogle_autorefine-score.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    source, layout, records, recorded, differences = _score(path)
    assert layout.name == "autorefine-results"
    assert [r.prediction for r in records] == ["Daniel Wallace", "Paris"] and [r.id for r in records] == ["0", "1"]
    assert [r.metrics["em"] for r in records] == [flashrag_em("Daniel Wallace", ["Daniel Wallace"]), 0.0]
    assert records[0].question == QUESTIONS[0][1] and records[1].question == ""  # extract_question's pattern, else none
    (judge,) = check_recorded_metrics(source, records, recorded, differences)
    # issue 38: a judge's verdict is listed as a judgment we do not recompute (before: "not ours")
    assert (judge.name, judge.status) == ("llm_score", "judgment") and "LLM judge" in judge.note
    assert "a judgment we do not recompute" in judge.note


# --- --fields, --check-recorded and bad input ------------------------------------------------------------------------

def test_fields_mapping_reads_any_jsonl(tmp_path: Path) -> None:
    rows = [{"qid": "q1", "q": QUESTIONS[0][1], "gold": {"answers": ["Daniel Wallace"]}, "out": {"final": "Daniel Wallace"}},
            {"qid": "q2", "q": QUESTIONS[1][1], "gold": {"answers": ["Canberra"]}, "out": {"final": "Sydney"}}]
    path = tmp_path / "bamboogle_mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, layout, records, _, _ = _score(path, fields="prediction=out.final,golds=gold.answers,id=qid,question=q")
    assert layout.name == "fields" and [(r.id, r.prediction, r.metrics["em"]) for r in records] == [("q1", "Daniel Wallace", 1.0), ("q2", "Sydney", 0.0)]
    # the writer's own per-item scores, mapped too, are checked: q2's em recorded as 1 is a difference nothing explains
    rows[0]["out"]["scores"], rows[1]["out"]["scores"] = {"em": 1.0}, {"em": 1.0}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    source, _, records, recorded, differences = _score(path, fields="prediction=out.final,golds=gold.answers,id=qid,question=q,scores=out.scores")
    assert [(d.item, d.what, d.explanation) for d in differences] == [("q2", "em", None)]
    assert [(c.name, c.status) for c in check_recorded_metrics(source, records, recorded, differences)] == [("em", "differs")]
    with pytest.raises(DataError) as error:
        _score(path, fields="prediction=out.answer,golds=gold.answers,id=qid,question=q")
    message = error.value.message
    assert "bamboogle_mine.jsonl:1 (id 'q1'): missing 'out.answer'" in message and "the record's out has: final" in message
    assert "--fields prediction=PATH" in error.value.hint and "\n" not in message
    with pytest.raises(EvalsuiteError, match="expected NAME=PATH"):
        parse_fields("prediction")


def test_unknown_pipeline_folder_is_one_line(tmp_path: Path) -> None:
    items = [{"id": "test_0", "question": QUESTIONS[0][1], "golden_answers": ["Daniel Wallace"],
              "output": {"pred": "Daniel Wallace", "my_tree": {}, "metric_score": {"em": 1.0, "f1": 1.0, "acc": 1.0}}}]
    folder = flashrag_folder(tmp_path, "sequential", save_note="my-method", items=items)
    # issue 38: an extra key never makes a known layout unrecognisable: the pipeline's `pred` is what FlashRAG's
    # Evaluator scored, so the folder is read as the sequential layout and the extra key is listed as not read
    source, layout, records, recorded, differences = _score(folder)
    assert layout.name == "sequential" and records[0].prediction == "Daniel Wallace"
    checks = {c.name: c for c in check_recorded_metrics(source, records, recorded, differences)}
    assert checks["output.my_tree"].status == "not read" and "on 1 items" in checks["output.my_tree"].note
    # a record no layout's identifying keys fit is one line naming its keys and the nearest layout
    items[0]["output"] = {"my_answer": "Daniel Wallace", "my_tree": {}, "metric_score": {"em": 1.0, "f1": 1.0, "acc": 1.0}}
    (tmp_path / "b").mkdir()
    folder = flashrag_folder(tmp_path / "b", "sequential", save_note="my-method", items=items)
    with pytest.raises(DataError) as error:
        _score(folder)
    assert f"{folder}: unknown pipeline (save_note 'my-method')" in error.value.message and "my_tree" in error.value.message
    assert "nearest layout sequential (lacks output.pred)" in error.value.message
    assert "--pipeline NAME" in error.value.hint and "\n" not in error.value.message


def test_record_without_prediction_is_one_line(tmp_path: Path) -> None:
    items = [{"id": "test_0", "question": QUESTIONS[0][1], "golden_answers": ["Daniel Wallace"], "output": {"retrieval_result": DOCS}}]
    folder = flashrag_folder(tmp_path, "sequential", items=[{**items[0], "output": {**items[0]["output"], "metric_score": {"em": 0.0, "f1": 0.0, "acc": 0.0}}}])
    with pytest.raises(DataError) as error:
        _score(folder, pipeline="sequential")
    assert "intermediate_data.json: item 0 (id 'test_0'): missing 'output.pred' (the prediction field of layout sequential)" in error.value.message
    assert "output has: retrieval_result, metric_score" in error.value.message and "--fields prediction=PATH" in error.value.hint


def test_check_recorded_lists_every_recorded_metric(tmp_path: Path) -> None:
    folder = flashrag_folder(tmp_path, "sequential")
    with (folder / "metric_score.txt").open("a") as f:
        f.write("retrieval_recall_top5: 0.75\nmystery_metric: 0.5\nlist_metric: [1, 2]\n")
    result = subprocess.run([*EVALSUITE, "score", str(folder), "--check-recorded", "-o", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=300, env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "em [metric_score.txt and per item]: reproduced (ours: em)" in out
    assert "acc [metric_score.txt and per item]: reproduced (ours: cover_em)" in out
    assert "retrieval_recall_top5 [metric_score.txt]: not ours: FlashRAG Retrieval_Recall" in out
    assert "mystery_metric [metric_score.txt]: not ours: a metric we do not know; not checked" in out
    assert "list_metric [metric_score.txt]: not ours" in out
    assert "(sequential)" in out
    result = subprocess.run([*EVALSUITE, "score", str(folder), "--json", "-o", str(tmp_path / "out2")],
                            capture_output=True, text=True, timeout=300, env={"PATH": "/usr/bin:/bin"})
    (scored,) = json.loads(result.stdout)["inputs"]
    assert scored["layout"] == "sequential" and scored["differences"] == []
    statuses = {c["name"]: (c["status"], c["ours"]) for c in scored["recorded_metrics"]}
    assert statuses["acc"] == ("reproduced", "cover_em") and statuses["mystery_metric"] == ("not ours", None)


def test_score_command_reproduces_metric_score_of_every_pipeline_folder(tmp_path: Path) -> None:
    folders = [str(flashrag_folder(tmp_path, pipeline)) for pipeline in PIPELINES]
    result = subprocess.run([*EVALSUITE, "score", *folders, "--check-recorded", "-o", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=300, env={"COLUMNS": "250", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stdout + result.stderr
    for pipeline, (note, _) in PIPELINES.items():
        name = f"bamboogle_2026_05_01_12_00_{note}"
        # issue 38: ✓ only for what was compared, with its counts; these pipelines record pred but no trajectory
        # to check it against, so the scores and averages are what is compared
        line = next(line for line in result.stdout.splitlines() if line.startswith(f"✓ {name} ({pipeline}): "))
        assert "per-item scores" in line and "averages" in line and "differs" not in line, line
        assert f"{name}: every metric and judgment it recorded:" in result.stdout


def test_search_r1_retrieval_hit_shares_our_name_not_our_definition(trajectories_dir: Path, tmp_path: Path) -> None:
    # Real Search-R1 outputs (reason_over_search): search_r1_retrieval_hit is recorded only where search_r1_format_valid.
    (path,) = trajectories_dir.glob("bamboogle_2026_04_24_16_17*.json")
    source, _, records, recorded, differences = _score(path)
    checks = {c.name: c for c in check_recorded_metrics(source, records, recorded, differences)}
    hit = checks["search_r1_retrieval_hit"]
    assert hit.status == "differs" and hit.ours == "retrieval_hit" and "shares the name of our retrieval_hit but not its definition" in hit.note
    ours = sum(r.metrics["retrieval_hit"] for r in records)
    assert ours == 47 and f"{int(ours)} of 125 items differ, every one explained by it" in hit.note  # the file records 0 hits, no valid format
    assert checks["search_r1_reward"].status == "not ours" and checks["em"].status == "reproduced"
