"""bf16 on the CPU: whether this CPU multiplies bf16 matrices natively, and the one-line refusal where it does not.

On a CPU with AVX512-BF16 or AMX-BF16 oneDNN runs bf16 matrix multiply in hardware (on this project's Xeon: 414
GFLOP/s against 32.5 in fp32, one thread). Elsewhere torch still accepts bf16 and emulates it (torch's
`_is_mkldnn_bf16_supported` is true on any AVX512 CPU), slower than fp32 and less exact, so a bf16 setting there is
refused instead of silently running the slow path. The flags are read from /proc/cpuinfo (Linux); a machine without
that file is taken as having neither.
"""

from __future__ import annotations

from pathlib import Path

from evalsuite.errors import EvalsuiteError

CPUINFO = Path("/proc/cpuinfo")
# the flags of native bf16 dot products: AMX tiles (Sapphire Rapids and later), AVX512-BF16 (Cooper Lake, Zen 4)
BF16_FLAGS = ("amx_bf16", "avx512_bf16")
BF16_NAMES = ("bfloat16", "bf16")


def cpu_flags(cpuinfo: Path | None = None) -> set[str]:
    """The CPU's feature flags (the first `flags` line of `cpuinfo`, default /proc/cpuinfo; empty where none)."""
    try:
        text = (cpuinfo or CPUINFO).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def native_bf16_flag(cpuinfo: Path | None = None) -> str | None:
    """The flag that gives this CPU native bf16 matrix multiply (AMX first), or None."""
    flags = cpu_flags(cpuinfo)
    return next((flag for flag in BF16_FLAGS if flag in flags), None)


def cpu_supports_bf16(cpuinfo: Path | None = None) -> bool:
    return native_bf16_flag(cpuinfo) is not None


def require_cpu_bf16(where: str, cpuinfo: Path | None = None) -> str:
    """The native bf16 flag of this CPU, or one line naming `where` (the setting that asked for bf16) and what to do."""
    flag = native_bf16_flag(cpuinfo)
    if flag is None:
        raise EvalsuiteError(
            f"{where}: this CPU has no native bf16 ({' or '.join(BF16_FLAGS)} not among the flags of "
            f"{cpuinfo or CPUINFO}); torch would emulate it, slower than fp32",
            hint="use fp32 (bf16: false / dtype float32), or a CPU with AMX or AVX512-BF16, or a GPU",
        )
    return flag


def is_bf16(dtype: object) -> bool:
    """`dtype` names bfloat16 (a string as configs write it, or a torch dtype)."""
    return str(dtype).removeprefix("torch.") in BF16_NAMES
