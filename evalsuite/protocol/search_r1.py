"""Search-R1's response format: `<think>`, the `<search>`/`<answer>` actions, `<information>` observations and the
invalid-action message, and the response parser set up with them.

Source, verbatim: PeterGriffinJin/Search-R1, `search_r1/llm_agent/generation.py` (`postprocess_predictions`,
`execute_predictions`, `_passages2string`) for the action regex, the observation format and the invalid-action
message. The prompt is the method's (`evalsuite.methods.search_r1.method`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalsuite.metrics.answer import extract_answer
from evalsuite.protocol.passages import HitLike, format_passages, parse_passages
from evalsuite.protocol.tags import TagPair, all_blocks, first_block
from evalsuite.protocol.trajectory import Action, ParsedTrajectory, ResponseProtocol, parse_response

# generation.py execute_predictions, verbatim (the backslash-continued f-string joins the lines with no newline).
INVALID_ACTION = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
# The message's first sentence (recordings are split on it: evalsuite.protocol.recording).
INVALID_ACTION_PREFIX = "My previous action is invalid."

# generation.py postprocess_predictions takes the first complete search or answer block,
# `re.search(r"<(search|answer)>(.*?)</\1>", text, re.DOTALL)`; `first_block` has the same semantics in linear time.
SEARCH, ANSWER, THINK, INFORMATION = (
    TagPair.xml("search"),
    TagPair.xml("answer"),
    TagPair.xml("think"),
    TagPair.xml("information"),
)
MAX_THINK_SPANS = 50


def parse_action(text: str, searches_empty_query: bool = True) -> Action:
    """The action of one model turn: its first complete search or answer block, and its think spans.

    Search-R1's code retrieves for `<search></search>` too; with `searches_empty_query=False` an empty query is no
    action (SmartSearch's rule)."""
    think = [span.strip() for span in all_blocks(text, THINK, limit=MAX_THINK_SPANS)]
    block = first_block(text, (SEARCH, ANSWER))
    if block is None:
        return Action("invalid", think=think)
    content = block.content.strip()
    if block.pair == ANSWER:
        return Action("answer", answer=content, think=think)
    if not content and not searches_empty_query:
        return Action("invalid", think=think)
    return Action("search", queries=[content], think=think)


def observation(hits: Sequence[HitLike], truncate: Callable[[str], str] = lambda text: text) -> str:
    """The text inserted after a search turn: the hits as `_passages2string` lays them out, in `<information>`."""
    return f"\n\n{INFORMATION.open}{format_passages(hits, truncate).strip()}{INFORMATION.close}\n\n"


def response_protocol(
    parse_action: Callable[[str], Action] = parse_action,
    extract_answer: Callable[[str], str | None] = extract_answer,
    invalid_message: str = INVALID_ACTION,
) -> ResponseProtocol:
    """Search-R1's markers, with a method's own action parser, answer extraction and invalid-action message."""
    return ResponseProtocol(
        search=SEARCH,
        answer=ANSWER,
        observation=INFORMATION,
        thinks=(THINK,),
        invalid_message=invalid_message,
        parse_action=parse_action,
        extract_answer=extract_answer,
        parse_observation=parse_passages,
    )


def parse_trajectory(text: str | bytes) -> ParsedTrajectory:
    """Parse a Search-R1 response (prompt excluded); `get_method(name).parse(text)` does the same for any method."""
    return parse_response(text, response_protocol())
