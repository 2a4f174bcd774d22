"""R1-Searcher (Song et al., 2025): `<|begin_of_query|>` queries, `<|begin_of_documents|>` results, `<answer>`.

Source: R1-Searcher's prompt and document layout as FlashRAG ships them (RUC-NLPIR/FlashRAG,
`flashrag/pipeline/reasoning_pipeline.py`, `ReasoningPipeline.user_prompt` and `_retrieved_docs_to_string`,
verbatim). Its protocol differs from Search-R1's (other query and document markers, the prompt ends inside `<think>`),
so it is a method of its own. ZeroSearch trains on Search-R1's tags (`<search>`, `<information>`, `<answer>`), so it
needs no method of its own: evaluate ZeroSearch checkpoints with `--method search-r1`.
FlashRAG ends a trajectory whose turn has neither marker; we append an invalid-action message in R1-Searcher's markers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from evalsuite.agent.method import Action, HitLike
from evalsuite.agent.tag_method import DemoHit, TagMethod
from evalsuite.protocol.passages import split_contents
from evalsuite.protocol.tags import TagPair
from evalsuite.runs.schema import Passage

# FlashRAG ReasoningPipeline.user_prompt, verbatim.
TEMPLATE = (
    "The User asks a question, and the Assistant solves it.\n"
    "The Assistant first thinks about the reasoning process in the mind and then provides the User with the final "
    "answer.\n"
    "The output format of reasoning process and final answer are enclosed within <think> </think> and <answer> "
    "</answer> tags, "
    'respectively, i.e., "<think> reasoning process here </think>\\n\\n<answer> final answer here </answer>".\n'
    "During the thinking process, the Assistant can perform searching for uncertain knowledge if necessary with the "
    "format of "
    '"<|begin_of_query|> search query (only keywords) here <|end_of_query|>". **A query must involve only a single '
    "triple**.\n"
    "Then, the system will provide the Assistant with helpful information with the format of "
    '"<|begin_of_documents|> ...search results... <|end_of_documents|>".\n\n'
    "User:{question}\n"
    "Assistant: <think>"
)
INVALID_ACTION = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the query between <|begin_of_query|> and <|end_of_query|>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
_LEADING_NUMBER = re.compile(r"^\d+\s+")
_DOCUMENT_MARKER = re.compile(r"^\((\d+)\)Title: ", re.MULTILINE)


def format_documents(hits: Sequence[HitLike]) -> str:
    """`(i)Title: t Text: x` lines, as FlashRAG's `_retrieved_docs_to_string` writes them (without the markers)."""
    out = ""
    for index, hit in enumerate(hits):
        title, text = split_contents(hit.contents)
        out += f"({index + 1}){_LEADING_NUMBER.sub('', f'Title: {title} Text: {text}')}\n"
    return out


def parse_documents(content: str) -> list[Passage]:
    """Passages of a documents block: one per `(i)Title: t Text: x` line group (the layout of `format_documents`)."""
    markers = list(_DOCUMENT_MARKER.finditer(content))
    passages = []
    for index, marker in enumerate(markers):
        end = markers[index + 1].start() if index + 1 < len(markers) else len(content)
        title, sep, text = content[marker.end() : end].partition(" Text: ")
        passages.append(
            Passage(title=title.strip().strip('"') or None, text=text.strip()) if sep else Passage(text=title.strip())
        )
    return passages


class R1Searcher(TagMethod):
    """R1-Searcher: the prompt ends in `<think>`; queries in `<|begin_of_query|>…<|end_of_query|>`."""

    name = "r1-searcher"
    search = TagPair("<|begin_of_query|>", "<|end_of_query|>")
    observation_tags = TagPair("<|begin_of_documents|>", "<|end_of_documents|>")
    source = "R1-Searcher prompt and document layout as in FlashRAG reasoning_pipeline.py ReasoningPipeline, verbatim"
    protocol = (
        "prompt ends with 'Assistant: <think>'; <|begin_of_query|> q <|end_of_query|>; "
        "<|begin_of_documents|> (i)Title: t Text: x <|end_of_documents|>; <answer>"
    )
    invalid_message = INVALID_ACTION

    def messages(self, question: str) -> list[dict[str, str]]:
        return [{"role": "user", "content": TEMPLATE.format(question=question)}]

    def one_shot_demo(self) -> str:
        # The template already opens <think>; the demo continues it in kind.
        turn1 = f" {self.search.open} Colosseum {self.search.close}"
        observation = self.observation(Action("search", queries=["Colosseum"]), [[DemoHit()]], lambda text: text)
        turn2 = "The Colosseum is in Rome. </think>\n\n<answer> Rome </answer>\n\n"
        return TEMPLATE.format(question="In which city is the Colosseum?") + turn1 + observation + turn2

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        return f"\n\n<|begin_of_documents|>\n{truncate(format_documents(results[0]))}\n<|end_of_documents|>\n\n"

    def parse_observation(self, content: str) -> list[Passage]:
        return parse_documents(content)
