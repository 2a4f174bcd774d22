"""Runs across seeds: separate seed runs (or `run --seeds` runs) merged into one multi-seed run, and its tables.

The real recorded runs: the Search-R1 base and instruct checkpoints were each evaluated twice on all 125 Bamboogle
questions by the same third-party reproduction (one file per run; "seed1" in the later file names), so each pair is
two seeds of one setting.
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from evalsuite.agent.merge import merge_seed_runs
from evalsuite.errors import EvalsuiteError
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, summarize
from evalsuite.runs.columns import read_scores, write_scores
from evalsuite.stats import SystemScores, compare

BASE = ("bamboogle_2026_04_24_16_17_search_r1_base", "bamboogle_2026_04_28_16_36_search_r1_base_seed1")
INSTRUCT = ("bamboogle_2026_04_24_17_37_search_r1_instruct", "bamboogle_2026_04_29_06_48_search_r1_instruct_seed1")


@pytest.fixture(scope="module")
def merged(bamboogle_runs, tmp_path_factory, cli):
    """The two base runs and the two instruct runs, each pair merged by `evalsuite merge --as-seeds`."""
    out = tmp_path_factory.mktemp("seeds")
    for name, pair in (("base", BASE), ("instruct", INSTRUCT)):
        result = cli("merge", "--as-seeds", "--declared-seeds", *(str(bamboogle_runs[stem]) for stem in pair), "-o", str(out / name))
        assert result.exit_code == 0 and "merged 2 seed runs" in result.output, result.output
    return out


def test_each_seed_run_becomes_one_sample_of_every_question(merged, recorded):
    records = RunDirectory(merged / "base").read_predictions()
    assert len(records) == 250 and {r.sample for r in records} == {0, 1}
    seeds = [recorded(stem)["em"] for stem in BASE]  # FlashRAG's own per-question EM in each file
    for record in records:
        assert record.metrics["em"] == seeds[record.sample][record.id]
    metrics = json.loads((merged / "base" / "metrics.json").read_text())
    ids = sorted(seeds[0])
    per_question = [(seeds[0][q] + seeds[1][q]) / 2 for q in ids]
    bamboogle = metrics["tasks"]["bamboogle"]
    assert bamboogle["n"] == 125  # questions, not 250 samples
    assert bamboogle["metrics"]["em_avg"]["mean"] == pytest.approx(np.mean(per_question))
    assert bamboogle["metrics"]["em_pass@2"]["mean"] == pytest.approx(np.mean([max(seeds[0][q], seeds[1][q]) for q in ids]))
    # The spread is a one-sample run's sd estimated from each question's two samples (variance (a - b)^2 / 2),
    # not the sd of the two runs' means: that one reads which sample is called seed 0 (docs/metrics.md)
    disagree = sum(seeds[0][q] != seeds[1][q] for q in ids)
    expected = np.sqrt(disagree / 2 / len(ids) / len(ids))
    assert metrics["extra"]["samples"]["spread"]["bamboogle"]["em"] == pytest.approx(expected)
    manifest = json.loads((merged / "base" / "manifest.json").read_text())
    assert manifest["seeds"] == {"samples": 2} and manifest["decoding"]["samples"] == 2  # imports record no seed
    assert [p.split("/")[-1] for p in manifest["merged_from"]] == list(BASE)


def test_the_table_shows_mean_and_sd_over_seeds_and_tests_questions_as_clusters(merged, recorded, cli):
    out = cli("table", str(merged / "base"), str(merged / "instruct"), "--metric", "em_avg", "--format", "csv").output
    main, diffs = [list(csv.reader(io.StringIO(block))) for block in out.strip().split("\n\n")]
    seed_means = {name: [100 * np.mean(list(recorded(stem)["em"].values())) for stem in pair]
                  for name, pair in (("base", BASE), ("instruct", INSTRUCT))}
    markdown = cli("table", str(merged / "base"), str(merged / "instruct"), "--metric", "em_avg", "--format", "markdown").output
    for name, means in seed_means.items():
        assert f"{np.mean(means):.2f}" in next(r for r in main[1:] if r[1] == name)[2]
    for name, pair in (("base", BASE), ("instruct", INSTRUCT)):
        # one seed's sd, from each question's two samples: sqrt(mean of (a - b)^2 / 2 over questions / n)
        a, b = (recorded(stem)["em"] for stem in pair)
        variances = [(a[q] - b[q]) ** 2 / 2 for q in a]
        assert f"± {100 * np.sqrt(np.mean(variances) / len(variances)):.2f}" in markdown
    assert "± sd: standard deviation of one seed's mean" in markdown
    # The paired test runs on 125 questions (each one cluster: its mean over the two seeds), not 250 samples,
    # and is what compare() gives on the per-question means computed here from the recorded files.
    header = diffs[0]
    row = next(r for r in diffs[1:] if r[1] == "instruct")
    assert row[header.index("n")] == "125"
    per_question = {name: {q: np.mean([recorded(stem)["em"][q] for stem in pair]) for q in recorded(pair[0])["em"]}
                    for name, pair in (("base", BASE), ("instruct", INSTRUCT))}
    expected = compare([SystemScores(n, {"bamboogle": s}) for n, s in per_question.items()], "base", metric="em_avg")
    d = expected.differences[("instruct", "bamboogle")]
    assert row[header.index("95% CI of Δ")] == f"[{100 * d.ci_low:.2f}, {100 * d.ci_high:.2f}]"
    assert float(row[header.index("p")]) == pytest.approx(d.p_value, abs=5e-6)


def test_the_sd_of_an_average_is_estimated_from_each_questions_samples(tmp_path):
    """Two tasks, K = 3: each task's "± sd" is sqrt(mean over questions of the sample variance / n), the average's
    sqrt(sum of the tasks' squares) / 2, and exchanging a question's sample labels changes neither."""
    from evalsuite.tables.sources import load_runs

    em = {"nq": [[1, 0, 1], [1, 1, 0]], "hotpotqa": [[0, 0, 1], [0, 1, 1]]}  # task → question → seed's EM
    records = [ExampleRecord(id=f"q{q}", task=task, question="?", golden_answers=["a"], prediction="a", sample=j,
                             sample_seed=10 + j, metrics={"em": float(v)})
               for task, rows in em.items() for q, row in enumerate(rows) for j, v in enumerate(row)]
    run = RunDirectory(tmp_path / "r")
    run.write_manifest(Manifest(tasks=list(em), **provenance_fields()))
    run.rewrite_predictions(records)
    write_scores(run.path, records)
    # every question holds two of one value and one of the other: sample variance 1/3 each, so sqrt((1/3) / 2)
    assert read_scores(run.path).spreads["nq"]["em"] == pytest.approx((1 / 6) ** 0.5)
    (loaded,) = load_runs([run.path])
    assert loaded.seed_sd("em_avg", ("nq",)) == pytest.approx((1 / 6) ** 0.5)
    assert loaded.seed_sd("em_avg", ("nq", "hotpotqa")) == pytest.approx((1 / 3) ** 0.5 / 2)
    assert loaded.seed_sd("em_maj", ("nq",)) is None  # the sd of one seed's mean is of an avg@K only

    relabelled = [r.model_copy(update={"sample": 2 - r.sample}) if r.id == "q1" else r for r in records]
    other = RunDirectory(tmp_path / "relabelled")
    other.write_manifest(Manifest(tasks=list(em), **provenance_fields()))
    other.rewrite_predictions(relabelled)
    write_scores(other.path, relabelled)
    (swapped,) = load_runs([other.path])
    for tasks in (("nq",), ("nq", "hotpotqa")):
        assert swapped.seed_sd("em_avg", tasks) == loaded.seed_sd("em_avg", tasks)


def _seed_run(path, seed, em, samples=None, method="search-r1"):
    """A finished hand-made run of questions q0..: one trajectory per question (`run --seed`), or K (`run --seeds`)."""
    run = RunDirectory(path)
    seeds = {"seed": seed} if samples is None else {"samples": len(samples), **{f"sample_{j}": s for j, s in enumerate(samples)}}
    run.write_manifest(Manifest(tasks=["nq"], method=method, seeds=seeds, model={"spec": "model.gguf", "sha256": "ab"}, decoding={"temperature": 0.7},
                                finished_at="2026-01-01T00:00:00+00:00", **provenance_fields()))
    if samples is None:
        records = [ExampleRecord(id=f"q{i}", task="nq", question="?", golden_answers=["a"], prediction="a",
                                 metrics={"em": float(v)}) for i, v in enumerate(em)]
    else:
        records = [ExampleRecord(id=f"q{i}", task="nq", question="?", golden_answers=["a"], prediction="a", sample=j,
                                 sample_seed=s, metrics={"em": float(row[j])})
                   for i, row in enumerate(em) for j, s in enumerate(samples)]
    run.rewrite_predictions(records)
    return path


def test_a_seeds_run_and_a_separate_seed_run_merge_with_their_seeds(tmp_path):
    both = _seed_run(tmp_path / "s12", None, [[1, 0], [0, 0]], samples=[1, 2])
    third = _seed_run(tmp_path / "s3", 3, [1, 1])
    manifest, records, metrics = merge_seed_runs([both, third], tmp_path / "m")
    assert manifest.seeds == {"samples": 3, "sample_0": 1, "sample_1": 2, "sample_2": 3}
    assert [(r.id, r.sample, r.sample_seed) for r in records] == [("q0", 0, 1), ("q0", 1, 2), ("q0", 2, 3),
                                                                   ("q1", 0, 1), ("q1", 1, 2), ("q1", 2, 3)]
    assert metrics.tasks["nq"].metrics["em_avg"].mean == pytest.approx((2 / 3 + 1 / 3) / 2)
    again = summarize(RunDirectory(tmp_path / "m").read_predictions())  # metrics.json adds the process summary
    assert (again.tasks, again.averages, again.extra["samples"]) == (metrics.tasks, metrics.averages, metrics.extra["samples"])


def test_bad_seed_merges_are_one_line_each_and_write_nothing(tmp_path):
    a, b = _seed_run(tmp_path / "a", 1, [1, 0]), _seed_run(tmp_path / "b", 1, [0, 0])
    cases = [
        ([a], "needs two or more run directories"),
        ([a, a], "is given twice"),
        ([a, b], "seed 1 is in both"),
        ([a, _seed_run(tmp_path / "c", 2, [1])], "lacks question nq/q1 that another run holds"),
        ([a, _seed_run(tmp_path / "d", 2, [1, 0], method="ircot")], "different settings"),
    ]
    for runs, message in cases:
        with pytest.raises(EvalsuiteError, match=message) as caught:
            merge_seed_runs(runs, tmp_path / "out")
        assert "\n" not in caught.value.message and not (tmp_path / "out").exists()
    unfinished = _seed_run(tmp_path / "e", 5, [1, 0])
    manifest = RunDirectory(unfinished).read_manifest()
    manifest.finished_at = None
    RunDirectory(unfinished).write_manifest(manifest)
    with pytest.raises(EvalsuiteError, match="did not finish"):
        merge_seed_runs([a, unfinished], tmp_path / "out")
