"""What `evalsuite run` shows on stderr from its start to its last example.

On a terminal: one bar whose label names what loads (the demo model, the tasks, the model, the retriever) until the
examples start, then the examples done, the time elapsed and the time left (each labelled), the tokens generated
and the running headline metric. When stderr is a log: the same as plain lines (`console.ProgressLine`), at least one
every 10 s from the start, also while the model loads and while a batch is in flight.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from evalsuite.cli._interrupt import Kept
from evalsuite.console import ProgressLine, err_console, heartbeat_thread, progress


def bar_columns() -> tuple[Any, ...]:
    """The run's bar: `examples ━━━ 6/6 0:01:49 elapsed 0:00:00 left 1,234 tokens · nq EM 33.3`."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    return (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("elapsed"),
        TimeRemainingColumn(),
        TextColumn("left"),
        TextColumn("{task.fields[detail]}"),
    )


@dataclass
class RunProgress:
    """The hooks `agent.runner.execute` reports to, shown as a bar or as lines; `kept` counts the finished (status ok)
    records on disk, for the line Ctrl-C prints."""

    bars: Any
    line: ProgressLine | None
    headline: Any
    kept: Kept
    bar: Any = None
    tokens: int = 0
    scores: str = ""
    totals: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bar = self.bars.add_task("starting", total=None, detail="")

    def stage(self, text: str) -> None:
        self.bars.update(self.bar, description=text)
        if self.line is not None:
            self.line.stage(text)

    def note(self, text: str) -> None:
        """A line of its own on stderr (through the bar's console, which keeps the bar below it on a terminal)."""
        self.bars.console.print(text, markup=False, highlight=False)

    def start(self, total: int, already: int) -> None:
        self.kept.count = already
        self.bars.update(self.bar, description="examples", total=total, completed=already)
        if self.line is not None:
            self.line.start(total, already)

    def generated(self, tokens: int) -> None:
        self.tokens += tokens
        self.bars.update(self.bar, detail=self._detail())
        if self.line is not None:
            self.line.generated(tokens)

    def finished(self, records: list[Any]) -> None:
        self.kept.count += sum(record.status == "ok" for record in records)
        self.scores = self._running_scores(records)
        self.bars.update(self.bar, advance=len(records), detail=self._detail())
        if self.line is not None:
            self.line.advance(len(records), self.scores)

    def _detail(self) -> str:
        return " · ".join(part for part in (f"{self.tokens:,} tokens" if self.tokens else "", self.scores) if part)

    def _running_scores(self, records: list[Any]) -> str:
        """The headline metric per task over the records finished so far."""
        for record in records:
            sums = self.totals.setdefault(record.task, [0.0, 0])
            sums[0] += record.metrics.get(self.headline.name, 0.0)
            sums[1] += 1
        label, scaled = self.headline.label, self.headline.scaled
        return "  ".join(f"{task} {label} {scaled(s / n):.1f}" for task, (s, n) in self.totals.items())

    def hooks(self) -> dict[str, Any]:
        """The keyword arguments of `execute` that report progress (on Ray too)."""
        return {"on_start": self.start, "on_batch": self.finished}


@contextmanager
def run_progress(kept: Kept) -> Iterator[RunProgress]:
    """A run's progress on stderr, from now until the block ends; `kept` counts the finished records."""
    from evalsuite.metrics.registry import summary_metrics

    stderr = err_console()
    with ExitStack() as stack:
        bars = stack.enter_context(progress(*bar_columns()))
        line = None if stderr.is_terminal else ProgressLine("examples", lambda text: stderr.print(text))
        if line is not None:
            stack.enter_context(heartbeat_thread(line))
        yield RunProgress(bars, line, summary_metrics()[0], kept)
