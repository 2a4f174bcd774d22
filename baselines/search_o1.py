"""Search-o1 (Li et al., 2025): agentic search in special markers, with reason-in-documents before results enter the chain.

Prompts: Search-o1's `get_multiqa_search_o1_instruction(MAX_SEARCH_LIMIT)` + `get_task_instruction_openqa(question)`
(one user message) and `get_webpage_to_reasonchain_instruction(prev_reasoning, search_query, document)` for the
reason-in-documents call, verbatim from sunnynexus/Search-o1 `scripts/prompts.py` (as vendored in its public forks).
Each search turn's documents go to an extra model call (batched by the engine) whose `**Final Information**` part is
appended as `<|begin_search_result|>…<|end_search_result|>`. The answer is the last `\\boxed{…}`. Previous reasoning
is the last steps of the chain as Search-o1 truncates it (first step, last four and every search step kept).
MAX_SEARCH_LIMIT is 5 in the prompt (Search-o1's QA setting); the loop's real limit is `--max-turns`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from evalsuite.agent.method import Action, ChatRenderer, HitLike
from evalsuite.agent.tag_method import render
from evalsuite.baselines.base import Baseline, boxed
from evalsuite.protocol.passages import split_contents
from evalsuite.protocol.tags import TagPair, cut_after_first, first_block

MAX_SEARCH_LIMIT = 5
QUERY = TagPair("<|begin_search_query|>", "<|end_search_query|>")
RESULT = TagPair("<|begin_search_result|>", "<|end_search_result|>")

INSTRUCTION = (
    "You are a reasoning assistant with the ability to perform web searches to help "
    "you answer the user's question accurately. You have special tools:\n\n"
    "- To perform a search: write <|begin_search_query|> your query here <|end_search_query|>.\n"
    "Then, the system will search and analyze relevant web pages, then provide you with helpful information in the format <|begin_search_result|> ...search results... <|end_search_result|>.\n\n"
    "You can repeat the search process multiple times if necessary. The maximum number of search attempts is limited to {max_search_limit}.\n\n"
    "Once you have all the information you need, continue your reasoning.\n\n"
    "Example:\n"
    "Question: \"Alice David is the voice of Lara Croft in a video game developed by which company?\"\n"
    "Assistant thinking steps:\n"
    "- I need to find out who voices Lara Croft in the video game.\n"
    "- Then, I need to determine which company developed that video game.\n\n"
    "Assistant:\n"
    "<|begin_search_query|>Alice David Lara Croft voice<|end_search_query|>\n\n"
    "(System returns processed information from relevant web pages)\n\n"
    "Assistant thinks: The search results indicate that Alice David is the voice of Lara Croft in a specific video game. Now, I need to find out which company developed that game.\n\n"
    "Assistant:\n"
    "<|begin_search_query|>video game developed by Alice David Lara Croft<|end_search_query|>\n\n"
    "(System returns processed information from relevant web pages)\n\n"
    "Assistant continues reasoning with the new information...\n\n"
    "Remember:\n"
    "- Use <|begin_search_query|> to request a web search and end with <|end_search_query|>.\n"
    "- When done searching, continue your reasoning.\n\n"
)
TASK = (
    "Please answer the following question. You should think step by step to solve it.\n\n"
    "Provide your final answer in the format \\boxed{{YOUR_ANSWER}}.\n\n"
    "Question:\n{question}\n\n"
)
REASON_IN_DOCUMENTS = """**Task Instruction:**

You are tasked with reading and analyzing web pages based on the following inputs: **Previous Reasoning Steps**, **Current Search Query**, and **Searched Web Pages**. Your objective is to extract relevant and helpful information for **Current Search Query** from the **Searched Web Pages** and seamlessly integrate this information into the **Previous Reasoning Steps** to continue reasoning for the original question.

**Guidelines:**

1. **Analyze the Searched Web Pages:**
- Carefully review the content of each searched web page.
- Identify factual information that is relevant to the **Current Search Query** and can aid in the reasoning process for the original question.

2. **Extract Relevant Information:**
- Select the information from the Searched Web Pages that directly contributes to advancing the **Previous Reasoning Steps**.
- Ensure that the extracted information is accurate and relevant.

3. **Output Format:**
- **If the web pages provide helpful information for current search query:** Present the information beginning with `**Final Information**` as shown below.
**Final Information**

[Helpful information]

- **If the web pages do not provide any helpful information for current search query:** Output the following text.

**Final Information**

No helpful information found.

**Inputs:**
- **Previous Reasoning Steps:**  
{prev_reasoning}

- **Current Search Query:**  
{search_query}

- **Searched Web Pages:**  
{document}

Now you should analyze each web page and find helpful information based on the current search query "{search_query}" and previous reasoning steps.
"""
FINAL_INFORMATION = "**Final Information**"
MODIFIED_STEPS = "**Modified Reasoning Steps**"


def format_documents(hits: Sequence[HitLike]) -> str:
    """Search-o1's `**Web Page i:**` + JSON layout, with the passage's title and text as the page."""
    out = ""
    for index, hit in enumerate(hits):
        title, text = split_contents(hit.contents)
        out += f"**Web Page {index + 1}:**\n" + json.dumps({"title": title.strip('"'), "text": text}, ensure_ascii=False, indent=2) + "\n"
    return out


def previous_reasoning(response: str) -> str:
    """Search-o1's truncation of the chain: steps numbered, keep the first, the last four and every search step."""
    lines = response.replace("\n\n", "\n").split("\n")
    steps = [f"Step {index + 1}: {line}" for index, line in enumerate(lines)]
    if len(steps) <= 5:
        return "\n\n".join(steps)
    kept: list[str] = []
    for index, step in enumerate(steps):
        if index == 0 or index >= len(steps) - 4 or QUERY.open in step or RESULT.open in step:
            kept.append(step)
        elif not kept or kept[-1] != "...":
            kept.append("...")
    return "\n\n".join(kept)


def extract_information(output: str) -> str:
    """The condensed information of a reason-in-documents output (Search-o1 `extract_answer`, mode 'infogen')."""
    if FINAL_INFORMATION in output:
        return output.split(FINAL_INFORMATION)[-1].replace("\n", "").strip("`").strip()
    if MODIFIED_STEPS in output:
        return output.split(MODIFIED_STEPS)[-1].strip("`").strip()
    return output


class SearchO1(Baseline):
    """Search-o1: search markers, reason-in-documents condensation, `\\boxed{}` answer."""

    name = "search-o1"
    stop = (QUERY.close,)
    source = "Search-o1 scripts/prompts.py (multi-hop QA instruction, open-QA task instruction, reason-in-documents), verbatim"
    protocol = "<|begin_search_query|> q <|end_search_query|>; documents condensed by an extra model call; <|begin_search_result|> info <|end_search_result|>; \\boxed{answer}"

    def messages(self, question: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": INSTRUCTION.format(max_search_limit=MAX_SEARCH_LIMIT) + TASK.format(question=question)}]

    def postprocess(self, text: str) -> str:
        return cut_after_first(text, (QUERY.close,))

    def parse_action(self, text: str) -> Action:
        block = first_block(text, (QUERY,))
        if block is not None:
            query = block.content.strip()
            if query:
                return Action("search", queries=[query])
            return Action("invalid", extra={"invalid_reason": "empty query"})
        # Search-o1 ends a sequence that stops without a search; its answer is the \boxed{} content, if any.
        return Action("answer", answer=boxed(text) or "")

    def condense_prompt(
        self, question: str, response: str, action: Action, results: Sequence[Sequence[HitLike]], style: str, chat: ChatRenderer, truncate: Callable[[str], str]
    ) -> str | None:
        text = REASON_IN_DOCUMENTS.format(
            prev_reasoning=previous_reasoning(response), search_query=action.queries[0], document=truncate(format_documents(results[0]))
        )
        return render([{"role": "user", "content": text}], style, chat, self.name)

    def condensed_observation(self, action: Action, condensed: str) -> str:
        return f"\n\n{RESULT.open}{extract_information(condensed)}{RESULT.close}\n\n"

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        return f"\n\n{RESULT.open}{truncate(format_documents(results[0]))}{RESULT.close}\n\n"

    def invalid_observation(self) -> str:
        return "\n"

    def extract_answer(self, response: str) -> str | None:
        return boxed(response)
