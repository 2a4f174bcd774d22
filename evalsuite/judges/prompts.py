"""Judge prompt templates: each is versioned by the hash of
its text, which keys the cache and is recorded in the run."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True)
class PromptTemplate:
    """A system and a user message with `{field}` slots; `hash` changes whenever the wording does."""

    name: str
    system: str
    user: str
    fields: tuple[str, ...] = field(default_factory=tuple)

    @property
    def hash(self) -> str:
        return hashlib.sha256(f"{self.name}\0{self.system}\0{self.user}".encode()).hexdigest()[:16]

    def messages(self, values: dict[str, str]) -> list[dict[str, str]]:
        """The chat messages for one input; every declared field must be given."""
        missing = [name for name in self.fields if name not in values]
        if missing:
            raise KeyError(f"prompt {self.name!r} needs fields {missing}")
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.format(**{k: values[k] for k in self.fields})},
        ]


# The verdict comes first in the requested JSON so that a reply cut by max_tokens still carries it.
_VERDICT_FORMAT = (
    'Reply with one JSON object and nothing else: {"verdict": true or false, "rationale": "<one short sentence>"}.'
)

COMPLETENESS = PromptTemplate(
    name="completeness",
    system="You evaluate the search queries a question-answering agent issued. " + _VERDICT_FORMAT,
    user=(
        "Complex question: {question}\n\nSearch queries the agent issued:\n{queries}\n\n"
        "Do these search queries, taken together, cover every key piece of information needed to answer "
        "the complex question? Answer true only if no needed piece is missing."
    ),
    fields=("question", "queries"),
)

GRANULARITY = PromptTemplate(
    name="granularity",
    system="You evaluate one search query issued by a question-answering agent. " + _VERDICT_FORMAT,
    user=(
        "Complex question: {question}\n\nSearch query: {query}\n\n"
        "Does this search query ask for exactly one atomic piece of information, without bundling several "
        "sub-questions or operations (comparisons, intersections) into one query?"
    ),
    fields=("question", "query"),
)

COVERAGE_MATCH = PromptTemplate(
    name="coverage_match",
    system="You compare two search queries written for the same complex question. " + _VERDICT_FORMAT,
    user=(
        "Complex question: {question}\n\nPolicy query: {policy_query}\nReference query: {teacher_query}\n\n"
        "Do the two queries ask for the same information at the same granularity (same entity, same "
        "attribute or relation, neither bundling extra sub-questions)?"
    ),
    fields=("question", "policy_query", "teacher_query"),
)

USEFULNESS = PromptTemplate(
    name="usefulness",
    system="You evaluate one search step of a question-answering agent. " + _VERDICT_FORMAT,
    user=(
        "Question: {question}\nGold answer: {answer}\n\nEarlier search steps:\n{history}\n\n"
        "Current search query: {query}\nDocuments it retrieved:\n{documents}\n\n"
        "Was this query necessary for answering the question, and do the retrieved documents address what "
        "it asked for?"
    ),
    fields=("question", "answer", "history", "query", "documents"),
)

# acc_judge (evalsuite.judges.evaluate): whether the prediction answers the question, given the gold answers. EM
# under-credits a right answer worded otherwise ("Thomas Jefferson" against "Jefferson", a paraphrase); the judge
# is told to credit those and nothing that changes the answer.
ANSWER_ACCURACY = PromptTemplate(
    name="answer_accuracy",
    system="You grade the final answer of a question-answering agent against the gold answers. " + _VERDICT_FORMAT,
    user=(
        "Question: {question}\nGold answers (any one is correct): {golds}\nAgent's answer: {prediction}\n\n"
        "Is the agent's answer correct? Count it correct when it names the same entity, value or fact as one gold "
        "answer, even if worded differently, more or less fully (a full name for a surname, a paraphrase, another "
        "unit of the same value). Count it wrong when it is a different answer, hedges between several, or is empty."
    ),
    fields=("question", "golds", "prediction"),
)

TEACHER_QUERIES = PromptTemplate(
    name="teacher_queries",
    system=(
        "You decompose complex questions into the essential search queries a search engine needs, one atomic "
        'piece of information per query. Reply with one JSON object and nothing else: {"queries": ["...", "..."]}.'
    ),
    user="Complex question: {question}\n\nList the essential search queries, in the order they must be asked.",
    fields=("question",),
)

TEMPLATES: dict[str, PromptTemplate] = {
    t.name: t for t in (COMPLETENESS, GRANULARITY, COVERAGE_MATCH, USEFULNESS, ANSWER_ACCURACY, TEACHER_QUERIES)
}
