"""OASES (Zhang et al., 2026): its main search prompt with `<result>` observations, and its two state evaluators.

Source: ../shared/seeds/003_7936c9aae4d474f1.txt, Table 6 (main search prompt and the question-only and context-aware
search-state evaluation prompts, verbatim as the seed prints them: one line each, the paper's typographic quotes kept)
and the case studies of Tables 7-9 (`<thinking>` and `<think>` both occur, observations are `<result> … </result>`).
The paper prints no user-message layout, no passage layout and no invalid-action message; ours are: the question as
`Question: …`, Search-R1's `Doc i(Title: t) text` lines inside `<result>`, and Search-R1's message with OASES's tags.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalsuite.agent.method import Action, HitLike
from evalsuite.agent.tag_method import TagMethod, render
from evalsuite.protocol.tags import TagPair, last_block
from evalsuite.protocol.passages import format_passages
from evalsuite.metrics.answer import token_scores
from evalsuite.runs.schema import Turn

if TYPE_CHECKING:
    from evalsuite.models.base import Backend

# Table 6, "Main Search Prompt", verbatim.
SEARCH_PROMPT = (
    "You are an intelligent Research Agent designed to answer questions by retrieving information from the "
    "internet. ## Operational Logic 1. Plan: Analyze the user\u2019s question. If the answer requires multiple "
    "steps, break it down. 2. Search: Use the \u2018<search>\u2018 tag to query the search engine. Keep queries "
    "specific and efficient. 3. Observe: Wait for the \u2018<result>\u2018 output provided by the system. 4. "
    "Iterate: Analyze the search results in a \u2018<think>\u2018 block. - If information is missing, formulate "
    "a new search query based on what you found. - If the information is sufficient, proceed to answer. 5. "
    "Answer: Output the final answer in an \u2018<answer>\u2018 tag. Keep it concise and direct. ## Response "
    "Format - Thinking Process: <think> ... </think> - Search Action: <search> ... </search> - Final Answer: "
    "<answer> ... </answer> ## Constraints - Stop after Search: Do not generate \u2018<result>\u2018 tags "
    "yourself. Wait for the system. - Search Limit: There is a maximum limit on the number of search rounds. If "
    "the limit is reached, stop searching and output the final answer using available information."
)
# Table 6, "Question-Only Evaluation" and "Context-Aware Evaluation", verbatim.
QUESTION_ONLY_EVAL_PROMPT = (
    "You are an expert AI assistant capable of answering questions precisely. Answer the user\u2019s question based on "
    "your internal knowledge. You must provide a concise answer enclosed within specific tags as follows: "
    "<eval> The Answer </eval>"
)
CONTEXT_AWARE_EVAL_PROMPT = (
    "You are an expert AI assistant capable of answering questions precisely. Answer the "
    "user\u2019s question using the provided Context and your internal knowledge. You must "
    "provide a concise answer enclosed within specific tags as follows: <eval> The Answer </eval>"
)
INVALID_ACTION = (
    "\nMy previous action is invalid. "
    "If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
EVAL = TagPair.xml("eval")


class Oases(TagMethod):
    """OASES search policy: `<think>`/`<thinking>`, `<search>`, `<result>` observations, `<answer>`."""

    name = "oases"
    thinks = (TagPair.xml("think"), TagPair.xml("thinking"))
    observation_tags = TagPair.xml("result")
    source = "OASES paper, Table 6 main search prompt verbatim; <result> observations from its case studies"
    protocol = (
        "<think> or <thinking>; <search> q </search>; <result> Doc i(Title: "
        "t) … </result>; <answer>; state evaluators answer in <eval>"
    )
    invalid_message = INVALID_ACTION

    def messages(self, question: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": SEARCH_PROMPT}, {"role": "user", "content": f"Question: {question}\n"}]

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        return f"\n\n<result>\n{format_passages(results[0], truncate).strip()}\n</result>\n\n"


def search_states(turns: Sequence[Turn]) -> list[str]:
    """OASES's ordered search states as context strings: s_0
    is empty, s_t holds the passages of the first t searches."""
    states = [""]
    lines: list[str] = []
    for turn in turns:
        if not turn.passages:
            continue
        for passage in turn.passages:
            lines.append(f"({passage.title}) {passage.text}" if passage.title else passage.text)
        states.append("\n".join(lines))
    return states


def eval_messages(question: str, context: str) -> list[dict[str, str]]:
    """The evaluator's messages: question-only when `context` is empty, else context-aware (Table 6)."""
    if not context:
        return [
            {"role": "system", "content": QUESTION_ONLY_EVAL_PROMPT},
            {"role": "user", "content": f"Question: {question}\n"},
        ]
    return [
        {"role": "system", "content": CONTEXT_AWARE_EVAL_PROMPT},
        {"role": "user", "content": f"Context: {context}\n\nQuestion: {question}\n"},
    ]


def parse_eval(text: str) -> str | None:
    """The evaluation answer: the last `<eval>…</eval>` block, stripped; None when there is none."""
    found = last_block(text, EVAL)
    return found.strip() if found is not None else None


@dataclass
class StateEvaluation:
    """One state's evaluation: the generated text, the `<eval>` answer and γ (token F1 against the golds, 0 if none)."""

    state: int
    text: str
    answer: str | None
    score: float
    finish_reason: str = "stop"


@dataclass
class StateEvaluator:
    """OASES's state evaluator: the policy answers from each search
    state; γ_t is the answer F1 (process reward γ_t − γ_{t−1})."""

    backend: Backend
    style: str = "base"
    max_tokens: int = 64
    stop: list[str] = field(default_factory=lambda: ["</eval>"])
    # Greedy when scoring a finished run; training samples at the trainer's temperature (the answers are co-trained).
    temperature: float = 0.0
    seed: int = 0

    def prompts(self, question: str, states: Sequence[str]) -> list[str]:
        return [
            render(eval_messages(question, context), self.style, self.backend.chat_template, "oases-eval")
            for context in states
        ]

    def __call__(self, question: str, golds: Sequence[str], states: Sequence[str]) -> list[StateEvaluation]:
        """Evaluate every state in one batched backend call."""
        from evalsuite.models.base import GenerationRequest

        requests = [
            GenerationRequest(
                prompt=p, stop=self.stop, max_tokens=self.max_tokens, temperature=self.temperature, seed=self.seed
            )
            for p in self.prompts(question, states)
        ]
        generations = self.backend.generate(requests)
        out = []
        for index, generation in enumerate(generations):
            text = generation.text if generation.error is None else ""
            answer = parse_eval(text)
            score = token_scores(answer, golds)["f1"] if answer is not None else 0.0
            out.append(StateEvaluation(index, text, answer, score, generation.finish_reason))
        return out


def process_rewards(scores: Sequence[float]) -> list[float]:
    """γ_t − γ_{t−1} for t = 1..T (OASES's outcome-aligned process rewards)."""
    return [scores[t] - scores[t - 1] for t in range(1, len(scores))]
