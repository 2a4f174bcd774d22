"""Sampled requests through the openai backend against a real llama.cpp server (llama-cpp-python, SmolLM2-135M).

Each request's seed is its key's hash plus the run's seed, so repeats of one prompt draw different samples and each
is reproducible; a batch's requests that differ only in consecutive seeds (a question's samples) go out as one `n`
request, and a server that ignores `n` (this one answers one choice) is noticed and the rest are sent one by one.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server] (the [demo] or [llamacpp] extra)")

from llama_servers import llama_server, smollm2_gguf  # noqa: E402

from evalsuite.models.base import GenerationRequest, request_seed  # noqa: E402
from evalsuite.models.openai_api import OpenAIBackend  # noqa: E402

PROMPT = "Once upon a time, the sea"


@pytest.fixture(scope="module")
def smol_url(tmp_path_factory) -> str:
    with llama_server(str(smollm2_gguf()), tmp_path_factory.mktemp("smol") / "server.log", n_threads=1, n_ctx=512) as url:
        yield url


def _requests(keys, seed: int = 11) -> list[GenerationRequest]:
    return [GenerationRequest(PROMPT, stop=[], max_tokens=12, temperature=1.0, seed=seed, key=key) for key in keys]


def test_repeats_of_one_prompt_draw_different_reproducible_samples(smol_url):
    backend = OpenAIBackend(smol_url, concurrency=1)
    keys = [("q0", 0), ("q1", 0), ("q2", 0)]  # three trajectories of one prompt, as a GRPO group's first turns
    first = [g.text for g in backend.generate(_requests(keys))]
    assert backend.n_served is None  # their seeds are not consecutive: three single requests, never one `n` request
    assert len(set(first)) == 3, first  # seeds from the key: not three copies of one sample
    again = [g.text for g in backend.generate(_requests(keys))]
    assert again == first  # each sample is reproducible from (seed, key)
    assert len({request_seed(r) for r in _requests(keys)}) == 3


def test_a_questions_samples_go_as_one_n_request_and_a_server_ignoring_n_gets_them_one_by_one(smol_url):
    backend = OpenAIBackend(smol_url, concurrency=1)
    samples = [GenerationRequest(PROMPT, stop=[], max_tokens=12, temperature=1.0, seed=11 + j, key=("q0", 0)) for j in range(3)]
    texts = [g.text for g in backend.generate(samples)]
    assert backend.n_served is False  # asked for n = 3, this server answered one choice: the others went one by one
    assert len(set(texts)) == 3, texts
    assert texts == [backend.generate([r])[0].text for r in samples]  # exactly what the single requests draw


def test_native_n_off_and_greedy_requests_are_never_grouped(smol_url):
    off = OpenAIBackend(smol_url, concurrency=1, native_n="false")
    texts = [g.text for g in off.generate([GenerationRequest(PROMPT, max_tokens=12, temperature=1.0, seed=s, key=("q0", 0)) for s in (1, 2)])]
    assert off.n_served is None and len(texts) == 2  # never asked for n
    greedy = OpenAIBackend(smol_url, concurrency=1)
    requests = [GenerationRequest(PROMPT, stop=["\n"], max_tokens=8, temperature=0.0, key=(q, 0)) for q in ("a", "b")]
    outputs = greedy.generate(requests)
    assert greedy.n_served is None and outputs[0].text == outputs[1].text


def test_an_answer_with_several_choices_is_split_in_choice_order():
    """The parsing of an `n` answer (vLLM serves n; no vLLM server is started here): choices in index order, each
    with the prompt's tokens and no completion count (the answer gives only the total)."""
    from openai.types import Completion, CompletionChoice, CompletionUsage

    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")
    choices = [CompletionChoice(index=1, text="b <search>x", finish_reason="stop", logprobs=None),
               CompletionChoice(index=0, text="a", finish_reason="length", logprobs=None)]
    response = Completion(id="c", choices=choices, created=0, model="m", object="text_completion",
                          usage=CompletionUsage(prompt_tokens=7, completion_tokens=9, total_tokens=16))
    request = GenerationRequest("p", stop=["</search>"], temperature=1.0)
    first, second = backend._parse(response, request, 0.1)
    assert (first.text, first.finish_reason, second.text, second.stop_string) == ("a", "length", "b <search>x</search>", "</search>")
    assert first.prompt_tokens == second.prompt_tokens == 7 and first.completion_tokens is None
