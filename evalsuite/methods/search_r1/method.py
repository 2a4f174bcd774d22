"""The Search-R1 method: its prompt (and our worked-example variants) over Search-R1's response format.

Source, verbatim: PeterGriffinJin/Search-R1, `scripts/data_process/nq_search.py` (`make_prefix`, template `base`)
for the instruction. The action regex, the observation format and the invalid-action message are the response
format's (`evalsuite.protocol.search_r1`, from `search_r1/llm_agent/generation.py`). For instruct models Search-R1
puts the same text in one user message under the model's chat template; the recorded trajectories in
../shared/data/trajectories show exactly that prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalsuite.agent.method import Action, ChatRenderer, HitLike, Method
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.answer import extract_answer
from evalsuite.protocol import search_r1 as response_format
from evalsuite.protocol.search_r1 import INVALID_ACTION

# nq_search.py make_prefix(template_type='base'), verbatim (including "as your want").
INSTRUCTION = (
    "Answer the given question. "
    "You must conduct reasoning inside <think> and </think> first every time you get new information. "
    "After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query </search> "
    "and it will return the top searched results between <information> and </information>. "
    "You can search as many times as your want. "
    "If you find no further external knowledge needed, you can directly provide the answer inside <answer> and "
    "</answer>, without detailed illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"
)

# An evalsuite addition, not Search-R1's: small base models (Gemma-3-270M) only follow the protocol after one worked
# example (docs/agent.md). The verbatim instruction carries the demonstration question; the real
# question follows the demonstration as "Question: ...".
ONE_SHOT_DEMO = (
    INSTRUCTION.format(question="In which city is the Colosseum?")
    + "<think> I need to find where the Colosseum is. </think>\n"
    "<search> Colosseum </search>\n\n"
    '<information>Doc 1(Title: "Colosseum") The Colosseum is an elliptical amphitheatre in the centre of the city '
    "of Rome, Italy.\n</information>\n\n"
    "<think> The Colosseum is in Rome. </think>\n"
    "<answer> Rome </answer>\n\n"
)


@dataclass  # not frozen: HitLike declares plain (settable) attributes, which a frozen dataclass does not match
class _DemoHit:
    doc_id: str
    contents: str
    score: float = 1.0


def demonstration(
    question: str, thought: str, query: str, docs: Sequence[tuple[str, str]], conclusion: str, answer: str
) -> str:
    """One worked Search-R1 trajectory: `Question:` line, think, search, observation, think, answer.

    The observation is rendered as the engine renders a real one, so the model sees the format it will get.
    """
    hits = [_DemoHit(f"demo-{i}", f'"{title}"\n{text}') for i, (title, text) in enumerate(docs)]
    observation = response_format.observation(hits)
    return (
        f"Question: {question}\n<think> {thought} </think>\n<search> {query} </search>{observation}"
        f"<think> {conclusion} </think>\n<answer> {answer} </answer>\n\n"
    )


# Also an evalsuite addition: three worked examples written by us, after the verbatim instruction with its question
# removed. Measured with Gemma-3-270M base (docs/agent.md): after the one-shot demo it searched on the first turn for
# 0/10 AD-QA questions (it copies a short think and answers); after these three, for 10/10 AD-QA and 10/10 Bamboogle
# questions. The third uses invented entities (a two-hop chain found in no corpus): unknown names get looked up.
FEW_SHOT_DEMO = INSTRUCTION.split("Question: {question}")[0] + "".join(
    [
        demonstration(
            "In which city is the Colosseum?",
            "I need to search for the Colosseum.",
            "Colosseum",
            [("Colosseum", "The Colosseum is an elliptical amphitheatre in the centre of the city of Rome, Italy.")],
            "The Colosseum is in Rome.",
            "Rome",
        ),
        demonstration(
            "Who wrote the novel that the film Big Fish is based on?",
            "I need to search for the novel behind the film Big Fish.",
            "Big Fish novel",
            [
                (
                    "Big Fish (novel)",
                    "Big Fish: A Novel of Mythic Proportions is a 1998 novel by "
                    "Daniel Wallace. It was adapted into the 2003 film Big Fish.",
                )
            ],
            "The novel was written by Daniel Wallace.",
            "Daniel Wallace",
        ),
        demonstration(
            "In which country is the company that owns the ferry Nordlys Quill headquartered?",
            "I need to search for the ferry Nordlys Quill.",
            "ferry Nordlys Quill",
            [
                ("Nordlys Quill (ferry)", "The ferry Nordlys Quill is owned by the company Brakken Lines."),
                ("Brakken Lines (company)", "Brakken Lines is a shipping company headquartered in Norway."),
            ],
            "Nordlys Quill is owned by Brakken Lines, which is headquartered in Norway.",
            "Norway",
        ),
    ]
)


class SearchR1(Method):
    """Search-R1 (Jin et al., 2025): think, `<search>` query, `<information>` top-k passages, `<answer>`."""

    name = "search-r1"
    stop = ("</search>", "</answer>")
    styles = ("base", "instruct", "base-1shot", "base-fewshot")
    # Search-R1's code retrieves for `<search></search>` too; SmartSearch counts an empty query as no action.
    searches_empty_query = True

    def template_source(self, style: str) -> str:
        if style == "base-1shot":
            return ONE_SHOT_DEMO + "Question: {question}\n"
        if style == "base-fewshot":
            return FEW_SHOT_DEMO + "Question: {question}\n"
        return f"[{style}] " + INSTRUCTION

    def prompt(self, question: str, style: str, chat: ChatRenderer) -> str:
        text = INSTRUCTION.format(question=question)
        if style == "base":
            return text
        if style == "base-1shot":
            return ONE_SHOT_DEMO + f"Question: {question}\n"
        if style == "base-fewshot":
            return FEW_SHOT_DEMO + f"Question: {question}\n"
        if style == "instruct":
            rendered = chat([{"role": "user", "content": text}])
            if rendered is None:
                raise EvalsuiteError(
                    "prompt style 'instruct' needs a chat template, and this model has none",
                    hint="use --prompt-style base (or base-fewshot for small base models)",
                )
            return rendered
        raise EvalsuiteError(
            f"search-r1 has no prompt style {style!r}", hint=f"use one of: auto, {', '.join(self.styles)}"
        )

    def postprocess(self, text: str) -> str:
        # generation.py _postprocess_responses: cut after the first </search>, else after the first </answer>.
        if "</search>" in text:
            return text.split("</search>")[0] + "</search>"
        if "</answer>" in text:
            return text.split("</answer>")[0] + "</answer>"
        return text

    def parse_action(self, text: str) -> Action:
        return response_format.parse_action(text, self.searches_empty_query)

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        return response_format.observation(results[0], truncate)

    def invalid_observation(self) -> str:
        return INVALID_ACTION

    def extract_answer(self, response: str) -> str | None:
        return extract_answer(response)
