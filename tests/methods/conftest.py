"""Fixtures of the method tests: the seed papers' text, a small real BM25 index, and a rule-driven test backend."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from evalsuite.models.base import Backend, Generation, GenerationRequest, cut_at_stop
from tests.conftest import require_seeds



def seed_text(prefix: str) -> str:
    """The text of the seed paper whose file name starts with `prefix` (e.g. '001'); skips without the seeds."""
    seeds = require_seeds()
    matches = sorted(seeds.glob(f"{prefix}_*.txt"))
    if not matches:
        pytest.fail(f"seed paper {prefix} is missing from {seeds}")
    return matches[0].read_text(encoding="utf-8")


class RuleBackend(Backend):
    """Continues a prompt with the output of the first rule whose predicate holds, cut at the stop strings."""

    name = "rules"

    def __init__(self, rules: list[tuple[Callable[[str], bool], str]], default: str = ""):
        self.rules = rules
        self.default = default
        self.requests: list[GenerationRequest] = []

    def generate(self, requests):
        out = []
        for request in requests:
            self.requests.append(request)
            text = next((output for predicate, output in self.rules if predicate(request.prompt)), self.default)
            text, stop = cut_at_stop(text, request.stop)
            out.append(Generation(text=text, completion_tokens=len(text.split()), finish_reason="stop" if stop else "eos", stop_string=stop))
        return out

    def count_tokens(self, text):
        return len(text.split())

    def truncate_tokens(self, text, max_tokens):
        return " ".join(text.split(" ")[:max_tokens])


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory, shared_data) -> Path:
    """The first 400 passages of the real wiki-18 sample."""
    path = tmp_path_factory.mktemp("corpus") / "wiki18_400.jsonl"
    with open(shared_data / "corpus" / "wiki18_sample.jsonl", encoding="utf-8") as source:
        path.write_text("".join(itertools.islice(source, 400)), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def bm25(tmp_path_factory, small_corpus):
    """A real bm25s index over the small corpus, loaded as a retriever."""
    from evalsuite.retrieval import build_index, load_retriever

    out = tmp_path_factory.mktemp("index") / "bm25"
    build_index(str(small_corpus), str(out))
    return load_retriever(str(out))
