"""IRCoT (Trivedi et al., 2023): each chain-of-thought sentence becomes the next retrieval query, passages accumulate.

Prompt: FlashRAG's `IRCOTPipeline` (RUC-NLPIR/FlashRAG `flashrag/pipeline/active_pipeline.py`), verbatim: its
instruction and one demonstration as the system text, `{reference}Question: {question}\nThought:` as the user text,
references as `Wikipedia Title: {title}\n{text}\n\n`, always a raw prompt (FlashRAG sets `enable_chat=False`).
Loop: retrieve with the question first; each turn generates one thought (the first sentence, as in the IRCoT paper),
which is the next query unless it says "So the answer is:"; up to `--max-turns` steps (FlashRAG uses 5).
Adaptation to the append-only loop: FlashRAG rebuilds the prompt with all passages each step; we append each step's
new passages after the thought, followed by `Thought:`, so every passage retrieved so far stays in the context.
The answer is the first line after "So the answer is:" (FlashRAG `ircot_pred_parse`); a chain that never says it
has no prediction (FlashRAG scores the whole chain).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from evalsuite.agent.method import Action, ChatRenderer, HitLike
from evalsuite.agent.tag_method import render_plain
from evalsuite.baselines.base import ANSWER_MARKER, Baseline, after_marker
from evalsuite.protocol.passages import split_contents

INSTRUCTION = (
    "You serve as an intelligent assistant, adept at facilitating users through complex, multi-hop reasoning across "
    "multiple documents. This task is illustrated through demonstrations, each consisting of a document set paired with "
    "a relevant question and its multi-hop reasoning thoughts. Your task is to generate one thought for current step, "
    "DON'T generate the whole thoughts at once! If you reach what you believe to be the final step, start with "
    '"So the answer is:".'
)
EXAMPLE = (
    "Wikipedia Title: Kurram Garhi\nKurram Garhi is a small village located near the city of Bannu, which is the part of "
    "Khyber Pakhtunkhwa province of Pakistan. Its population is approximately 35000. Barren hills are near this village. "
    "This village is on the border of Kurram Agency. Other nearby villages are Peppal, Surwangi and Amandi Kala.\n\n"
    "Wikipedia Title: 2001–02 UEFA Champions League second group stage\nEight winners and eight runners- up from the "
    "first group stage were drawn into four groups of four teams, each containing two group winners and two runners- "
    "up. Teams from the same country or from the same first round group could not be drawn together. The top two teams "
    "in each group advanced to the quarter- finals.\n\n"
    "Wikipedia Title: Satellite tournament\nA satellite tournament is either a minor tournament or event on a "
    "competitive sporting tour or one of a group of such tournaments that form a series played in the same country or "
    "region.\n\n"
    "Wikipedia Title: Trojkrsti\nTrojkrsti is a village in Municipality of Prilep, Republic of Macedonia.\n\n"
    "Wikipedia Title: Telephone numbers in Ascension Island\nCountry Code:+ 247< br> International Call Prefix: 00 "
    "Ascension Island does not share the same country code( +290) with the rest of St Helena.\n\n"
    "Question: Are both Kurram Garhi and Trojkrsti located in the same country?\n"
    "Thought: Kurram Garhi is located in the country of Pakistan. Trojkrsti is located in the country of Republic of "
    "Macedonia. Thus, they are not in the same country. So the answer is: no.\n\n"
)
SYSTEM = f"{INSTRUCTION}\n\n{EXAMPLE}"
USER = "{reference}Question: {question}\nThought:"
REFERENCE = "Wikipedia Title: {title}\n{text}\n\n"
# A sentence ends at . ! or ? followed by white space (so "U.S." inside a sentence mostly survives).
_SENTENCE_END = re.compile(r"[.!?](?=\s)")


def format_references(hits: Sequence[HitLike]) -> str:
    """FlashRAG's IRCoT reference template over hits (the title keeps its wiki-18 quotes, as FlashRAG's does)."""
    out = ""
    for hit in hits:
        title, text = split_contents(hit.contents)
        out += REFERENCE.format(title=title, text=text)
    return out


def first_sentence(text: str) -> str:
    """The first line of `text`, cut after its first sentence unless the line carries the answer marker."""
    line = text.split("\n", 1)[0]
    if ANSWER_MARKER in line:
        return line
    match = _SENTENCE_END.search(line)
    return line[: match.end()] if match else line


class IRCoT(Baseline):
    """Interleaved retrieval and chain of thought; a thought is a query until it gives the answer."""

    name = "ircot"
    styles = ("base",)
    stop = ("\n",)
    source = "FlashRAG flashrag/pipeline/active_pipeline.py IRCOTPipeline prompt and demonstration, verbatim; loop of Trivedi et al. (2023)"
    protocol = "retrieve with the question; each turn = one thought sentence = next query; 'So the answer is:' ends; passages appended as 'Wikipedia Title: t\\ntext'"

    def initial_queries(self, question: str) -> list[str]:
        return [question]

    def messages(self, question: str, reference: str = "{reference}") -> list[dict[str, str]]:
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER.format(reference=reference, question=question)}]

    def prompt_with_passages(
        self, question: str, style: str, chat: ChatRenderer, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]
    ) -> str:
        reference = truncate(format_references([hit for hits in results for hit in hits]))
        return render_plain(self.messages(question, reference))

    def postprocess(self, text: str) -> str:
        return first_sentence(text)

    def parse_action(self, text: str) -> Action:
        thought = text.strip()
        if ANSWER_MARKER in thought:
            return Action("answer", answer=after_marker(thought) or "", think=[thought])
        if not thought:
            return Action("invalid", extra={"invalid_reason": "empty thought"})
        return Action("search", queries=[thought], think=[thought])

    def observation(self, action: Action, results: Sequence[Sequence[HitLike]], truncate: Callable[[str], str]) -> str:
        return f"\n\n{truncate(format_references(results[0]))}Thought:"

    def invalid_observation(self) -> str:
        return "\nThought:"

    def extract_answer(self, response: str) -> str | None:
        at = response.rfind(ANSWER_MARKER)
        return after_marker(response[at:]) if at != -1 else None
