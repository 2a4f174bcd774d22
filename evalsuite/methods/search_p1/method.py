"""Search-P1 (Xia et al., 2026): a plan, then `<reasoning>` / `<tool_call>` / `<answer>` turns.

Source: ../shared/seeds/002_fd41f428d429a5a0.txt (appendix B.1 "Prompt and Output Structure": prompts require
decomposed subtasks, iterative searches and structured `<reasoning>`, `<tool_call>` and `<answer>` outputs; §3: an
explicit planner exposes the intended reasoning structure, against which execution is scored). The paper prints no
prompt text, so the instruction below is evalsuite's, written to that structure; the observation tag
`<tool_response>` and the tool-call JSON `{"name": "search", "arguments": {"query": ...}}` follow the Qwen2.5 tool
convention its Qwen2.5-Instruct models use. Plan steps (numbered lines of the first `<plan>` or `<reasoning>` block
that has them) are recorded in `Turn.extra["plan"]` for the path reward and path metrics.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from evalsuite.agent.method import Action, HitLike
from evalsuite.agent.tag_method import TagMethod
from evalsuite.protocol.tags import TagPair, all_blocks
from evalsuite.protocol.passages import format_passages
from evalsuite.runs.schema import Turn

INSTRUCTION = (
    "Answer the given question. First make a plan: inside <reasoning> and </reasoning>, decompose the question into "
    "the sub-tasks needed to answer it, one per line, numbered as Step 1:, Step 2:, and so on. "
    "Then carry out the plan step by step. To search, call the search tool inside <tool_call> and </tool_call> as "
    '{{"name": "search", "arguments": {{"query": "your query"}}}}, and the top searched results will be returned '
    "between "
    "<tool_response> and </tool_response>. After every result, reason inside <reasoning> and </reasoning> about what "
    "you found and which step comes next. You can search as many times as you want. "
    "When no further external knowledge is needed, provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"
)
INVALID_ACTION = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the tool call between <tool_call> and </tool_call>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
PLAN = TagPair.xml("plan")
REASONING = TagPair.xml("reasoning")
# "Step 1: ...", "1. ...", "1) ..." at the start of a line.
# Horizontal white space only, and a greedy tail: linear time on adversarial text (no backtracking across lines).
_STEP = re.compile(r"^[ \t]*(?:step[ \t]*(\d+)[ \t]*[:.)-]|(\d+)[ \t]*[.)])[ \t]*(\S.*)$", re.IGNORECASE | re.MULTILINE)
MAX_PLAN_STEPS = 20


def plan_steps(text: str) -> list[str]:
    """Numbered steps of the first `<plan>` block, else of the first `<reasoning>` block that has any."""
    for pair in (PLAN, REASONING):
        for block in all_blocks(text, pair, limit=20):
            steps = [match.group(3).strip() for match in _STEP.finditer(block)][:MAX_PLAN_STEPS]
            if steps:
                return steps
    return []


def tool_call_queries(content: str) -> list[str]:
    """Queries of a `<tool_call>`: Qwen tool JSON (`arguments.query`,
    a string or a list), `{"query": …}`, or plain text."""
    try:
        call = json.loads(content)
    except (ValueError, RecursionError):
        return [content] if content and not content.lstrip().startswith("{") else []
    if isinstance(call, dict):
        arguments = call.get("arguments", call)
        if isinstance(arguments, str):  # some models double-encode the arguments
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):
                arguments = {"query": arguments}
        query = arguments.get("query") if isinstance(arguments, dict) else None
    elif isinstance(call, str):
        query = call
    else:
        query = None
    if isinstance(query, str):
        return [query.strip()] if query.strip() else []
    if isinstance(query, list):
        return [q.strip() for q in query if isinstance(q, str) and q.strip()][:3]
    return []


def plan_of(turns: Sequence[Turn]) -> list[str]:
    """The plan of a trajectory: the first turn's recorded plan steps (empty when the model made none)."""
    for turn in turns:
        if turn.extra.get("plan"):
            return list(turn.extra["plan"])
    return []


class SearchP1(TagMethod):
    """Search-P1: plan, `<reasoning>`, `<tool_call>` search, `<tool_response>` observation, `<answer>`."""

    name = "search-p1"
    search = TagPair.xml("tool_call")
    thinks = (REASONING,)
    observation_tags = TagPair.xml("tool_response")
    source = "Search-P1 paper, output structure of appendix B.1; prompt text evalsuite's (the paper prints none)"
    protocol = (
        '<reasoning> with a numbered plan; <tool_call>{"name": "search", "arguments": '
        '{"query": q}}</tool_call>; <tool_response> docs </tool_response>; <answer>'
    )
    invalid_message = INVALID_ACTION

    def messages(self, question: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": INSTRUCTION.format(question=question)}]

    def demo_query(self) -> str:
        return json.dumps({"name": "search", "arguments": {"query": "Colosseum"}})

    def parse_action(self, text: str) -> Action:
        action = super().parse_action(text)
        steps = plan_steps(text)
        if steps:
            action.extra["plan"] = steps
        return action

    def queries(self, content: str) -> tuple[list[str], dict]:
        queries = tool_call_queries(content)
        return queries, ({} if queries else {"invalid_reason": "tool call without a query"})

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        blocks = [format_passages(hits).strip() for hits in results]
        return f"\n\n<tool_response>\n{truncate(chr(10).join(blocks))}\n</tool_response>\n\n"
