"""The second property-based forger (issue 37), its other half: sample labels and order, seed sets, trajectory
segments and judgments, each mutated on a real submission or run (test_forger_identity.py holds subset spellings
and sizes, rankings, and manifest `kind` and setting fields).

The invariant for every forgery: it is refused (one line naming the file or field) or accepted showing exactly the
recomputed truth with honest labels; never a traceback.

- Sample labels and order: a multi-seed submission (two real Bamboogle seeds merged) with each question's labels
  permuted, seeds moved with them or not, the lines shuffled, some labels made duplicate or out of range, the
  checksums rewritten: every verified number is the honest one, or the submission is refused.
- Seed sets: `merge --as-seeds` over real runs given twice, copied, imported (no model identity, no seed), made
  to record a model identity and a seed (the same seed twice, two identities): refused in one line, or merged with
  every seed on record of one model and distinct, and every run that is not said to be declared in the manifest and
  on the terminal.
- Trajectory segments: a real evalsuite run's record with `<answer>X</answer>` planted inside an observation (the
  last turn's text set to it or not, the observation's segment stretched over it or not), segment kinds flipped,
  lengths changed, segments dropped or removed: never accepted with a number other than the one recomputed from the
  model's own text.
- Judgments: a real run's judgments.jsonl with verdicts moved to other predictions or questions, fields deleted,
  other judges and panels, verdicts flipped or made non-booleans: acc_judge counts exactly the verdicts on the
  answer each record holds from the panel metrics.json names, and is never labelled as judged here.

At the code before issue 37 (fc807db) all four properties fail (swapping one question's two labels, the claims
recomputed, changed the verified maj@2 numbers; a gold planted in an observation was accepted; a verdict on another
prediction was credited; two checkpoints, or imports without --declared-seeds, were merged as seeds). The default
run tries about 380 forgeries in about 35 s; `-m slow` 1,000 of each (about 12 min), the last run: labels 564 accepted
with the honest numbers and 436 refused; seed sets 78 merged (46 of them declared) and 922 refused; segments 307
accepted with the honest numbers and 693 refused; judgments 596 accepted counting only bound verdicts and 404 refused.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard import verify_submission
from test_multi_seed_entry import BASE_RUNS, _edit_records, _tampered, multi_seed  # noqa: F401 - a fixture
from test_trajectory_segments import RUN, WHERE, forge, records_of, replay_submission  # noqa: F401 - a fixture

from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1, cli

# no explain phase: it reruns each failing example many times, minutes with a verification in each
PHASES = tuple(p for p in Phase if p is not Phase.explain)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    phases=PHASES)
SLOW = settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    phases=PHASES)


def one_line_refusals(report) -> None:
    lines = report.problem_lines()
    assert lines and all("\n" not in line and line.startswith("[") for line in lines), lines


def metrics_of(report) -> dict:
    return {t: v.summary.metrics for t, v in report.tasks.items()}


# --- sample labels and record order ---------------------------------------------------------------------------

N_QUESTIONS = 125  # the two Bamboogle seeds: 250 records


@pytest.fixture(scope="module")
def honest_seeds(multi_seed, benchmarks_dir):
    report = verify_submission(multi_seed[1], benchmarks_dir)
    assert report.accepted, report.problem_lines()
    return metrics_of(report)


labels_forgery = dict(
    swapped=st.sets(st.integers(0, N_QUESTIONS - 1)),
    move_seeds=st.booleans(),
    order=st.one_of(st.none(), st.permutations(range(2 * N_QUESTIONS))),
    broken=st.lists(st.tuples(st.integers(0, 2 * N_QUESTIONS - 1), st.sampled_from((0, 1, 2, 3, -1, None, "0"))),
                    max_size=2),
)


def claims_recomputed(run: Path) -> None:
    """metrics.json's per-task claims rewritten from the records as they now are, by evalsuite's own summary (left
    as they were when no record could hold the labels written)."""
    from evalsuite.runs import ExampleRecord, summarize

    text = gzip.decompress((run / "predictions.jsonl.gz").read_bytes()).decode()
    try:
        fresh = summarize([ExampleRecord.model_validate_json(line) for line in text.splitlines()])
    except (EvalsuiteError, ValueError, TypeError, KeyError, IndexError):
        return
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["tasks"] = json.loads(fresh.model_dump_json())["tasks"]
    (run / "metrics.json").write_text(json.dumps(metrics))


def check_labels_forgery(multi_seed, tmp_path_factory, benchmarks_dir, honest_seeds, swapped, move_seeds, order,
                         broken) -> None:
    def relabel(lines):
        for position, record in enumerate(lines):
            if position // 2 in swapped:  # the records come as (q, sample 0), (q, sample 1), question by question
                record["sample"] = 1 - record["sample"]
                if move_seeds:
                    record["sample_seed"] = lines[position ^ 1]["sample_seed"]
        for position, label in broken:  # labels no permutation gives: a duplicate, out of range, not an integer
            lines[position]["sample"] = label
        return lines if order is None else [lines[i] for i in order]

    def forge(run: Path) -> None:  # a careful forger: the labels edited, then the run's claims recomputed from them
        _edit_records(relabel)(run)
        claims_recomputed(run)

    report = verify_submission(_tampered(multi_seed[1], tmp_path_factory.mktemp("labels"), forge), benchmarks_dir)
    event("refused" if not report.accepted else "accepted, the honest numbers")
    if not report.accepted:
        one_line_refusals(report)
        return
    assert metrics_of(report) == honest_seeds


@FAST
@given(**labels_forgery)
@example(swapped=set(range(N_QUESTIONS)), move_seeds=False, order=None, broken=[])  # the attack of issue 37
def test_sample_labels_and_order_never_change_a_verified_number(multi_seed, tmp_path_factory, benchmarks_dir,
                                                                honest_seeds, swapped, move_seeds, order, broken):
    check_labels_forgery(multi_seed, tmp_path_factory, benchmarks_dir, honest_seeds, swapped, move_seeds, order,
                         broken)


@pytest.mark.slow
@SLOW
@given(**labels_forgery)
def test_sample_labels_and_order_never_change_a_verified_number_thoroughly(
    multi_seed, tmp_path_factory, benchmarks_dir, honest_seeds, swapped, move_seeds, order, broken
):
    check_labels_forgery(multi_seed, tmp_path_factory, benchmarks_dir, honest_seeds, swapped, move_seeds, order,
                         broken)


# --- seed sets for merge --as-seeds ---------------------------------------------------------------------------

SEED_SOURCES = (*BASE_RUNS, INSTRUCT_SEED1)  # two seeds of the base model, one run of another checkpoint


@pytest.fixture(scope="module")
def seed_runs(tmp_path_factory, trajectories_dir):
    """The three real Bamboogle files imported into run directories (no model identity, no seed)."""
    out = tmp_path_factory.mktemp("seed-runs")
    result = cli("score", *(trajectories_dir / f"{stem}.json" for stem in SEED_SOURCES), "-o", out)
    assert result.exit_code == 0, result.output
    return out


# One run given to merge: which real file, and how it is presented: the imported run itself (the same path again
# when drawn twice), a copy of it, or a copy whose manifest records a model identity and a seed (its import source
# removed, as a run's own manifest has none).
seed_pick = st.tuples(
    st.sampled_from(SEED_SOURCES),
    st.sampled_from(("same", "copy", "recorded")),
    st.sampled_from(("model-a", "model-b")),
    st.integers(0, 2),
)


def present(seed_runs: Path, where: Path, n: int, pick) -> tuple[Path, dict | None]:
    """The run directory for `pick`, and what it records (None: nothing, an import)."""
    stem, how, model, seed = pick
    if how == "same":
        return seed_runs / stem, None
    target = where / f"{n}-{stem}"
    shutil.copytree(seed_runs / stem, target)
    if how == "copy":
        return target, None
    manifest = json.loads((target / "manifest.json").read_text())
    recorded = {"model": {"spec": f"{model}.gguf", "sha256": model}, "seeds": {"seed": seed}}
    manifest.update(recorded)
    manifest["source"] = {}
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target, recorded


def check_seed_set(seed_runs, tmp_path_factory, picks, declared) -> None:
    where = tmp_path_factory.mktemp("seeds")
    runs = [present(seed_runs, where, n, pick) for n, pick in enumerate(picks)]
    out = where / "merged"
    result = cli("merge", "--as-seeds", *(["--declared-seeds"] if declared else []), *(str(p) for p, _ in runs),
                 "-o", out)
    event("refused" if result.exit_code else "merged")
    if result.exit_code != 0:  # in process, the CLI's refusal is the EvalsuiteError main() prints as one line
        assert isinstance(result.exception, EvalsuiteError), repr(result.exception)
        assert "\n" not in result.exception.message and not (out / "predictions.jsonl").exists()
        return
    paths = [p.resolve() for p, _ in runs]
    assert len(set(paths)) == len(paths), "a run given twice was merged"
    recorded = [r for _, r in runs if r is not None]
    assert len({r["model"]["sha256"] for r in recorded}) <= 1, "two model identities merged as seeds"
    seeds = [r["seeds"]["seed"] for r in recorded]
    assert len(set(seeds)) == len(seeds), "one seed twice merged as two"
    imported = [(p, pick) for (p, r), pick in zip(runs, picks) if r is None]
    assert len({pick[0] for _, pick in imported}) == len(imported), "one imported file merged twice"
    manifest = json.loads((out / "manifest.json").read_text())
    if imported:  # joined on the merger's word only, and said so where the merge prints and in the manifest
        event("merged, declared")
        assert declared
        assert set(manifest.get("declared_seeds", {})) == {str(p) for p, _ in imported}
        text = " ".join(result.output.split())
        for p, _ in imported:
            assert f"{p} records no model identity" in text
    else:
        assert "declared_seeds" not in manifest
    assert manifest["seeds"]["samples"] == len(runs)


# Half the sets present every run alike (all imports, or all recorded with one model), so that some are merged.
alike = st.sampled_from(("same", "copy", "recorded")).flatmap(
    lambda how: st.lists(st.tuples(st.sampled_from(SEED_SOURCES), st.just(how), st.just("model-a"),
                                   st.integers(0, 2)), min_size=2, max_size=4)
)
seed_set = dict(picks=st.one_of(st.lists(seed_pick, min_size=2, max_size=4), alike),
                declared=st.sampled_from((True, True, True, False)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    phases=PHASES)
@given(**seed_set)
@example(picks=[(BASE_SEED1, "same", "model-a", 0), (BASE_SEED1, "same", "model-a", 0)], declared=True)
@example(picks=[(BASE_SEED1, "same", "model-a", 0), (BASE_SEED1, "copy", "model-a", 0)], declared=True)
@example(picks=[(BASE_SEED1, "same", "model-a", 0), (INSTRUCT_SEED1, "same", "model-a", 0)], declared=False)
@example(picks=[(BASE_SEED1, "recorded", "model-a", 1), (BASE_RUNS[0], "recorded", "model-b", 2)], declared=True)
@example(picks=[(BASE_SEED1, "recorded", "model-a", 1), (BASE_RUNS[0], "recorded", "model-a", 1)], declared=True)
def test_a_seed_set_is_refused_or_declared_never_merged_silently(seed_runs, tmp_path_factory, picks, declared):
    check_seed_set(seed_runs, tmp_path_factory, picks, declared)


@pytest.mark.slow
@SLOW
@given(**seed_set)
def test_a_seed_set_is_refused_or_declared_never_merged_silently_thoroughly(seed_runs, tmp_path_factory, picks,
                                                                             declared):
    check_seed_set(seed_runs, tmp_path_factory, picks, declared)


# --- trajectory segments --------------------------------------------------------------------------------------

INFORMATION_OPEN = "<information>"


@pytest.fixture(scope="module")
def honest_replay(replay_submission, benchmarks_dir):
    report = verify_submission(replay_submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    return [r.metrics for r in report.tasks["bamboogle"].records]


segment_op = st.one_of(
    # plant <answer>X</answer> inside the k-th observation at a fraction of its length
    st.tuples(st.just("plant"), st.integers(0, 3), st.floats(0, 1), st.sampled_from(("gold", "other")),
              st.booleans(), st.sampled_from(("leave", "stretch", "model"))),
    st.tuples(st.just("kind"), st.integers(0, 12)),
    st.tuples(st.just("length"), st.integers(0, 12), st.integers(-40, 40), st.booleans()),
    st.tuples(st.just("drop"), st.integers(0, 12)),
    st.tuples(st.just("none")),
)


def observations_of(record) -> list[tuple[int, int, int]]:
    """(segment index, start, end) of each observation segment, else of each <information> block."""
    if getattr(record, "segments", None):
        spans, at = [], 0
        for n, segment in enumerate(record.segments):
            if segment.kind == "observation":
                spans.append((n, at, at + segment.chars))
            at += segment.chars
        return spans
    spans, at = [], record.trajectory.find(INFORMATION_OPEN)
    while at >= 0:
        spans.append((-1, at, at + len(INFORMATION_OPEN)))
        at = record.trajectory.find(INFORMATION_OPEN, at + 1)
    return spans


def apply_segment_op(record, op) -> None:
    name, *args = op
    segments = getattr(record, "segments", None)  # None: a record written before segments (or code without them)
    if name == "plant":
        k, fraction, what, set_last, recut = args
        spans = observations_of(record)
        if not spans:
            return
        n, start, end = spans[k % len(spans)]
        at = start + int(fraction * (end - start))
        answer = record.golden_answers[0] if what == "gold" else "forged answer"
        planted = f"<answer>{answer}</answer>"
        record.trajectory = record.trajectory[:at] + planted + record.trajectory[at:]
        if set_last:
            record.turns[-1].text = planted
            record.turns[-1].answer = answer
            record.prediction = answer
        if segments and n >= 0:
            if recut == "stretch":
                segments[n] = segments[n].model_copy(update={"chars": segments[n].chars + len(planted)})
            elif recut == "model":  # cut the observation in two around the planted text, typed as model text
                head = at - start
                segments[n : n + 1] = [
                    segments[n].model_copy(update={"chars": head}),
                    segments[n].model_copy(update={"kind": "model", "chars": len(planted)}),
                    segments[n].model_copy(update={"chars": segments[n].chars - head}),
                ]
        return
    if name == "none":
        if segments is not None:
            record.segments = None
        return
    if not segments:
        return
    i = args[0] % len(segments)
    if name == "kind":
        segments[i] = segments[i].model_copy(
            update={"kind": "model" if segments[i].kind == "observation" else "observation"})
    elif name == "length":
        delta, compensate = args[1], args[2]
        segments[i] = segments[i].model_copy(update={"chars": max(0, segments[i].chars + delta)})
        if compensate and i + 1 < len(segments):  # the boundary moved, the total kept
            segments[i + 1] = segments[i + 1].model_copy(update={"chars": max(0, segments[i + 1].chars - delta)})
    elif name == "drop":
        del segments[i]


segments_forgery = dict(index=st.integers(0, 124), ops=st.lists(segment_op, min_size=1, max_size=3))


def check_segments_forgery(replay_submission, tmp_path_factory, benchmarks_dir, honest_replay, index, ops) -> None:
    sub = tmp_path_factory.mktemp("segments") / "submission"
    shutil.copytree(replay_submission, sub)
    records = records_of(sub)
    for op in ops:
        apply_segment_op(records[index], op)
    forge(sub, records)
    report = verify_submission(sub, benchmarks_dir)
    event("refused" if not report.accepted else "accepted, the honest numbers")
    if not report.accepted:
        one_line_refusals(report)
        assert all(p.where == f"{WHERE}:{index + 1}" for p in report.problems if p.check == "prediction")
        return
    # accepted: every number is the one recomputed from the model's own text (the honest run's)
    assert [r.metrics for r in report.tasks["bamboogle"].records] == honest_replay


@FAST
@given(**segments_forgery)
@example(index=0, ops=[("plant", 0, 0.0, "gold", True, "leave")])  # the attack of issue 37
@example(index=0, ops=[("plant", 0, 0.0, "gold", True, "stretch")])
@example(index=0, ops=[("plant", 0, 0.5, "gold", True, "model")])
@example(index=0, ops=[("none",), ("plant", 0, 0.0, "gold", True, "leave")])
def test_trajectory_segments_never_carry_a_number_the_model_did_not_write(
    replay_submission, tmp_path_factory, benchmarks_dir, honest_replay, index, ops
):
    check_segments_forgery(replay_submission, tmp_path_factory, benchmarks_dir, honest_replay, index, ops)


@pytest.mark.slow
@SLOW
@given(**segments_forgery)
def test_trajectory_segments_never_carry_a_number_the_model_did_not_write_thoroughly(
    replay_submission, tmp_path_factory, benchmarks_dir, honest_replay, index, ops
):
    check_segments_forgery(replay_submission, tmp_path_factory, benchmarks_dir, honest_replay, index, ops)


# --- judgments.jsonl ------------------------------------------------------------------------------------------

JUDGES = ("j1", "j2", "j3")


@pytest.fixture(scope="module")
def judged_run(scored_runs, tmp_path_factory):
    """A real run (the base seed-1 Bamboogle import) and honest judgments of its answers by three judges (each
    verdict the record's EM, one judge disagreeing on every fifth answer)."""
    from evalsuite.runs import RunDirectory

    run = tmp_path_factory.mktemp("judged") / "run"
    shutil.copytree(scored_runs / BASE_SEED1, run)
    records = RunDirectory(run).read_predictions()
    lines = [{"example_id": r.id, "task": r.task, "metric": "accuracy", "item": "answer", "judge": judge,
              "model": f"{judge}-model", "template": "answer_accuracy", "template_hash": "h",
              "verdict": bool(r.metrics["em"]) != (judge == "j3" and n % 5 == 0), "input": judge_input(r)}
             for n, r in enumerate(records) for judge in JUDGES]
    return run, records, lines


def judge_input(record) -> dict:
    """What a judge is shown of a record's answer (evalsuite.judges.accuracy.accuracy_input)."""
    return {"question": record.question, "golds": " | ".join(record.golden_answers),
            "prediction": record.prediction or "(no answer)"}


judgment_edit = st.tuples(
    st.integers(0, 3 * 125 - 1),
    st.sampled_from(("other-prediction", "other-question", "other-golds", "delete", "judge", "flip", "non-bool",
                     "duplicate", "drop")),
    st.sampled_from(("example_id", "task", "metric", "item", "judge", "verdict", "input", "model")),
    st.integers(0, 124),
)
judgments_forgery = dict(
    edits=st.lists(judgment_edit, max_size=6),
    panel=st.one_of(st.none(), st.lists(st.sampled_from((*JUDGES, "j4")), min_size=1, max_size=3, unique=True)),
)


def expected_verdicts(records, lines, panel) -> dict[str, bool | None]:
    """Independently: each record's majority over the verdicts of the panel's judges on its own answer."""
    votes: dict[str, list] = {}
    for line in lines:
        if line.get("metric") != "accuracy" or line.get("item") != "answer" or line.get("task") != "bamboogle":
            continue
        if panel is not None and line.get("judge") not in panel:
            continue
        record = next((r for r in records if r.id == line.get("example_id")), None)
        if record is not None and line.get("input") == judge_input(record):
            votes.setdefault(record.id, []).append(line.get("verdict"))
    out = {}
    for rid, values in votes.items():
        yes, no = values.count(True), values.count(False)
        out[rid] = True if yes > no else False if no > yes else None
    return out


def check_judgments_forgery(judged_run, tmp_path_factory, edits, panel) -> None:
    from evalsuite.errors import DataError
    from evalsuite.tables.sources import load_runs

    source, records, honest = judged_run
    run = tmp_path_factory.mktemp("judgments") / "run"
    shutil.copytree(source, run)
    lines = [json.loads(json.dumps(line)) for line in honest]
    for position, what, field, other in edits:
        if not lines:
            break
        line = lines[position % len(lines)]
        other_record = records[other]
        if what == "other-prediction":
            line["input"]["prediction"] = other_record.prediction or "(no answer)"
        elif what == "other-question":
            line["example_id"] = other_record.id
        elif what == "other-golds":
            line["input"]["golds"] = other_record.golden_answers[0]
        elif what == "delete":
            line.pop(field, None)
        elif what == "judge":
            line["judge"] = "j4"
        elif what == "flip":
            line["verdict"] = not line.get("verdict")
        elif what == "non-bool":
            line["verdict"] = "yes"
        elif what == "duplicate":
            lines.append({**line, "verdict": not line.get("verdict")})
        elif what == "drop":
            lines.remove(line)
    (run / "judgments.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if panel is not None:
        metrics = json.loads((run / "metrics.json").read_text())
        metrics.setdefault("extra", {})["judges"] = {"panel": [{"name": name} for name in panel]}
        (run / "metrics.json").write_text(json.dumps(metrics))
    try:
        (data,) = load_runs([run])
    except DataError as exc:  # one line naming the file and line
        event("refused")
        assert "\n" not in exc.message and exc.message.startswith(f"{run / 'judgments.jsonl'}:"), exc.message
        return
    # the file keeps the last line of each (task, example, metric, item, judge), as the reader does
    last = {(line.get("task"), line.get("example_id"), line.get("metric"), line.get("item"), line.get("judge")): line
            for line in lines}
    expected = expected_verdicts(records, list(last.values()), panel)
    event("accepted, the bound verdicts only")
    scores = data.columns.tasks["bamboogle"].metrics.get("acc_judge")
    ids = data.columns.tasks["bamboogle"].ids.tolist()
    for rid, value in zip(ids, scores if scores is not None else [None] * len(ids)):
        want = expected.get(rid, "unjudged")
        if want == "unjudged":
            assert value is None or value != value, f"{rid} credited a verdict on no answer it holds"
        else:
            assert value == float(bool(want)), (rid, value, want)
    judged = getattr(data, "judged", None)
    assert judged is not None or not expected, "acc_judge shown without saying whose panel judged it"
    if judged is not None:
        note = judged.note(data.name)
        assert "judged by the submitter's panel" in note and "judged here" not in note


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
                    phases=PHASES)
@given(**judgments_forgery)
@example(edits=[(n, "other-prediction", "input", 0) for n in range(3, 9)], panel=None)  # the attack of issue 37
def test_a_judged_number_counts_only_the_verdicts_on_the_answer_held(judged_run, tmp_path_factory, edits, panel):
    check_judgments_forgery(judged_run, tmp_path_factory, edits, panel)


@pytest.mark.slow
@SLOW
@given(**judgments_forgery)
def test_a_judged_number_counts_only_the_verdicts_on_the_answer_held_thoroughly(judged_run, tmp_path_factory, edits,
                                                                                panel):
    check_judgments_forgery(judged_run, tmp_path_factory, edits, panel)
