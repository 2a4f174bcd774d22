"""Direct inference: answer from parametric knowledge in one generation.

Prompt: FlashRAG's zero-shot baseline (RUC-NLPIR/FlashRAG `examples/methods/run_exp.py`, `zero_shot`), verbatim:
system "Answer the question based on your own knowledge. Only give me the answer and do not output any other words."
and user "Question: {question}"; base models get both joined by a blank line (FlashRAG `PromptTemplate`). The
prediction is the first non-empty line of the output (FlashRAG `basic_pred_parse`).
"""

from __future__ import annotations

from evalsuite.baselines.base import OneTurnBaseline, first_line

SYSTEM = "Answer the question based on your own knowledge. Only give me the answer and do not output any other words."
USER = "Question: {question}"


class Direct(OneTurnBaseline):
    """One generation, no retrieval; the first line is the answer."""

    name = "direct"
    retrieves = False
    source = "FlashRAG examples/methods/run_exp.py zero_shot prompt, verbatim"
    system = SYSTEM
    user = USER
    protocol = "one turn, no retrieval; prediction = first non-empty line"

    def extract_answer(self, response: str) -> str | None:
        return first_line(response)
