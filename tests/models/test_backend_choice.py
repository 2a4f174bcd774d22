"""Engines chosen by what is installed (issue 39.4): a `.gguf` runs on xllamacpp (a prebuilt wheel, in `[demo]`) when
it is installed, else on llama-cpp-python (a source build); why is recorded as bookkeeping, never compared on resume."""

from __future__ import annotations

import importlib.util

from evalsuite.agent.resume_check import settings_differences
from evalsuite.models.registry import backend_choice
from evalsuite.runs import Manifest
from tests.conftest import requires_extra


@requires_extra("demo", "xllamacpp")
def test_a_gguf_picks_the_engine_that_is_installed(monkeypatch):
    assert importlib.util.find_spec("xllamacpp") is not None  # [demo] and [test] install it
    assert backend_choice("/models/My-Model.Q4.GGUF") == ("xllamacpp", "a .gguf file, and xllamacpp is installed")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xllamacpp" else real(name, *a))
    assert backend_choice("/models/model.gguf") == ("llamacpp", "a .gguf file, and xllamacpp is not installed")


def test_the_other_guesses():
    assert backend_choice("http://127.0.0.1:8000/v1")[0] == "openai"
    assert backend_choice("runs/recording.jsonl")[0] == "replay"
    assert backend_choice("Qwen/Qwen2.5-3B-Instruct")[0] == "hf"


def test_why_the_backend_was_chosen_is_not_a_setting_but_the_backend_is():
    base = {"evalsuite_version": "x", "created_at": "2026-12-03T00:00:00"}
    chosen = Manifest(**base, backend={"backend": "xllamacpp", "chosen_by": "a .gguf file, and xllamacpp is installed"})
    given = Manifest(**base, backend={"backend": "xllamacpp"})
    other = Manifest(**base, backend={"backend": "llamacpp", "chosen_by": "a .gguf file, and xllamacpp is not installed"})
    assert settings_differences(chosen, given) == []
    assert settings_differences(chosen, other) == ["backend backend: the run has 'xllamacpp', this command has 'llamacpp'"]
