"""The Method interface: what the base class declares, what a subclass must implement, and the lazy registry."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from evalsuite.agent.method import Method, get_method, list_methods, register_method
from evalsuite.agent.tag_method import TagMethod
from evalsuite.baselines.base import Baseline, OneTurnBaseline


@pytest.mark.parametrize("name", list_methods())
def test_every_method_has_the_attributes_the_base_class_declares(name):
    method = get_method(name)
    declared = typing.get_type_hints(Method)
    assert {"name", "stop", "styles", "kind", "source", "protocol"} <= set(declared)
    for attribute, kind in declared.items():
        value = getattr(method, attribute)
        assert isinstance(value, typing.get_origin(kind) or kind), (name, attribute, value)
    assert method.name == name and method.kind in ("method", "baseline")


def test_a_method_missing_a_hook_cannot_be_made():
    class NoMessages(TagMethod):
        name = "no-messages"

        def observation(self, action, results, truncate):
            return ""

    class NoObservation(Baseline):
        name = "no-observation"

        def parse_action(self, text):
            return None

        def extract_answer(self, response):
            return None

    with pytest.raises(TypeError, match="messages"):
        NoMessages()
    with pytest.raises(TypeError, match="observation"):
        NoObservation()


def test_one_turn_baselines_answer_with_their_answer_rule():
    for name in ("direct", "cot", "naive-rag"):
        method = get_method(name)
        assert isinstance(method, OneTurnBaseline)
        action = method.parse_action("Paris\nSo the answer is: Lyon\n")
        assert action.kind == "answer" and action.answer == method.extract_answer("Paris\nSo the answer is: Lyon\n")
    assert get_method("cot").parse_action("It is in France.\nSo the answer is: Paris").answer == "Paris"
    assert get_method("direct").parse_action("\n  Paris \nmore").answer == "Paris"


def test_a_method_registered_as_a_lazy_target_is_imported_when_asked_for():
    from evalsuite.agent.method import METHODS

    with METHODS.scratch():
        register_method("direct-again", "evalsuite.baselines.direct:Direct")
        assert type(get_method("direct-again")).__name__ == "Direct" and "direct-again" in list_methods()
    assert "direct-again" not in list_methods()


def test_listing_the_methods_imports_no_method_module():
    script = (
        "import sys, evalsuite.agent.method as m; names = m.list_methods(); "
        "print(len(names), sorted(k for k in sys.modules if k.startswith(('evalsuite.baselines', 'evalsuite.agent.methods.', 'evalsuite.methods.search_r1.method'))))"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    assert int(out[0]) == 11 and out[1].strip() == "[]"
