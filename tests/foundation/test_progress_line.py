"""The progress line written when stderr is not a terminal: counts, elapsed and estimated time, and throttling."""

from __future__ import annotations

from evalsuite.console import ProgressLine, format_duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_durations_read_as_minutes_and_seconds_or_hours():
    assert [format_duration(s) for s in (0, 59.6, 62, 3599, 3723)] == ["0:00", "1:00", "1:02", "59:59", "1:02:03"]


def test_the_estimate_is_the_mean_time_per_example_finished_here_times_those_left():
    clock, lines = Clock(), []
    line = ProgressLine("examples", lines.append, every_s=10, clock=clock)
    line.start(20, already=4)  # a resume: 4 done before, not timed
    clock.now += 12
    line.advance(3, "adqa EM 33.3")  # 3 in 12 s: 4 s each, 13 left -> 52 s
    clock.now += 5
    line.advance(1)  # within 10 s of the last line: no line
    clock.now += 5
    line.advance(1)  # 5 in 22 s: 4.4 s each, 11 left -> 48.4 s
    assert lines == [
        "examples: 20 to run, 4 already done",
        "examples 7/20 · 0:12 elapsed · about 0:52 left · adqa EM 33.3",
        "examples 9/20 · 0:22 elapsed · about 0:48 left",
    ]


def test_the_last_example_always_gets_its_line():
    clock, lines = Clock(), []
    line = ProgressLine("examples", lines.append, every_s=10, clock=clock)
    line.start(2, already=0)
    clock.now += 3
    line.advance(1)
    clock.now += 1
    line.advance(1)
    # the start line counts as the last line written (#39: at most one line every 10 s), so the first example, 3 s
    # later, gets none; the last one always does
    assert lines == ["examples: 2 to run", "examples 2/2 · 0:04 elapsed · about 0:00 left"]
