"""bf16 on the CPU (`evalsuite.models.precision`): native support read from the CPU's flags, and one line refusing a
bf16 setting (hf backend dtype, a training config's bf16) on a CPU without it. The flag lines are real
/proc/cpuinfo lines: this project's Xeon (AMX and AVX512-BF16) and a Skylake-SP Xeon (AVX-512, no bf16)."""

from __future__ import annotations

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.models import precision
from evalsuite.training.config import load_config

# /proc/cpuinfo of the Xeon these tests were written on (flags shortened to the AVX-512 and AMX part)
SAPPHIRE = (
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n"
    "flags\t\t: fpu avx2 avx512f avx512dq avx512bw avx512vl avx_vnni avx512_bf16 avx512_vnni amx_bf16 amx_tile amx_int8\n"
)
# an Intel Xeon Gold 6148 (Skylake-SP): AVX-512 without any bf16 instruction
SKYLAKE = (
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz\n"
    "flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht "
    "syscall nx pdpe1gb rdtscp lm constant_tsc avx f16c rdrand avx2 avx512f avx512dq avx512cd avx512bw avx512vl\n"
)


@pytest.fixture
def skylake(tmp_path, monkeypatch):
    path = tmp_path / "cpuinfo"
    path.write_text(SKYLAKE)
    monkeypatch.setattr(precision, "CPUINFO", path)
    return path


def test_native_bf16_is_read_from_the_flags(tmp_path):
    (tmp_path / "sapphire").write_text(SAPPHIRE)
    (tmp_path / "skylake").write_text(SKYLAKE)
    assert precision.native_bf16_flag(tmp_path / "sapphire") == "amx_bf16"
    assert precision.native_bf16_flag(tmp_path / "skylake") is None
    assert precision.native_bf16_flag(tmp_path / "missing") is None  # no /proc/cpuinfo: taken as no bf16
    assert precision.is_bf16("bf16") and precision.is_bf16("bfloat16") and not precision.is_bf16("float32")


def test_a_cpu_without_bf16_is_refused_in_one_line(skylake):
    with pytest.raises(EvalsuiteError, match="grpo.bf16: this CPU has no native bf16") as caught:
        precision.require_cpu_bf16("grpo.bf16")
    assert "\n" not in caught.value.message and "bf16: false" in caught.value.hint


def test_the_hf_backend_refuses_bf16_before_loading_anything(skylake):
    from evalsuite.models.hf import HFBackend

    pytest.importorskip("torch")
    with pytest.raises(EvalsuiteError, match="--backend hf with dtype bfloat16: this CPU has no native bf16"):
        HFBackend("/nonexistent/model", dtype="bf16")
    with pytest.raises(EvalsuiteError, match="the hf backend has no dtype 'float13'"):
        HFBackend("/nonexistent/model", dtype="float13")


@pytest.mark.parametrize("grpo", ["{bf16: true, use_cpu: true}", "{use_cpu: true, model_init_kwargs: {dtype: bfloat16}}"])
def test_a_training_config_with_bf16_on_such_a_cpu_is_refused_at_load(skylake, tmp_path, grpo):
    path = tmp_path / "recipe.yaml"
    path.write_text(f"method: search-r1\ngrpo: {grpo}\n")
    with pytest.raises(EvalsuiteError, match=r"recipe.yaml: grpo\.(bf16|model_init_kwargs.dtype): this CPU has no"):
        load_config(path)
    path.write_text("method: search-r1\ngrpo: {bf16: false, use_cpu: true}\n")
    assert load_config(path).grpo["bf16"] is False  # fp32 loads anywhere


@pytest.mark.skipif(not precision.cpu_supports_bf16(), reason="this CPU has no native bf16 (amx_bf16/avx512_bf16)")
def test_on_this_cpu_a_bf16_config_loads(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("method: search-r1\ngrpo: {bf16: true, use_cpu: true}\n")
    assert load_config(path).grpo["bf16"] is True
