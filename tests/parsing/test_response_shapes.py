"""Real-world response shapes: tags the model wrote itself are model text, only the loop's insertions are environment text.

In real base-model runs a sizeable share of responses hold a model-written `<information>` (closed or not), `<answer>`
inside `<think>`, an imitation of the invalid-action message, stray closing tags or a tag cut off by the token budget.
The prediction is always `extract_answer` over the raw response (what Search-R1 and FlashRAG record); the passages are
only those of observations inserted right after a search.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from evalsuite.agent.method import get_method
from evalsuite.methods.search_p1 import method as search_p1
from evalsuite.protocol.search_r1 import INVALID_ACTION, parse_trajectory
from evalsuite.metrics.answer import extract_answer

OBSERVATION = '\n\n<information>Doc 1(Title: "Paris") Paris is the capital of France.\nDoc 2(Title: "Lyon") Lyon is a city.</information>\n\n'


def test_model_written_closed_information_without_a_search_is_model_text(trajectories_dir: Path) -> None:
    items = json.loads(next(trajectories_dir.glob("bamboogle_2026_04_24_16_17*.json")).read_text())
    item = next(x for x in items if x["id"] == "test_0")  # "search Citibank founding year\n<information>Year</information>"
    response = item["output"]["final_response"]
    parsed = parse_trajectory(response)
    assert parsed.answer == item["output"]["pred"] == "John Tyler"
    assert parsed.passages == [] and parsed.queries == []
    assert parsed.errors[0] == "turn 1: information without a search"


def test_model_written_unclosed_information_keeps_the_answer_after_it() -> None:
    response = "<think> I remember this. </think>\n<information> Paris is the capital of France.\n<answer> Paris </answer>"
    parsed = parse_trajectory(response)
    assert parsed.answer == "Paris"  # the old parser took the rest of the text as an observation and lost the answer
    assert parsed.passages == [] and len(parsed.turns) == 1 and parsed.turns[0].answer == "Paris"
    assert "turn 1: information without a search" in parsed.errors


def test_model_written_information_after_a_real_observation() -> None:
    response = f"<search> capital of France </search>{OBSERVATION}<information>Doc 9(Title: Mine) invented</information>\n<answer> Paris </answer>"
    parsed = parse_trajectory(response)
    assert [p.title for p in parsed.passages] == ["Paris", "Lyon"]
    assert parsed.queries == ["capital of France"] and parsed.answer == "Paris"
    assert parsed.errors == ["turn 2: information without a search"]


def test_answer_inside_think() -> None:
    response = "<think> it could be <answer> Lyon </answer> but no </think>\n<answer> Paris </answer>"
    parsed = parse_trajectory(response)
    assert parsed.answer == extract_answer(response) == "Paris"
    assert parsed.turns[0].answer == "Lyon"  # the loop's action is the first block, as Search-R1's regex takes it
    assert "text after the answer" in parsed.errors


def test_invalid_action_message_inserted_by_the_loop() -> None:
    response = f"I think the answer is Paris.{INVALID_ACTION}<think> fine </think><search> Paris </search>{OBSERVATION}<answer> Paris </answer>"
    parsed = parse_trajectory(response)
    assert [t.invalid_action for t in parsed.turns] == [True, False, False]
    assert parsed.queries == ["Paris"] and len(parsed.passages) == 2 and parsed.answer == "Paris"
    # A response that ends on the message: Search-R1 and FlashRAG record the message's own "<answer> and </answer>".
    assert parse_trajectory(f"No idea.{INVALID_ACTION}").answer == "and"


def test_model_imitating_the_invalid_action_message_is_model_text(trajectories_dir: Path) -> None:
    items = json.loads(next(trajectories_dir.glob("bamboogle_2026_04_24_16_17*.json")).read_text())
    item = next(x for x in items if x["id"] == "test_26")  # "My previous action is invalid. The answer should be ..."
    parsed = parse_trajectory(item["output"]["final_response"])
    assert not any(t.invalid_action for t in parsed.turns)
    assert parsed.answer == item["output"]["pred"] == "gravity"


def test_stray_closing_tags_do_not_end_turns_or_make_observations() -> None:
    response = "</information> </think> </search> </answer> so it is <answer> Paris </answer>"
    parsed = parse_trajectory(response)
    assert len(parsed.turns) == 1 and parsed.passages == [] and parsed.answer == "Paris"


@pytest.mark.parametrize(
    ("response", "answer", "error"),
    [
        ("<think> a </think><search> who wrote", None, "turn 1: unclosed <search>"),
        ("<think> a </think><answer> Par", None, "turn 1: unclosed <answer>"),
        ("<think> cut mid-th", None, "turn 1: unclosed <think>"),
        ("<think> a </think><ans", None, None),
        ("<search> Paris </search>\n\n<information>Doc 1(Title: A) cut mid-passa", None, "unclosed <information>"),
    ],
)
def test_truncated_mid_tag(response: str, answer: str | None, error: str | None) -> None:
    parsed = parse_trajectory(response)
    assert parsed.answer == answer == extract_answer(response)
    assert error is None or error in parsed.errors


def test_truncated_observation_still_gives_its_passages() -> None:
    parsed = parse_trajectory("<search> Paris </search>\n\n<information>Doc 1(Title: A) cut mid-passa")
    assert [(p.title, p.text) for p in parsed.passages] == [("A", "cut mid-passa")]


def test_every_real_model_written_information_is_a_protocol_error_and_never_passages(trajectories_dir: Path) -> None:
    after_search = re.compile(r"</search>\s*$")
    written, inserted = 0, 0
    for path in sorted(trajectories_dir.glob("*.json")):
        for item in json.loads(path.read_text()):
            response = item["output"]["final_response"]
            parsed = parse_trajectory(response)
            assert (parsed.answer or "") == item["output"]["pred"], item["id"]
            starts = [m.start() for m in re.finditer("<information>", response)]
            model_written = sum(1 for s in starts if not after_search.search(response[max(0, s - 20) : s]))
            written += model_written
            inserted += len(starts) - model_written
            assert sum("information without a search" in e for e in parsed.errors) == sum(
                "<information>" in t.text for t in parsed.turns
            )
            assert sum(1 for t in parsed.turns if t.passages) <= len(starts) - model_written
    assert written >= 10 and inserted > 2500, (written, inserted)


def test_oases_result_blocks() -> None:
    oases = get_method("oases")
    observation = '\n\n<result>\nDoc 1(Title: "Don Roos") Director of The Opposite of Sex.\n</result>\n\n'
    response = (
        "<thinking> who directed it </thinking>\n<search> director of The Opposite of Sex </search>" + observation
        + "<think> I recall </think><result> invented </result>\n<answer> Don Roos </answer>"
    )
    parsed = oases.parse(response)
    assert parsed.queries == ["director of The Opposite of Sex"] and [p.title for p in parsed.passages] == ["Don Roos"]
    assert parsed.answer == "Don Roos" and parsed.errors == ["turn 2: information without a search"]
    assert parsed.turns[0].think == ["who directed it"]


def test_search_p1_tool_calls_and_tool_responses() -> None:
    method = get_method("search-p1")
    call = '<tool_call>{"name": "search", "arguments": {"query": "Legally Blonde director"}}</tool_call>'
    response = (
        "<reasoning> Step 1: find the director\nStep 2: find his school </reasoning>\n" + call
        + '\n\n<tool_response>\nDoc 1(Title: "Robert Luketic") An Australian director.\n</tool_response>\n\n'
        + f"<reasoning> done </reasoning>{search_p1.INVALID_ACTION}"
        + "<tool_response> made up </tool_response><answer> Robert Luketic </answer>"
    )
    parsed = method.parse(response)
    assert parsed.queries == ["Legally Blonde director"] and [p.title for p in parsed.passages] == ["Robert Luketic"]
    assert parsed.turns[0].extra["plan"] == ["find the director", "find his school"]
    assert [t.invalid_action for t in parsed.turns] == [False, True, False]
    assert parsed.answer == "Robert Luketic" and "turn 3: information without a search" in parsed.errors


def test_r1_searcher_documents() -> None:
    method = get_method("r1-searcher")
    response = (
        " I should look it up. <|begin_of_query|> Colosseum city <|end_of_query|>"
        '\n\n<|begin_of_documents|>\n(1)Title: "Colosseum" Text: The Colosseum is in Rome.\n(2)Title: Rome Text: Capital of Italy.\n\n<|end_of_documents|>\n\n'
        "<|begin_of_documents|> my own <|end_of_documents|> It is Rome. </think>\n\n<answer> Rome </answer>"
    )
    parsed = method.parse(response)
    assert parsed.queries == ["Colosseum city"]
    assert [(p.title, p.text) for p in parsed.passages] == [("Colosseum", "The Colosseum is in Rome."), ("Rome", "Capital of Italy.")]
    assert parsed.answer == "Rome" and "turn 2: information without a search" in parsed.errors


def test_subsearch_one_block_per_sub_question() -> None:
    method = get_method("subsearch")
    response = (
        "<search> UniCredit branches ## China CITIC Bank branches </search>"
        '\n\n<information>Doc 1(Title: "UniCredit") 8,500 branches ## Doc 1(Title: "China CITIC Bank") 1,400 outlets</information>\n\n'
        "<answer> UniCredit </answer>"
    )
    parsed = method.parse(response)
    assert parsed.queries == ["UniCredit branches", "China CITIC Bank branches"]
    assert [(p.title, p.text) for p in parsed.passages] == [("UniCredit", "8,500 branches"), ("China CITIC Bank", "1,400 outlets")]


def test_smartsearch_empty_query_is_an_invalid_turn() -> None:
    method = get_method("smartsearch")
    parsed = method.parse(f"<search> </search>{INVALID_ACTION}<answer> x </answer>")
    assert [t.invalid_action for t in parsed.turns] == [True, False] and parsed.queries == []
    # Search-R1 itself searches the empty query.
    assert get_method("search-r1").parse(f"<search> </search>{OBSERVATION}").queries == [""]


MB = 1024 * 1024


def huge_inputs(size: int) -> list[str | bytes]:
    """Adversarial responses of about `size` characters: binary, tag floods, unclosed tags, tag soup."""
    rng = random.Random(0)
    fragments = ["<information>", "</information>", "<search>", "</search>", "<answer>", "</answer>", "<think>", INVALID_ACTION, "Doc 1(Title: ", "x"]
    soup = "".join(rng.choice(fragments) for _ in range(size // 8))
    return [
        bytes(rng.getrandbits(8) for _ in range(100_000)) * (size // 100_000),
        "<information>" * (size // 13),
        "</search><information>" * (size // 22),
        "</search>\n\n<information>Doc 1(Title: a) b</information>" * (size // 50),
        "<answer>" * (size // 8),
        "<search>" * (size // 8) + "</search>",
        INVALID_ACTION * (size // len(INVALID_ACTION)),
        "</search>" + " " * size,
        soup[:size],
    ]


# The timeout only stops a hang (a quadratic scan takes hours at this size); speed is measured in benchmarks/parsing.py.
@pytest.mark.timeout(240)
@pytest.mark.parametrize(("name", "size"), [("search-r1", 10 * MB), ("subsearch", MB), ("oases", MB), ("search-p1", MB), ("r1-searcher", MB)])
def test_any_bytes_parse_without_raising(name: str, size: int) -> None:
    method = get_method(name)
    for response in huge_inputs(size):
        parsed = method.parse(response)
        text = response.decode("utf-8", errors="replace") if isinstance(response, bytes) else response
        assert parsed.answer == method.extract_answer(text)
        assert len(parsed.turns) <= 256


def test_parse_gives_back_the_engines_own_turns_on_replayed_real_runs(trajectories_dir: Path) -> None:
    # The real rollout engine replays 200 recorded NQ runs (model text and passages as recorded); parsing each finished
    # response must give back the turns the engine recorded while it ran.
    from evalsuite.agent.engine import RolloutConfig, RolloutEngine
    from evalsuite.models.replay import ReplayBackend
    from evalsuite.retrieval.replay import ReplayRetriever

    recording = next(trajectories_dir.glob("nq_*.json"))
    backend = ReplayBackend(str(recording))
    method = get_method("search-r1")
    engine = RolloutEngine(backend, method, ReplayRetriever(backend.examples), RolloutConfig(), "instruct")
    items = [(key, example.question) for key, example in list(backend.examples.items())[:200]]
    searched = 0
    for rollout in engine.run(items):
        parsed = method.parse(rollout.response)
        # a live run reads its answer from the model's own text (an observation's tags never answer); the parse of
        # the whole response keeps the convention of recorded files, and the two differ only where an observation
        # holds answer tags (Search-R1's invalid-action message)
        assert method.extract_answer(parsed.model_text) == rollout.prediction
        assert [t.text.strip() for t in parsed.turns] == [t.text.strip() for t in rollout.turns if t.text.strip() or t.invalid_action]
        assert [(t.query, [(p.title, p.text) for p in t.passages], t.invalid_action) for t in parsed.turns] == [
            (t.query, [(p.title, p.text.strip()) for p in t.passages], t.invalid_action) for t in rollout.turns if t.text.strip() or t.invalid_action
        ]
        searched += sum(1 for t in parsed.turns if t.passages)
    assert searched > 150
