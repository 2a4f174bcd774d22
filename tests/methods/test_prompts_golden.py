"""Prompt texts equal the papers' (where printed) and the published code's (FlashRAG, Search-o1)."""

from __future__ import annotations

import pytest

from evalsuite.baselines import direct, ircot, naive_rag, search_o1
from evalsuite.agent.method import get_method, list_methods
from evalsuite.methods.oases import method as oases
from evalsuite.methods.r1_searcher import method as r1_searcher
from evalsuite.methods.search_p1 import method as search_p1
from evalsuite.methods.subsearch import method as subsearch
from evalsuite.errors import EvalsuiteError
from tests.methods.conftest import seed_text

NO_CHAT = lambda messages: None  # noqa: E731  (a model without a chat template)


def chatml(messages):
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


def test_subsearch_template_is_table_1_of_the_paper():
    lines = seed_text("001").split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith("Answer the given question."))
    last = next(i for i, line in enumerate(lines) if line.startswith("Question: {question}"))
    assert lines[last + 1].startswith("Table 1: Prompt template for SubSearch")
    assert subsearch.TEMPLATE == "\n".join(lines[first : last + 1])


def test_subsearch_prompt_appends_the_question_and_a_newline():
    prompt = get_method("subsearch").prompt("Who wrote Big Fish?", "base", NO_CHAT)
    assert prompt.endswith("</answer> .\nQuestion: Who wrote Big Fish?\n")
    assert prompt.startswith("Answer the given question. You must conduct reasoning")


def test_oases_prompts_are_table_6_of_the_paper():
    seed = seed_text("003")
    assert oases.SEARCH_PROMPT + "\n" in seed
    evaluation = f"Question-Only Evaluation {oases.QUESTION_ONLY_EVAL_PROMPT} Context-Aware Evaluation {oases.CONTEXT_AWARE_EVAL_PROMPT}\n"
    assert evaluation in seed


def test_oases_instruct_prompt_puts_table_6_in_the_system_message():
    prompt = get_method("oases").prompt("Where did the director of film Legally Blonde study?", "instruct", chatml)
    assert prompt == (
        f"<|im_start|>system\n{oases.SEARCH_PROMPT}<|im_end|>\n"
        "<|im_start|>user\nQuestion: Where did the director of film Legally Blonde study?\n<|im_end|>\n<|im_start|>assistant\n"
    )


def test_oases_evaluator_messages_are_question_only_without_context():
    assert oases.eval_messages("Q?", "")[0]["content"] == oases.QUESTION_ONLY_EVAL_PROMPT
    context_aware = oases.eval_messages("Q?", "(Don Roos) a film director")
    assert context_aware[0]["content"] == oases.CONTEXT_AWARE_EVAL_PROMPT
    assert context_aware[1]["content"] == "Context: (Don Roos) a film director\n\nQuestion: Q?\n"


def test_search_p1_prompt_asks_for_its_output_structure():
    # The paper prints no prompt; it requires decomposed subtasks and <reasoning>, <tool_call>, <answer> outputs.
    prompt = get_method("search-p1").prompt("Q?", "base", NO_CHAT)
    for piece in ("<reasoning>", "<tool_call>", "<tool_response>", "<answer>", "Step 1:", "Question: Q?\n"):
        assert piece in prompt
    assert '{"name": "search", "arguments": {"query": "your query"}}' in prompt


def test_direct_prompt_is_flashrag_zero_shot():
    expected = (
        "Answer the question based on your own knowledge. Only give me the answer and do not output any other words."
        "\n\nQuestion: Who got the first nobel prize in physics?"
    )
    assert get_method("direct").prompt("Who got the first nobel prize in physics?", "base", NO_CHAT) == expected
    assert direct.SYSTEM == "Answer the question based on your own knowledge. Only give me the answer and do not output any other words."


def test_naive_rag_prompt_is_flashrag_default_template_with_doc_lines(bm25):
    method = get_method("naive-rag")
    hits = bm25.search(["Big Fish"], 2)
    prompt = method.prompt_with_passages("Q?", "base", NO_CHAT, hits, lambda text: text)
    title0, text0 = hits[0][0].contents.split("\n", 1)
    title1, text1 = hits[0][1].contents.split("\n", 1)
    assert prompt == (
        "Answer the question based on the given document.Only give me the answer and do not output any other words.\n"
        "The following are given documents.\n\n"
        f"Doc 1(Title: {title0}) {text0}\nDoc 2(Title: {title1}) {text1}\n"
        "\n\nQuestion: Q?"
    )


def test_ircot_prompt_is_flashrag_ircot_pipeline(bm25):
    hits = bm25.search(["Big Fish"], 1)
    title, text = hits[0][0].contents.split("\n", 1)
    prompt = get_method("ircot").prompt_with_passages("Q?", "base", NO_CHAT, hits, lambda t: t)
    assert prompt.startswith("You serve as an intelligent assistant, adept at facilitating users through complex, multi-hop")
    assert "So the answer is: no.\n\n\n\nWikipedia Title: " in prompt  # FlashRAG joins system and user with a blank line
    assert prompt.endswith(f"Wikipedia Title: {title}\n{text}\n\nQuestion: Q?\nThought:")
    assert ircot.INSTRUCTION.endswith('If you reach what you believe to be the final step, start with "So the answer is:".')


def test_r1_searcher_prompt_ends_inside_think():
    prompt = get_method("r1-searcher").prompt("Who is X?", "base", NO_CHAT)
    assert prompt.startswith("The User asks a question, and the Assistant solves it.\n")
    assert '"<think> reasoning process here </think>\\n\\n<answer> final answer here </answer>"' in prompt
    assert prompt.endswith("User:Who is X?\nAssistant: <think>")
    assert r1_searcher.TEMPLATE.count("<|begin_of_query|>") == 1


def test_search_o1_prompt_is_multi_hop_instruction_plus_open_qa_task():
    prompt = get_method("search-o1").prompt("Q?", "base", NO_CHAT)
    assert "The maximum number of search attempts is limited to 5.\n\n" in prompt
    assert prompt.endswith(
        "Please answer the following question. You should think step by step to solve it.\n\n"
        "Provide your final answer in the format \\boxed{YOUR_ANSWER}.\n\nQuestion:\nQ?\n\n"
    )
    assert search_o1.REASON_IN_DOCUMENTS.startswith("**Task Instruction:**\n\nYou are tasked with reading and analyzing web pages")


@pytest.mark.parametrize("name", ["subsearch", "oases", "search-p1", "r1-searcher", "direct", "cot", "naive-rag", "search-o1"])
def test_instruct_style_without_a_chat_template_is_a_clear_error(name):
    with pytest.raises(EvalsuiteError) as err:
        get_method(name).prompt("Q?", "instruct", NO_CHAT)
    assert "chat template" in err.value.message and "--prompt-style base" in err.value.hint


def test_every_method_hashes_each_style_differently():
    for name in list_methods():
        method = get_method(name)
        hashes = {method.template_hash(style) for style in method.styles}
        assert len(hashes) == len(method.styles), name


@pytest.mark.parametrize("name", ["subsearch", "oases", "search-p1", "r1-searcher"])
def test_one_shot_demo_is_a_valid_trajectory_in_the_methods_own_protocol(name):
    method = get_method(name)
    demo = method.one_shot_demo()
    instruction = method.prompt("In which city is the Colosseum?", "base", NO_CHAT)
    first_turn = demo[len(instruction):]
    assert demo.startswith(instruction)
    assert method.parse_action(method.postprocess(first_turn)).queries == ["Colosseum"]
    assert method.extract_answer(first_turn) == "Rome"
    assert method.prompt("Q?", "base-1shot", NO_CHAT).startswith(demo)
