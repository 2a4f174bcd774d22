"""Rollouts generate in the trainer's precision: a `bf16: true` trainer keeps fp32 weights and computes its forward
passes under bf16 autocast, and the rollout backend (`TrainerBackend(bf16=True)`, which `policy_backend` builds from
the trainer's `args.bf16`) generates under the same autocast. Real model: the packaged Qwen2.5-Coder-0.5B directory."""

from __future__ import annotations

import importlib.util

import pytest

from evalsuite.models.base import GenerationRequest
from evalsuite.models.packaged import QWEN_CODER_INSTALL, QWEN_CODER_PARTS
from evalsuite.models.precision import cpu_supports_bf16

pytestmark = [
    pytest.mark.skipif(
        not all(importlib.util.find_spec(p.replace("-", "_")) for p in QWEN_CODER_PARTS),
        reason=f"needs the packaged Qwen2.5-Coder-0.5B: {QWEN_CODER_INSTALL}",
    ),
    pytest.mark.skipif(not cpu_supports_bf16(), reason="this CPU has no native bf16 (amx_bf16/avx512_bf16)"),
]


@pytest.mark.slow  # loads the 2.5 GB fp32 directory (built on first use, about 60 s)
def test_the_rollout_backend_generates_under_the_trainers_bf16_autocast():
    import transformers

    from evalsuite.models.packaged import resolve_model
    from evalsuite.training.backend import TrainerBackend

    directory = resolve_model("qwen2.5-coder-0.5b")
    model = transformers.AutoModelForCausalLM.from_pretrained(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    seen = []
    model.lm_head.register_forward_hook(lambda module, inputs, output: seen.append(output.dtype))
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France? Answer with one word."}],
        tokenize=False,
        add_generation_prompt=True,
    )
    texts = {}
    for bf16 in (False, True):
        seen.clear()
        backend = TrainerBackend(model, tokenizer, bf16=bf16)
        [generation] = backend.generate([GenerationRequest(prompt, max_tokens=8)])
        texts[bf16] = generation.text
        assert set(map(str, seen)) == {"torch.bfloat16" if bf16 else "torch.float32"}
        assert backend.info()["dtype"] == ("bfloat16 autocast" if bf16 else "float32")
    assert texts == {False: "Paris", True: "Paris"}
    assert next(model.parameters()).dtype.is_floating_point and str(next(model.parameters()).dtype) == "torch.float32"
