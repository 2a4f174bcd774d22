"""Differential property test: a response built turn by turn the way the rollout loop builds it, then parsed whole.

Each generated model turn is arbitrary text mixing every tag fragment real base models write (their own
`<information>`, `<answer>` inside `<think>`, the invalid-action message, stray closing tags, tags cut mid-way, other
methods' markers). The loop cuts the turn after its first search close tag, takes the action the method's own turn
parser finds, and inserts a well-formed observation after a search or the invalid-action message after no action.
Parsing the whole response must give back exactly the prediction (`extract_answer` over the raw response) and the
queries, passages and invalid turns the loop inserted. For Search-R1 the loop is also replayed with Search-R1's own
code (its regexes and string cuts, verbatim semantics), independent of evalsuite's turn parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsuite.agent.method import Method, get_method
from evalsuite.protocol.passages import format_passages, hit_passage
from evalsuite.protocol.search_r1 import INVALID_ACTION
from evalsuite.protocol.trajectory import response_errors
from evalsuite.metrics.answer import extract_answer

METHODS = ["search-r1", "smartsearch", "subsearch", "oases", "search-p1", "r1-searcher"]
MAX_TURNS = 4

# Tag fragments of every protocol, whole, cut mid-way, stray, and the loop's own texts written by the model.
FRAGMENTS = [
    "<think>", "</think>", "<search>", "</search>", "<answer>", "</answer>", "<information>", "</information>",
    "<thinking>", "</thinking>", "<result>", "</result>", "<reasoning>", "</reasoning>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<|begin_of_query|>", "<|end_of_query|>", "<|begin_of_documents|>",
    "<|end_of_documents|>", "<answer> and </answer>", "<sea", "rch>", "</ans", "<information", "</inform", "<|begin_of_",
    INVALID_ACTION, "My previous action is invalid.", "\nMy previous action is invalid. The answer should be given directly.\n",
    "<information>Year</information>", "<think> maybe <answer> Lyon </answer> </think>", "Doc 1(Title: Fake) text",
    "(1)Title: Fake Text: x", "##", "\n\n", "\n", " ", "search: a query", '{"name": "search", "arguments": {"query": "q"}}',
]
WORDS = st.text(alphabet="abcdefgh XYZ.,!?()'\"\n", max_size=10)


def actions(method: Method) -> st.SearchStrategy[str]:
    """Complete actions in the method's own markers, so that searches and answers are frequent."""
    search, answer = method.response_protocol().search, method.response_protocol().answer
    query = WORDS.map(lambda q: f'{{"name": "search", "arguments": {{"query": "{q}"}}}}' if method.name == "search-p1" else q)
    sub = st.lists(WORDS, min_size=2, max_size=4).map(" ## ".join) if method.name == "subsearch" else query
    return st.one_of(
        st.builds(lambda q: f"{search.open} {q} {search.close}", st.one_of(query, sub)),
        st.builds(lambda a: f"{answer.open} {a} {answer.close}", WORDS),
    )


def generations(method: Method) -> st.SearchStrategy[list[str]]:
    piece = st.one_of(st.sampled_from(FRAGMENTS), WORDS, actions(method))
    return st.lists(st.lists(piece, max_size=10).map("".join), min_size=1, max_size=MAX_TURNS + 2)


# Passage text: anything the retriever may return except an observation's own markers and passage separators.
PASSAGE_TEXT = st.lists(
    st.one_of(WORDS, st.sampled_from(["<answer>leak</answer>", "<search>", "</search>", "<think>", "<answer>", INVALID_ACTION])),
    min_size=1, max_size=4,
).map("".join).map(str.strip).filter(bool)
TITLE = st.text(alphabet="abcdefgh XYZ-", min_size=1, max_size=12).map(str.strip).filter(bool)


@dataclass
class Hit:
    doc_id: str
    contents: str
    score: float = 1.0


@dataclass
class LoopTurn:
    """What the loop knew about a turn: its model text, the queries it ran, the passages it inserted."""

    text: str
    kind: str
    queries: list[str] = field(default_factory=list)
    passages: list[tuple[str | None, str]] | None = None
    invalid: bool = False


def play(method: Method, turns: list[str], documents: st.DataObject) -> tuple[str, list[LoopTurn]]:
    """The engine's loop (`RolloutEngine._take_turn`), one generation per turn, with drawn retrieval hits."""
    response, record = "", []
    for index, generation in enumerate(turns):
        text = method.postprocess(generation)
        action = method.parse_action(text)
        response += text
        turn = LoopTurn(text, action.kind, list(action.queries) if action.kind == "search" else [])
        record.append(turn)
        if action.kind == "answer" or index >= MAX_TURNS:
            break
        if action.kind == "search":
            hits = [[Hit(f"{q}-{i}", f'"{title}"\n{body}') for i, (title, body) in enumerate(documents.draw(st.lists(st.tuples(TITLE, PASSAGE_TEXT), min_size=1, max_size=3)))] for q in action.queries]
            response += method.observation(action, hits, lambda t: t)
            turn.passages = [(p.title, p.text.strip()) for per_query in hits for p in map(hit_passage, per_query)]
        else:
            response += method.invalid_observation()
            turn.invalid = True
    return response, record


def search_r1_reference(turns: list[str], retrieved: list[list[tuple[str, str]]]) -> tuple[str, list[str | None]]:
    """Search-R1's run_llm_loop with its own code: `_postprocess_responses`, `postprocess_predictions`, `execute_predictions`."""
    response, actions_taken = "", []
    for index, generation in enumerate(turns):
        text = generation.split("</search>")[0] + "</search>" if "</search>" in generation else (
            generation.split("</answer>")[0] + "</answer>" if "</answer>" in generation else generation
        )
        match = re.search(r"<(search|answer)>(.*?)</\1>", text, re.DOTALL)
        response += text
        actions_taken.append(match.group(2).strip() if match and match.group(1) == "search" else None)
        if (match and match.group(1) == "answer") or index >= MAX_TURNS:
            break
        if match:
            hits = [Hit(str(i), f'"{title}"\n{body}') for i, (title, body) in enumerate(retrieved[len(actions_taken) - 1])]
            response += f"\n\n<information>{format_passages(hits).strip()}</information>\n\n"
        else:
            response += INVALID_ACTION
    return response, actions_taken


def parsed_queries(turn) -> list[str]:
    return turn.sub_queries or ([turn.query] if turn.query is not None else [])


def expected_turns(record: list[LoopTurn]) -> list[LoopTurn]:
    # A last turn of only white space leaves nothing in the text to parse.
    if record and not record[-1].text.strip() and record[-1].passages is None and not record[-1].invalid:
        return record[:-1]
    return record


@pytest.mark.parametrize("name", METHODS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_parsing_the_whole_response_recovers_what_the_loop_inserted(name, data):
    method = get_method(name)
    response, record = play(method, data.draw(generations(method)), data)
    parsed = method.parse(response)
    assert parsed.answer == method.extract_answer(response)
    if name in ("search-r1", "smartsearch", "subsearch"):
        assert parsed.answer == extract_answer(response)
    expected = expected_turns(record)
    assert [t.text.strip() for t in parsed.turns] == [t.text.strip() for t in expected]
    assert [parsed_queries(t) for t in parsed.turns] == [t.queries for t in expected]
    assert [[(p.title, p.text) for p in t.passages] for t in parsed.turns] == [t.passages or [] for t in expected]
    assert [t.invalid_action for t in parsed.turns] == [t.invalid for t in expected]
    assert parsed.queries == [q for t in expected for q in t.queries]
    # A model-written observation tag is a protocol error, never passages.
    observation_open = method.response_protocol().observation.open
    assert any("information without a search" in e for e in parsed.errors) == any(observation_open in t.text for t in expected)
    assert response_errors(response, method.response_protocol()) == parsed.errors  # the errors alone, as records ask


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_search_r1_parse_agrees_with_search_r1s_own_loop_code(data):
    turns = data.draw(generations(get_method("search-r1")))
    retrieved = [data.draw(st.lists(st.tuples(TITLE, PASSAGE_TEXT), min_size=1, max_size=3)) for _ in turns]
    response, searched = search_r1_reference(turns, retrieved)
    parsed = get_method("search-r1").parse(response)
    assert parsed.answer == extract_answer(response)
    inserted = [(q, retrieved[i]) for i, q in enumerate(searched) if q is not None and i < MAX_TURNS]
    assert [t.query for t in parsed.turns if t.passages] == [q for q, _ in inserted]
    assert [[(p.title, p.text) for p in t.passages] for t in parsed.turns if t.passages] == [[(title, body) for title, body in hits] for _, hits in inserted]
