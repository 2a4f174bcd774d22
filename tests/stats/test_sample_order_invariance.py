"""Every statistic of a sampled run is a function of the multiset of each question's samples (issue 37/38).

Property tests (hypothesis): any permutation of the sample labels within each question, of the lines of the file,
and of the seed runs given to `merge --as-seeds` leaves every number of metrics.json and every per-question column
identical, to the last bit. pass@k is checked against exact rational arithmetic (math.comb, fractions) up to K =
10,000; a run cut off mid-question at K = 5,000 gives its exact numbers and counts what it left out; a sample index
no run could have written is refused in one line before anything is sized by it.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalsuite.agent.merge import merge_seed_runs
from evalsuite.errors import DataError
from evalsuite.metrics.samples import pass_at_k
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory, summarize
from evalsuite.runs.columns import ScoreColumns
from evalsuite.runs.sampled import sampled_task

ANSWERS = st.sampled_from(["paris", "Paris", "london", "rome", None])
# one sample: (answer, F1, searches, failed)
SAMPLE = st.tuples(ANSWERS, st.floats(0, 1, allow_nan=False), st.integers(0, 4), st.booleans())
# question → its samples: K = 1..5, and a question may hold fewer (a run cut off)
RUN = st.lists(st.lists(SAMPLE, min_size=1, max_size=5), min_size=1, max_size=6)


def _records(run, relabel: random.Random | None = None) -> list[ExampleRecord]:
    records = []
    for q, samples in enumerate(run):
        labels = list(range(len(samples)))
        if relabel is not None:
            relabel.shuffle(labels)
        for label, (answer, f1, searches, failed) in zip(labels, samples):
            em = float(answer is not None and answer.lower() == "paris")
            records.append(ExampleRecord(
                id=f"q{q}", task="nq", question="capital?", golden_answers=["paris"], prediction=answer,
                sample=label, sample_seed=100 + label, status="failed" if failed else "ok",
                metrics={"em": em, "cover_em": em, "f1": f1, "n_searches": float(searches)}))
    return records


def _numbers(records: list[ExampleRecord]) -> tuple:
    """Everything a sampled run's statistics give: metrics.json's tasks and sample summary, each question's columns
    (by id), and the spreads tables show as "± sd"."""
    summary = summarize(records)
    all_columns = ScoreColumns.from_records(records)
    columns = all_columns.tasks["nq"]
    per_question = {name: dict(zip(columns.ids.tolist(), map(_comparable, values.tolist())))
                    for name, values in columns.metrics.items()}
    return summary.tasks, summary.averages, summary.extra["samples"], per_question, all_columns.spreads


def _comparable(value: float) -> float | str:
    return "not computable" if math.isnan(value) else value  # NaN (too few samples) equals itself here


@settings(max_examples=150, deadline=None)
@given(run=RUN, seed=st.integers(0, 2**32 - 1))
def test_any_permutation_of_labels_and_lines_gives_identical_numbers(run, seed):
    rng = random.Random(seed)
    shuffled = _records(run, relabel=rng)
    rng.shuffle(shuffled)
    assert _numbers(shuffled) == _numbers(_records(run))  # exact equality


def _seed_run(path, seed: int, answers: list[str | None]):
    run = RunDirectory(path)
    run.write_manifest(Manifest(tasks=["nq"], method="search-r1", model={"spec": "m.gguf", "sha256": "ab"},
                                seeds={"seed": seed}, decoding={"temperature": 1.0},
                                finished_at="2026-01-01T00:00:00+00:00", **provenance_fields()))
    run.rewrite_predictions([
        ExampleRecord(id=f"q{i}", task="nq", question="?", golden_answers=["paris"], prediction=a,
                      trajectory=f"{seed}:{a}", metrics={"em": float(a == "paris")})
        for i, a in enumerate(answers)])
    return path


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=st.lists(st.lists(ANSWERS, min_size=4, max_size=4), min_size=2, max_size=4),
       order=st.randoms(use_true_random=False))
def test_any_order_of_seed_runs_gives_identical_numbers(runs, order, tmp_path_factory):
    work = tmp_path_factory.mktemp("seeds")
    dirs = [_seed_run(work / f"seed{s}", s, answers) for s, answers in enumerate(runs, start=1)]
    permuted = list(dirs)
    order.shuffle(permuted)
    _, _, first = merge_seed_runs(dirs, work / "given")
    _, _, second = merge_seed_runs(permuted, work / "permuted")
    assert (first.tasks, first.averages, first.extra["samples"]) == (second.tasks, second.averages,
                                                                      second.extra["samples"])


def _exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_pass_at_k_equals_exact_arithmetic_up_to_k_10000(data):
    n = data.draw(st.integers(1, 10_000))
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    assert abs(float(pass_at_k(n, c, k)) - float(_exact(n, c, k))) < 1e-11


@pytest.mark.parametrize(("n", "c", "k"), [(1030, 1, 512), (2000, 1, 1000), (2000, 7, 3), (5000, 2500, 4096),
                                           (10_000, 1, 5000), (10_000, 9_990, 11), (10_000, 3, 1)])
def test_pass_at_k_is_exact_where_binomial_coefficients_overflow(n, c, k):
    value = float(pass_at_k(n, c, k))
    assert np.isfinite(value) and abs(value - float(_exact(n, c, k))) < 1e-11
    if (n, c, k) == (1030, 1, 512):
        assert value == pytest.approx(512 / 1030)  # one right of n: the chance it is among the k drawn


def test_a_run_cut_off_mid_question_at_k_5000_gives_exact_numbers_and_counts_what_it_left_out():
    """Three questions of K = 5,000: two complete (1,000 and 0 right), one cut off after 1,234 samples (17 right)."""
    right = {"q0": (5000, 1000), "q1": (5000, 0), "q2": (1234, 17)}
    records = [ExampleRecord(id=q, task="nq", question="?", golden_answers=["x"], prediction="x" if j < c else f"w{j}",
                             sample=j, sample_seed=j, metrics={"em": float(j < c)})
               for q, (n, c) in right.items() for j in range(n)]
    part = sampled_task("nq", records)
    assert part.samples == 5000 and part.incomplete == 1
    pass_4096 = dict(zip(part.ids.tolist(), part.metrics["em_pass@4096"].tolist()))
    assert pass_4096["q0"] == pytest.approx(float(_exact(5000, 1000, 4096)), abs=1e-11) and pass_4096["q1"] == 0.0
    assert math.isnan(pass_4096["q2"])  # pass@4096 of 1,234 samples does not exist: left out, not 0
    pass_1024 = dict(zip(part.ids.tolist(), part.metrics["em_pass@1024"].tolist()))
    assert pass_1024["q2"] == pytest.approx(float(_exact(1234, 17, 1024)), abs=1e-11)
    summary = summarize(records)
    metrics = summary.tasks["nq"].metrics
    assert metrics["em_avg"].mean == pytest.approx((1000 / 5000 + 0 + 17 / 1234) / 3)  # from the samples it has
    assert metrics["em_pass@4096"].mean == pytest.approx(float(_exact(5000, 1000, 4096)) / 2)  # over 2 questions
    samples = summary.extra["samples"]
    assert samples["incomplete_questions"] == {"nq": 1}
    assert samples["left_out"]["nq"] == {"em_maj": 1, "em_pass@2048": 1, "em_pass@4096": 1, "em_pass@5000": 1}
    assert all(np.isfinite([m.mean, m.ci_low, m.ci_high]).all() for m in metrics.values())
    from evalsuite.cli.run import sampled_table  # what `evalsuite run` prints at the end

    assert sampled_table(summary).caption == ("questions short of K samples (a run cut off) have no maj@K or pass@K: "
                                              "left out of those columns (nq: 1)")


@pytest.mark.parametrize("index", [10**6, 10**12, 3, -1])
def test_a_sample_index_no_run_could_write_is_refused_in_one_line(index):
    records = [ExampleRecord(id=f"q{q}", task="nq", question="?", golden_answers=["x"], prediction="x", sample=j,
                             sample_seed=j, metrics={"em": 1.0}) for q in range(2) for j in range(2)]
    records[-1] = records[-1].model_copy(update={"sample": index})
    with pytest.raises(DataError, match=f"nq/q1: sample index {index} is outside 0..2") as caught:
        sampled_task("nq", records)
    assert "\n" not in caught.value.message


@settings(max_examples=100, deadline=None)
@given(judged=st.lists(st.lists(st.sampled_from([True, False, None]), min_size=1, max_size=5), min_size=1,
                       max_size=5),
       seed=st.integers(0, 2**32 - 1))
def test_acc_judge_columns_read_no_sample_label(judged, seed):
    from evalsuite.judges.accuracy import accuracy_columns

    rng = random.Random(seed)
    k = max(2, max(len(v) for v in judged))  # a sampled run (K = 1 is the greedy column)
    ids = [f"q{q}" for q in range(len(judged))]

    def verdicts(relabel: bool):
        out = {}
        for q, values in enumerate(judged):
            labels = list(range(k))
            if relabel:
                rng.shuffle(labels)  # any of the K labels, not only the first len(values)
            out.update({("nq", f"q{q}", f"s{labels[j]}"): v for j, v in enumerate(values)})
        return out

    first, second = accuracy_columns(verdicts(False), "nq", ids, k), accuracy_columns(verdicts(True), "nq", ids, k)
    assert first.keys() == second.keys()
    for name in first:
        assert list(map(_comparable, first[name].tolist())) == list(map(_comparable, second[name].tolist()))
    right = [sum(v is True for v in values) for values in judged]
    assert first["acc_judge_avg"].tolist() == pytest.approx([r / len(v) for r, v in zip(right, judged)])
