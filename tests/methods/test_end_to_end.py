"""Every method and baseline end to end: the real Gemma-3-270M GGUF through llama.cpp, real BM25, 5 Bamboogle and 5 AD-QA questions."""

from __future__ import annotations

import pytest

from evalsuite.agent.config import RunConfig
from evalsuite.agent.method import get_method, list_methods
from evalsuite.runs import RunDirectory

pytestmark = pytest.mark.slow
N = 5


@pytest.fixture(scope="module")
def gemma() -> str:
    pytest.importorskip("llama_cpp", reason="the llamacpp extra (llama-cpp-python) is not installed")
    from evalsuite.agent.default import demo_model_path

    return demo_model_path()


@pytest.fixture(scope="module")
def indexes(tmp_path_factory, corpus_dir) -> dict[str, str]:
    from evalsuite.retrieval import build_index
    from evalsuite.tasks.adqa import shipped_corpus_path

    wiki = tmp_path_factory.mktemp("wiki") / "bm25"
    build_index(str(corpus_dir / "wiki18_sample.jsonl"), str(wiki))
    adqa = tmp_path_factory.mktemp("adqa") / "bm25"
    build_index(str(shipped_corpus_path()), str(adqa))
    return {"bamboogle": str(wiki), "adqa": str(adqa)}


def run_method(method: str, task: str, gemma: str, indexes: dict[str, str], out, benchmarks_dir):
    from evalsuite.agent.runner import RunSpec, execute

    styles = get_method(method).styles
    spec = RunSpec(
        model=gemma, backend="llamacpp", tasks=task, out=out, method=method,
        # the one-shot style where the method has one: Gemma-270M follows a protocol only after an example
        config=RunConfig(
            prompt_style="base-1shot" if "base-1shot" in styles else "base", subset=f"first:{N}", batch_size=N,
            max_turns=1, max_tokens=32, max_obs_tokens=160, max_context_tokens=3072,
        ),
        data_dir=str(benchmarks_dir) if task == "bamboogle" else None, retriever=indexes[task],
        backend_options={"n_ctx": 4096},
    )
    return execute(spec)


@pytest.mark.parametrize("task", ["bamboogle", "adqa"])
@pytest.mark.parametrize("method", list_methods())
def test_method_runs_end_to_end_into_a_valid_run_directory(method, task, gemma, indexes, tmp_path, benchmarks_dir):
    result = run_method(method, task, gemma, indexes, tmp_path / "run", benchmarks_dir)
    assert result.stopped is None
    directory = RunDirectory(tmp_path / "run")
    manifest = directory.read_manifest()
    records = directory.read_predictions()
    assert manifest.method == method and manifest.finished_at and manifest.tasks == [task]
    assert manifest.prompt_template_hash == get_method(method).template_hash(manifest.backend.prompt_style)
    assert len(records) == N and {r.status for r in records} == {"ok"}
    assert all(r.trajectory or r.turns for r in records)
    metrics = directory.path / "metrics.json"
    assert metrics.exists() and result.metrics.tasks[task].n == N
    for record in records:
        assert set(record.metrics) >= {"em", "cover_em", "f1", "retrieval_hit", "n_searches", "n_turns", "has_answer", "n_invalid"}
    if method in ("naive-rag", "ircot"):
        assert all(r.turns[0].extra.get("initial_retrieval") and r.turns[0].passages for r in records)
    if method in ("direct", "cot"):
        assert all(not t.passages for r in records for t in r.turns)


def test_oases_state_evaluator_scores_states_with_the_real_model(gemma, indexes, tmp_path, benchmarks_dir):
    from evalsuite.methods.oases.method import StateEvaluator, search_states
    from evalsuite.models.registry import load_backend

    run_method("oases", "bamboogle", gemma, indexes, tmp_path / "run", benchmarks_dir)
    record = RunDirectory(tmp_path / "run").read_predictions()[0]
    backend = load_backend("llamacpp", gemma, n_ctx=4096)
    states = search_states(record.turns)
    evaluations = StateEvaluator(backend, style="base", max_tokens=24)(record.question, record.golden_answers, states)
    backend.close()
    assert [e.state for e in evaluations] == list(range(len(states)))
    assert all(0.0 <= e.score <= 1.0 and isinstance(e.text, str) for e in evaluations)
