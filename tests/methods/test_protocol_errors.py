"""Protocol errors are judged by each method's own protocol, not by Search-R1's (a `<result>` observation is not an
error for OASES; an unclosed marker or a turn without an action is one for every tag method)."""

from __future__ import annotations

from evalsuite.agent.method import get_method
from evalsuite.runs.schema import Turn


def test_oases_observations_are_not_search_r1_errors():
    oases = get_method("oases")
    response = "<think> find it </think>\n<search> Jaws director </search>\n\n<result>\nDoc 1(Title: Jaws) Spielberg\n</result>\n\n<think> so </think>\n<answer> Spielberg </answer>"
    turns = [Turn(text="<think> find it </think>\n<search> Jaws director </search>", query="Jaws director"),
             Turn(text="<think> so </think>\n<answer> Spielberg </answer>", answer="Spielberg")]
    assert oases.protocol_errors(response, turns) == []
    # Search-R1's parser reads the same response as broken: it expects <information>
    assert get_method("search-r1").protocol_errors(response, turns) != []


def test_tag_methods_report_unclosed_markers_and_turns_without_an_action():
    for name in ("oases", "search-p1", "subsearch", "r1-searcher"):
        method = get_method(name)
        think = method.thinks[0]
        turns = [Turn(text=f"{think.open} cut by the budget", invalid_action=True), Turn(text=f"{method.answer.open} x {method.answer.close}", answer="x")]
        assert method.protocol_errors("", turns) == ["turn 1: no valid action", f"turn 1: unclosed {think.open}"], name


def test_baselines_only_report_turns_without_an_action():
    direct = get_method("direct")
    assert direct.protocol_errors("<think> unclosed", [Turn(text="<think> unclosed")]) == []
