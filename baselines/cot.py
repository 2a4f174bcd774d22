"""Chain-of-thought: reason step by step from parametric knowledge, then answer after "So the answer is:".

FlashRAG publishes no CoT prompt; ours is its zero-shot prompt with the zero-shot-CoT trigger (Kojima et al., 2022,
"Let's think step by step") and IRCoT's answer marker, so CoT and IRCoT share one answer rule: the first line after
"So the answer is:" (FlashRAG `ircot_pred_parse`); without the marker the whole output counts, as in FlashRAG.
"""

from __future__ import annotations

from evalsuite.baselines.base import ANSWER_MARKER, OneTurnBaseline, after_marker

SYSTEM = (
    "Answer the question based on your own knowledge. Let's think step by step, "
    f"then give the final answer after \"{ANSWER_MARKER}\"."
)
USER = "Question: {question}"


class ChainOfThought(OneTurnBaseline):
    """One generation of reasoning; the answer follows the marker."""

    name = "cot"
    retrieves = False
    source = "zero-shot CoT (Kojima et al., 2022) on FlashRAG's zero-shot prompt; answer rule of FlashRAG ircot_pred_parse"
    system = SYSTEM
    user = USER
    protocol = "one turn, no retrieval; prediction = text after 'So the answer is:' (else the whole output)"

    def extract_answer(self, response: str) -> str | None:
        marked = after_marker(response)
        if marked is not None:
            return marked
        return response.strip() or None
