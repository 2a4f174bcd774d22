"""SubSearch (Samarinas, Chang and Zamani): Search-R1's tags with `##`-separated sub-questions, at most 3.

Source: the SubSearch paper in ../shared/seeds/001_78ae4c0020f19de4.txt, Table 1 (the prompt, verbatim) and its
description of the observation, one block of documents per sub-question inside one `<information>` block:
`<information> documents sub-question 1 ## documents sub-question 2 </information>`. The sub-questions of a turn are
retrieved in one batched call by the engine. The invalid-action message is Search-R1's (SubSearch builds on its code).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from evalsuite.agent.method import Action, HitLike
from evalsuite.agent.tag_method import TagMethod
from evalsuite.protocol.tags import split_subqueries
from evalsuite.protocol.passages import format_passages, parse_passages
from evalsuite.protocol.search_r1 import INVALID_ACTION
from evalsuite.runs.schema import Passage

# Table 1 of the paper, verbatim (spaces before the punctuation included); the question is appended after it.
TEMPLATE = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get new "
    "information. After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query "
    "</search> , and it will return the top searched results between <information> and </information> .\n"
    "If the original query is complex or involves multiple parts, you are encouraged to decompose it into at most 3 "
    "smaller sub-questions, separated by ## . For example: <search> sub-question 1 ## sub-question 2 </search> and it "
    "will return the top searched results between <information> documents sub-question 1 ## documents sub-question 2 "
    "</information> .\n"
    "You can search as many times as you want. Only decompose when the question has multiple independent parts (e.g., "
    "different entities, aspects, or comparisons). Do not decompose questions that do not need it.\n"
    "If you find no further external knowledge needed, you can directly provide the answer inside <answer> and "
    "</answer> without detailed illustrations. For example, <answer> Beijing </answer> .\n"
    "Question: {question}"
)
SEPARATOR = "##"
MAX_SUBQUERIES = 3
# Where one sub-question's documents end and the next one's begin (each block restarts at Doc 1).
_NEXT_BLOCK = re.compile(r"\s" + SEPARATOR + r"\s(?=Doc 1\(Title: )")


class SubSearch(TagMethod):
    """SubSearch: `<search> q1 ## q2 </search>` → one `<information>` with one passage block per sub-question."""

    name = "subsearch"
    source = "SubSearch paper, Table 1 prompt verbatim; observation layout from the prompt's own example"
    protocol = (
        "<think>; <search> q1 ## q2 ## q3 </search> (≤3 sub-questions, one batched "
        "retrieval); <information> docs q1 ## docs q2 </information>; <answer>"
    )
    invalid_message = INVALID_ACTION

    def messages(self, question: str) -> list[dict[str, str]]:
        # Search-R1 ends the instruction with a newline before generation starts; so do we.
        return [{"role": "user", "content": TEMPLATE.format(question=question) + "\n"}]

    def demo_query(self) -> str:
        return "Colosseum"

    def queries(self, content: str) -> tuple[list[str], dict]:
        parts, dropped = split_subqueries(content, SEPARATOR, MAX_SUBQUERIES)
        return parts, ({"dropped_subqueries": dropped} if dropped else {})

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        blocks = [format_passages(hits).strip() for hits in results]
        return f"\n\n<information>{truncate(f' {SEPARATOR} '.join(blocks))}</information>\n\n"

    def parse_observation(self, content: str) -> list[Passage]:
        return [passage for block in _NEXT_BLOCK.split(content) for passage in parse_passages(block)]
