"""The search-r1 method against Search-R1's own text: prompt, action parsing, observation, invalid-action message."""

from __future__ import annotations

import json
from dataclasses import dataclass

from evalsuite.agent.method import get_method
from evalsuite.methods.search_r1.method import SearchR1
from evalsuite.protocol.search_r1 import INVALID_ACTION


@dataclass
class H:
    doc_id: str
    contents: str
    score: float = 1.0


def qwen_chatml(messages):
    out = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    for m in messages:
        out += f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n"
    return out + "<|im_start|>assistant\n"


def test_instruct_prompt_equals_every_recorded_nq_prompt(trajectories_dir):
    method = SearchR1()
    items = json.loads((trajectories_dir / "nq_2026_04_28_16_43_search_r1_base_seed1.json").read_text())
    built = [method.prompt(item["question"].strip() + "?", "instruct", qwen_chatml) for item in items]
    assert built == [item["output"]["query"] for item in items]


def test_base_prompt_is_the_nq_search_prefix():
    expected = (
        "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get new"
        " information. After reasoning, if you find you lack some knowledge, you can call a search engine by <search>"
        " query </search> and it will return the top searched results between <information> and </information>. You can"
        " search as many times as your want. If you find no further external knowledge needed, you can directly provide"
        " the answer inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing"
        " </answer>. Question: Who wrote Big Fish?\n"
    )
    assert SearchR1().prompt("Who wrote Big Fish?", "base", lambda m: None) == expected


def test_invalid_action_message_is_verbatim():
    assert INVALID_ACTION == (
        "\nMy previous action is invalid. If I want to search, I should put the query between <search> and </search>."
        " If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
    )


def test_observation_numbers_docs_and_keeps_the_quoted_title():
    method = SearchR1()
    hits = [H("1", '"Big Fish"\nBig Fish is a 1998 novel'), H("2", '"Daniel Wallace"\nline one\nline two')]
    obs = method.observation(method.parse_action("<search> q </search>"), [hits], lambda t: t)
    assert obs == (
        '\n\n<information>Doc 1(Title: "Big Fish") Big Fish is a 1998 novel\n'
        'Doc 2(Title: "Daniel Wallace") line one\nline two</information>\n\n'
    )


def test_parse_action_takes_the_first_complete_block():
    method = SearchR1()
    assert method.parse_action("<think>x</think> <search>  capital of France \n</search>").queries == ["capital of France"]
    assert method.parse_action("<answer> Paris </answer>").answer == "Paris"
    assert method.parse_action("<search> a").kind == "invalid"
    assert method.parse_action("no tags at all").kind == "invalid"
    assert method.parse_action("<answer>A</answer><search>q</search>").kind == "answer"


def test_postprocess_cuts_after_search_before_answer_like_search_r1():
    method = SearchR1()
    assert method.postprocess("<search> q </search> trailing <answer>x</answer>") == "<search> q </search>"
    assert method.postprocess("<answer> x </answer> more") == "<answer> x </answer>"
    assert method.postprocess("unterminated <search> q") == "unterminated <search> q"


def test_auto_style_uses_the_chat_template_only_when_the_model_has_one():
    method = get_method("search-r1")
    assert method.resolve_style("auto", has_chat_template=True) == "instruct"
    assert method.resolve_style("auto", has_chat_template=False) == "base"
    assert method.template_hash("base") != method.template_hash("base-1shot")
