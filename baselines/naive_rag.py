"""Naive RAG: retrieve top-k once with the question, put the passages in the prompt, answer in one generation.

Prompt: FlashRAG's default `PromptTemplate` (RUC-NLPIR/FlashRAG `flashrag/prompt/base_prompt.py`), verbatim,
including its missing space in "document.Only"; references are `Doc i(Title: t) text` lines (`format_reference`).
The prediction is the first non-empty line (FlashRAG `basic_pred_parse`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalsuite.agent.method import ChatRenderer, HitLike
from evalsuite.agent.tag_method import render
from evalsuite.baselines.base import OneTurnBaseline, first_line
from evalsuite.protocol.passages import format_passages

SYSTEM = (
    "Answer the question based on the given document."
    "Only give me the answer and do not output any other words."
    "\nThe following are given documents.\n\n{reference}"
)
USER = "Question: {question}"


class NaiveRAG(OneTurnBaseline):
    """Retrieve with the question before the first turn; one generation answers."""

    name = "naive-rag"
    source = "FlashRAG flashrag/prompt/base_prompt.py PromptTemplate default prompt, verbatim"
    protocol = "retrieve top-k with the question; passages in the prompt; one turn; prediction = first non-empty line"

    def initial_queries(self, question: str) -> list[str]:
        return [question]

    def messages(self, question: str, reference: str = "{reference}") -> list[dict[str, str]]:
        return [{"role": "system", "content": SYSTEM.format(reference=reference)}, {"role": "user", "content": USER.format(question=question)}]

    def prompt_with_passages(
        self, question: str, style: str, chat: ChatRenderer, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]
    ) -> str:
        reference = truncate(format_passages([hit for hits in results for hit in hits]))
        return render(self.messages(question, reference), style, chat, self.name)

    def extract_answer(self, response: str) -> str | None:
        return first_line(response)
