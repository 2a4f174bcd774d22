"""Model text and observations apart by construction (issue 37, item 4).

An evalsuite run records its trajectory as typed segments (model text, observation); verification reads the answer
from the model segments only, each of which must be one of the record's turns. The attack it closes: `<answer>GOLD`
written inside the first `<information>` block and the last turn's text set to that string was accepted with EM 1.0,
because turns were only checked to appear in order somewhere in the trajectory. Records written before segments
existed are re-derived by the method's parser, which locates the observations strictly.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from evalsuite.agent.method import get_method
from evalsuite.leaderboard import verify_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.protocol.search_r1 import INFORMATION, INVALID_ACTION
from evalsuite.protocol.segments import SegmentMismatch, cut, derived_segments, model_turns, typed_segments
from evalsuite.runs import ExampleRecord, summarize
from evalsuite.runs.schema import Segment, Turn
from evalsuite.scoring import score_record

from leaderboard_support import BASE_SEED1, cli

RUN = "run"
WHERE = f"runs/{RUN}/predictions.jsonl.gz"


@pytest.fixture(scope="module")
def replay_submission(tmp_path_factory, trajectories_dir: Path, benchmarks_dir: Path) -> Path:
    """A submission of a real evalsuite run: the recorded Bamboogle trajectories replayed through the rollout loop."""
    tmp = tmp_path_factory.mktemp("segments")
    out = tmp / RUN
    result = cli("run", "--backend", "replay", "--model", trajectories_dir / f"{BASE_SEED1}.json", "--retriever",
                 "replay", "--tasks", "bamboogle", "--data-dir", benchmarks_dir, "-o", out)
    assert result.exit_code == 0, result.output
    sub = tmp / "submission"
    result = cli("submit", out, "-o", sub, "--name", "replay", "--method", "Search-R1", "--model", "replay")
    assert result.exit_code == 0, result.output
    return sub


@pytest.fixture
def sub(replay_submission: Path, tmp_path: Path) -> Path:
    target = tmp_path / "submission"
    shutil.copytree(replay_submission, target)
    return target


def records_of(sub: Path) -> list[ExampleRecord]:
    text = gzip.decompress((sub / "runs" / RUN / "predictions.jsonl.gz").read_bytes()).decode()
    return [ExampleRecord.model_validate_json(line) for line in text.splitlines()]


def forge(sub: Path, records: list[ExampleRecord]) -> None:
    """Write records rescored against their golds, their summary and fresh checksums (a careful forger)."""
    for record in records:
        record.metrics = {**record.metrics, **score_record(record)}
    data = "".join(r.model_dump_json() + "\n" for r in records).encode()
    (sub / "runs" / RUN / "predictions.jsonl.gz").write_bytes(gzip.compress(data))
    (sub / "runs" / RUN / "metrics.json").write_text(summarize(records).model_dump_json(indent=2))
    write_checksums(sub)


def wrong_searcher(records: list[ExampleRecord]) -> int:
    """The first record that searched and answered wrong (EM 0): the one the attack makes right."""
    return next(i for i, r in enumerate(records) if r.metrics["em"] == 0.0 and INFORMATION.open in r.trajectory)


def plant_gold(record: ExampleRecord) -> tuple[str, int]:
    """The attack: `<answer>GOLD</answer>` inside the first observation, the last turn's text set to it; returns the
    planted text and where it went in the trajectory."""
    planted = f"<answer>{record.golden_answers[0]}</answer>"
    at = record.trajectory.index(INFORMATION.open) + len(INFORMATION.open)
    record.trajectory = record.trajectory[:at] + planted + record.trajectory[at:]
    record.turns[-1].text = planted
    record.turns[-1].answer = record.golden_answers[0]
    record.prediction = record.golden_answers[0]
    return planted, at


def test_a_run_records_its_trajectory_as_typed_segments(sub):
    records = records_of(sub)
    for record in records:
        assert record.segments is not None
        pieces = cut(record.trajectory, record.segments)
        assert "".join(text for _, text in pieces) == record.trajectory
        # the model segments are exactly the turns' texts, and every observation is an <information> block
        assert [text for kind, text in pieces if kind == "model"] == [t.text for t in record.turns]
        assert all(text.strip().startswith(INFORMATION.open) for kind, text in pieces if kind == "observation")
    n_observations = sum(1 for r in records for s in r.segments or [] if s.kind == "observation")
    assert n_observations == sum(1 for r in records for t in r.turns if t.query is not None and t is not r.turns[-1])


def test_an_honest_run_verifies(sub, benchmarks_dir):
    report = verify_submission(sub, benchmarks_dir)
    assert report.accepted, [str(p) for p in report.problems]


def test_gold_planted_in_an_observation_is_refused_when_segments_are_left(sub, benchmarks_dir):
    records = records_of(sub)
    i = wrong_searcher(records)
    plant_gold(records[i])
    forge(sub, records)
    report = verify_submission(sub, benchmarks_dir)
    assert not report.accepted
    (problem,) = [p for p in report.problems if p.check == "prediction"]
    assert problem.where == f"{WHERE}:{i + 1}"
    assert "segments cover" in problem.message
    assert report.tasks["bamboogle"].records[i].metrics["em"] == 0.0  # what is shown stays the model's own answer


def test_gold_planted_in_an_observation_is_refused_when_segments_are_recut(sub, benchmarks_dir):
    # The forger lengthens the observation segment to hold the planted text: the last turn is then not its segment.
    records = records_of(sub)
    i = wrong_searcher(records)
    planted, _ = plant_gold(records[i])
    segments = records[i].segments
    assert segments is not None
    first_observation = next(n for n, s in enumerate(segments) if s.kind == "observation")
    segments[first_observation] = Segment(kind="observation", chars=segments[first_observation].chars + len(planted))
    forge(sub, records)
    (problem,) = [p for p in verify_submission(sub, benchmarks_dir).problems if p.check == "prediction"]
    assert problem.where == f"{WHERE}:{i + 1}" and "is not its model segment" in problem.message


def test_gold_planted_as_a_model_segment_inside_an_observation_is_refused(sub, benchmarks_dir):
    # The forger cuts the first observation in two around the planted text and types it as model text, with a turn
    # of its own: an observation then follows a turn that answered, which the loop never writes.
    records = records_of(sub)
    i = wrong_searcher(records)
    record = records[i]
    assert record.segments is not None
    original = cut(record.trajectory, record.segments)
    planted = f"<answer>{record.golden_answers[0]}</answer>"
    first = next(n for n, (kind, _) in enumerate(original) if kind == "observation")
    observation = original[first][1]
    head = observation.index(INFORMATION.open) + len(INFORMATION.open)
    pieces = [*original[:first], ("observation", observation[:head]), ("model", planted),
              ("observation", observation[head:]), *original[first + 1 :]]
    record.trajectory = "".join(text for _, text in pieces)
    record.segments = [Segment(kind=kind, chars=len(text)) for kind, text in pieces]  # type: ignore[arg-type]
    planted_turn = record.turns[-1].model_copy(update={"text": planted, "answer": record.golden_answers[0],
                                                       "query": None, "sub_queries": [], "passages": []})
    record.turns.insert(first // 2 + 1, planted_turn)
    forge(sub, records)
    (problem,) = [p for p in verify_submission(sub, benchmarks_dir).problems if p.check == "prediction"]
    assert problem.where == f"{WHERE}:{i + 1}"
    assert f"segment {first + 3} is an observation after a turn that did not search" in problem.message


def test_segments_re_derived_from_the_turns_are_the_ones_the_loop_wrote(sub):
    # A record written before segments existed gets them re-derived from its turns, the observations located strictly:
    # on every record of a real run they are exactly what the rollout loop recorded.
    method = get_method("search-r1")
    for record in records_of(sub):
        derived = derived_segments(record.trajectory, model_turns(record.turns), method.parse_action,
                                   method.invalid_observation(), INFORMATION)
        assert derived == record.segments, record.id


def test_a_record_without_segments_is_re_derived_from_its_turns(sub, benchmarks_dir):
    # Records written before segments existed: the honest ones verify, the planted answer is refused.
    records = records_of(sub)
    for record in records:
        record.segments = None
    forge(sub, records)
    report = verify_submission(sub, benchmarks_dir)
    assert report.accepted, [str(p) for p in report.problems]

    i = wrong_searcher(records)
    plant_gold(records[i])
    forge(sub, records)
    report = verify_submission(sub, benchmarks_dir)
    (problem,) = [p for p in report.problems if p.check == "prediction"]
    assert problem.where == f"{WHERE}:{i + 1}" and "is not where the loop wrote it" in problem.message


def test_a_turn_whose_recorded_search_is_not_its_text_is_refused(sub, benchmarks_dir):
    records = records_of(sub)
    i = wrong_searcher(records)
    searched = next(t for t in records[i].turns if t.query is not None)
    searched.query = "a query the model never wrote"
    forge(sub, records)
    (problem,) = [p for p in verify_submission(sub, benchmarks_dir).problems if p.check == "prediction"]
    assert problem.where == f"{WHERE}:{i + 1}" and "a query the model never wrote" in problem.message


def test_a_record_written_before_segments_still_loads(sub):
    record = records_of(sub)[0]
    assert record.segments is not None
    old = record.model_dump_json(exclude={"segments"})
    assert "segments" not in old and ExampleRecord.model_validate_json(old).segments is None


def _rollout_pieces(*pieces: tuple[str, bool]) -> tuple[str, list[Turn], list[Segment]]:
    """A trajectory as the loop writes it from (text, by the model) pieces: its turns and the segments it records."""
    trajectory = "".join(text for text, _ in pieces)
    turns = [Turn(text=text, query=get_method("search-r1").parse_action(text).queries[0]
                  if get_method("search-r1").parse_action(text).kind == "search" else None)
             for text, by_model in pieces if by_model]
    return trajectory, turns, typed_segments(pieces)


OBSERVATION = "\n\n<information>Doc 1(Title: A) text</information>\n\n"


@pytest.mark.parametrize("pieces", [
    # a turn that begins with white space right after an observation (the observation's own ends in it too)
    [("<search> q </search>", True), (OBSERVATION, False), ("  \n<answer> x </answer>", True)],
    # an empty generation after an observation, then the invalid-action message (which begins with a newline)
    [("<search> q </search>", True), (OBSERVATION, False), ("", True), (INVALID_ACTION, False),
     ("<answer> y </answer>", True)],
    # white space only as the last turn, and a last observation cut short by the context budget
    [("<search> q </search>", True), (OBSERVATION, False), ("  ", True)],
    [("<search> q </search>", True), ("\n\n<information>Doc 1(Title: A) cut", False)],
    # a search at the turn limit gets no observation
    [("no action", True), (INVALID_ACTION, False), ("<search> q </search>", True)],
])
def test_derived_segments_locate_each_piece_where_the_loop_wrote_it(pieces):
    trajectory, turns, written = _rollout_pieces(*pieces)
    method = get_method("search-r1")
    assert derived_segments(trajectory, turns, method.parse_action, INVALID_ACTION, INFORMATION) == written


def test_a_turn_claimed_inside_an_observation_is_never_located():
    trajectory, turns, _ = _rollout_pieces(("<search> q </search>", True), (OBSERVATION, False),
                                           ("<answer> wrong </answer>", True))
    planted = "<answer> gold </answer>"
    trajectory = trajectory.replace("Doc 1", planted + "Doc 1")
    turns[-1] = Turn(text=planted)
    method = get_method("search-r1")
    with pytest.raises(SegmentMismatch, match="turn 2's text is not where the loop wrote it"):
        derived_segments(trajectory, turns, method.parse_action, INVALID_ACTION, INFORMATION)
