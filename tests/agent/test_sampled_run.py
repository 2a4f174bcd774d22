"""`evalsuite run --samples K`: K records per question with their sample index and seed, resumable per sample."""

from __future__ import annotations

import json

import pytest

from evalsuite.agent.runner import execute
from evalsuite.errors import EvalsuiteError
from evalsuite.models.base import SEEDING, native_n_groups, request_seed
from evalsuite.models.replay import ReplayBackend
from evalsuite.runs import RunDirectory
from tests.agent.test_run_directory import replay_spec

# sampling needs a temperature above 0 (RunConfig refuses identical greedy samples); replay ignores it
SAMPLING = {"temperature": 0.7}


class CountingReplay(ReplayBackend):
    """Replay that records the (example id, seed) of every first-turn generation it is asked for."""

    def __init__(self, model):
        super().__init__(model)
        self.started: list[tuple[str, int]] = []

    def _one(self, request):
        if request.key[1] == 0:
            self.started.append((request.key[0], request.seed))
        return super()._one(request)


class BatchRecordingReplay(ReplayBackend):
    """Replay that keeps every batch it is asked for (the requests of each `generate` or `agenerate` call)."""

    def __init__(self, model):
        super().__init__(model)
        self.batches: list[list] = []

    def generate(self, requests):
        self.batches.append(list(requests))
        return super().generate(requests)

    async def agenerate(self, request):
        self.batches.append([request])
        return await super().agenerate(request)


def test_a_questions_samples_share_a_batch_with_consecutive_seeds_and_one_n_group(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:5", samples=3, schedule="sync",
                       batch_size=8, temperature=0.7, seed=40)
    backend = BatchRecordingReplay(spec.model)
    execute(spec, backend=backend)
    first_turns = [[r for r in batch if r.key[1] == 0] for batch in backend.batches]
    first_turns = [batch for batch in first_turns if batch]
    # batches of whole questions, at most 8 trajectories: 2 questions (6), 2 questions (6), then 1 (3)
    assert [len(batch) for batch in first_turns] == [6, 6, 3]
    for batch in first_turns:
        questions = list(dict.fromkeys(r.key[0] for r in batch))
        # each question's 3 samples: run seeds 40, 41, 42 (sample_seed), so consecutive request seeds, one n group
        assert sorted((r.key[0], r.seed) for r in batch) == sorted((q, 40 + j) for q in questions for j in range(3))
        assert sorted(sorted(batch[i].key[0] for i in group) for group in native_n_groups(batch)) == [[q] * 3 for q in sorted(questions)]
        for q in questions:
            seeds = sorted(request_seed(r) for r in batch if r.key[0] == q)
            assert seeds == [seeds[0], seeds[0] + 1, seeds[0] + 2]
    records = RunDirectory(spec.out).read_predictions()
    assert [(r.sample, r.sample_seed) for r in records] == [(j, 40 + j) for j in range(3)] * 5
    assert RunDirectory(spec.out).read_manifest().decoding.seeding == SEEDING


def test_the_async_schedule_gives_each_sample_its_seed_as_the_sync_one_does(tmp_path, trajectories_dir, benchmarks_dir):
    seen = {}
    for schedule in ("sync", "async"):
        spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / schedule, subset="first:4", samples=3, schedule=schedule,
                           temperature=0.7, seed=7)
        backend = BatchRecordingReplay(spec.model)
        execute(spec, backend=backend)
        records = RunDirectory(spec.out).read_predictions()
        seen[schedule] = (sorted((r.key, r.seed) for batch in backend.batches for r in batch),
                          [(r.id, r.sample, r.sample_seed, r.prediction, r.trajectory) for r in records])
    assert seen["async"] == seen["sync"]


def test_resuming_a_sampled_run_seeded_by_the_old_scheme_is_refused_in_one_line(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:3", samples=2, schedule="sync",
                       **SAMPLING)
    execute(spec)
    manifest = spec.out / "manifest.json"
    old = json.loads(manifest.read_text())
    del old["decoding"]["seeding"]  # as a run written before the scheme was recorded
    manifest.write_text(json.dumps(old))
    path = RunDirectory(spec.out).predictions_path
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-2]) + "\n")  # a killed run: two samples missing
    spec.resume = True
    with pytest.raises(EvalsuiteError) as refused:
        execute(spec)
    assert refused.value.message == (f"cannot resume {spec.out}: its samples were seeded by an older evalsuite's scheme "
                                     f"(sha256 of seed and key), this evalsuite seeds them by {SEEDING}")
    assert "new -o directory" in refused.value.hint
    assert path.read_text().splitlines() == lines[:-2]  # nothing finished is lost


def test_each_question_gets_k_records_with_sample_index_and_seed(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:5", samples=3, schedule="sync",
                       temperature=0.7, seed=40)
    result = execute(spec)
    records = RunDirectory(spec.out).read_predictions()
    assert len(records) == 15
    ids = list(dict.fromkeys(r.id for r in records))
    # example order, each question's samples in sample order, seed = --seed + sample index
    assert [(r.id, r.sample, r.sample_seed) for r in records] == [(i, j, 40 + j) for i in ids for j in range(3)]
    nq = result.metrics.tasks["nq"]
    assert nq.n == 5 and result.metrics.extra["samples"]["k"] == 3
    # replay gives every sample the recorded trajectory: avg@3 = maj@3 = pass@3 = the recorded EM
    em = {r.id: r.metrics["em"] for r in records if r.sample == 0}
    assert nq.metrics["em_avg"].mean == pytest.approx(sum(em.values()) / 5) == nq.metrics["em_pass@3"].mean
    manifest = RunDirectory(spec.out).read_manifest()
    assert manifest.decoding.samples == 3 and manifest.seeds == {"seed": 40}  # the number of samples: once, in decoding


def test_resume_redoes_only_the_missing_samples(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:4", samples=2, schedule="sync",
                       **SAMPLING)
    execute(spec)
    path = RunDirectory(spec.out).predictions_path
    lines = path.read_text().splitlines()
    dropped = [json.loads(line) for line in lines if json.loads(line)["sample"] == 1][:2]
    # as a kill -9 leaves it: two questions' second samples never written
    path.write_text("\n".join(line for line in lines if json.loads(line) not in dropped) + "\n")
    spec.resume = True
    backend = CountingReplay(spec.model)
    result = execute(spec, backend=backend)
    assert sorted(backend.started) == sorted((d["id"], 1) for d in dropped)
    assert len(RunDirectory(spec.out).read_predictions()) == 8 and result.metrics.tasks["nq"].n == 4


def test_a_one_sample_run_records_no_sample_index(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:3")
    result = execute(spec)
    assert all(r.sample is None and r.sample_seed is None for r in result.records)
    decoding = RunDirectory(spec.out).read_manifest().decoding
    assert "samples" not in result.metrics.extra and decoding.samples is None
    assert decoding.seeding is None  # greedy: seeds change nothing, and runs from before the scheme resume as they did


@pytest.mark.parametrize(("options", "message"), [
    (["--samples", "0"], "error: --samples 0 is out of range"),
    (["--samples", "4"], "error: --samples 4 with --temperature 0: greedy decoding makes the 4 samples identical"),
    (["--samples", "2", "--temperature", "0.7", "--top-p", "0"], "error: --top-p 0 is out of range"),
    (["--top-p", "0.9", "--backend", "hf"], "error: --top-p is not passed on by the hf backend"),
])
def test_bad_sampling_options_are_one_line_each(tmp_path, options, message):
    import subprocess
    import sys

    backend = [] if "--backend" in options else ["--backend", "llamacpp"]
    done = subprocess.run([sys.executable, "-m", "evalsuite", "run", "--model", str(tmp_path / "m.gguf"), *backend,
                           "--tasks", "adqa", "--retriever", "adqa", "-o", str(tmp_path / "out"), *options],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == message
    assert not (tmp_path / "out").exists()


def test_seeds_give_each_sample_its_own_seed(tmp_path, trajectories_dir, benchmarks_dir):
    spec = replay_spec(trajectories_dir, benchmarks_dir, tmp_path / "run", subset="first:2", samples=3, seeds=(11, 5, 42),
                       schedule="sync", **SAMPLING)
    execute(spec)
    records = RunDirectory(spec.out).read_predictions()
    assert [(r.sample, r.sample_seed) for r in records] == [(0, 11), (1, 5), (2, 42)] * 2
    assert RunDirectory(spec.out).read_manifest().seeds == {"seed": 0, "sample_0": 11, "sample_1": 5, "sample_2": 42}


@pytest.mark.parametrize(("options", "message"), [
    (["--seeds", "1,x"], "error: --seeds '1,x' is not a comma-separated list of integers"),
    (["--seeds", "3,3"], "error: --seeds '3,3' needs two or more distinct seeds"),
    (["--seeds", "1,2,3", "--samples", "4", "--temperature", "0.7"], "error: --samples 4 disagrees with the 3 --seeds"),
    (["--seeds", "1,2"], "error: --samples 2 with --temperature 0: greedy decoding makes the 2 samples identical"),
])
def test_bad_seeds_are_one_line_each(tmp_path, options, message):
    test_bad_sampling_options_are_one_line_each(tmp_path, options, message)
