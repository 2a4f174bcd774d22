"""Command output that survives a pipe.

On a terminal, tables are rich tables; when stdout is a file or a pipe (logs, CI, SLURM output), they print as
Markdown at full width, so no cell is ever wrapped or cut. `--json` output is one object on stdout and nothing
else. Progress goes to stderr: bars on a terminal, otherwise a plain progress line every few seconds (a log keeps
them readable). Text that comes from users (file names,
submitted names, error messages) is printed literally: a `[/]` in it is text, never rich markup.
"""

from __future__ import annotations

import copy
import json
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markup import escape
from rich.table import Table
from rich.text import Text

TABLE_FORMATS = ("terminal", "markdown")

__all__ = [
    "TABLE_FORMATS",
    "echo_json",
    "err_console",
    "escape",
    "FittedTable",
    "out_console",
    "never_cut",
    "vertical_lines",
    "print_table",
    "progress",
    "ProgressLine",
    "heartbeat_thread",
    "format_duration",
    "table_markdown",
]


def out_console(markup: bool = False) -> Console:
    """The stdout console. soft_wrap: a line longer than the terminal is never broken or cut; markup is off unless
    the caller's strings are written for it (with user text passed through `escape`)."""
    return Console(soft_wrap=True, highlight=False, markup=markup)


def err_console() -> Console:
    """The stderr console, for progress and notes that must not mix with a command's output."""
    return Console(stderr=True, soft_wrap=True, highlight=False, markup=False)


def _plain(cell: Any) -> str:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return text.replace("\n", " ").replace("|", "\\|")


def table_markdown(table: Table) -> str:
    """A rich table as a GitHub Markdown table, every cell in full (cell strings are taken literally)."""
    headers = [_plain(column.header) for column in table.columns]
    columns = [list(column.cells) for column in table.columns]
    rows = [
        [_plain(col[i]) if i < len(col) else "" for col in columns] for i in range(max(map(len, columns), default=0))
    ]
    widths = [max([len(h), 3, *(len(r[j]) for r in rows)]) for j, h in enumerate(headers)]
    right = [column.justify == "right" for column in table.columns]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)) + " |"

    rule = "| " + " | ".join("-" * (w - 1) + ":" if r else "-" * w for w, r in zip(widths, right)) + " |"
    out = [line(headers), rule, *(line(r) for r in rows)]
    title = _plain(table.title) if table.title else ""
    caption = f"\n{_plain(table.caption)}\n" if table.caption else ""
    return (f"**{title}**\n\n" if title else "") + "\n".join(out) + "\n" + caption


def never_cut(table: Table) -> Table:
    """The table with no cell ever cut: a column rich would end with `…` when the terminal is narrow folds its text
    onto more lines instead, so a run's name (`bamboogle_2026_04_24_16_17_search_r1_base`) is always there whole."""
    for column in table.columns:
        if column.overflow == "ellipsis":
            column.overflow = "fold"
    return table


class FittedTable:
    """A rich table that never breaks inside a word. When its columns' longest words fit the width it is printed at,
    each column gets at least its longest word (rich's own narrowing ignores that and splits `2wikimultihopqa`) and
    cells wrap at spaces; when they do not fit, the table prints as one block per row, each cell on a line under its
    column's header, wrapped at spaces."""

    def __init__(self, table: Table):
        self.table = never_cut(table)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table = self.table
        # rich's own measures (private; rich 13 to 15): per column, padding included, and the borders' width
        wide = options.update_width(10**6)
        ranges = [table._measure_column(console, wide, column) for column in table.columns]
        available = options.max_width - table._extra_width
        if sum(r.maximum for r in ranges) <= available:
            yield table
        elif sum(r.minimum for r in ranges) <= available:
            yield _with_widths(table, narrowed([r.maximum for r in ranges], [r.minimum for r in ranges], available))
        else:
            yield from vertical_lines(table, console, options.max_width)


def narrowed(widths: list[int], minimums: list[int], available: int) -> list[int]:
    """Column widths that sum to at most `available`, taking one column at a time from the widest one still above
    its minimum (so no column goes below its longest word; callers check that the minimums fit)."""
    widths = list(widths)
    while sum(widths) > available:
        shrinkable = [i for i, (w, m) in enumerate(zip(widths, minimums)) if w > m]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def _with_widths(table: Table, widths: list[int]) -> Table:
    """A copy of `table` whose columns have these widths (padding included), so rich does not narrow them again."""
    fixed = copy.copy(table)
    fixed.columns = [copy.copy(column) for column in table.columns]
    for index, (column, width) in enumerate(zip(fixed.columns, widths)):
        column.width = width - table._get_padding_width(index)
    return fixed


def _as_text(cell: Any, console: Console) -> Text:
    if isinstance(cell, Text):
        return cell.copy()
    return console.render_str(str(cell)) if isinstance(cell, str) else Text(str(cell))


def vertical_lines(table: Table, console: Console, width: int) -> Iterator[Text]:
    """The table one row at a time: the first cell as the row's heading, then `header: cell` per other column, every
    line wrapped at spaces to `width` (indented under its first line)."""

    def wrapped(text: Text, indent: int) -> Iterator[Text]:
        # the lines after the first are indented two more, so they are wrapped two narrower
        for number, line in enumerate(text.wrap(console, max(width - indent - 2, 20), overflow="fold")):
            yield Text(" " * (indent + (2 if number else 0))) + line

    for part in (table.title, table.caption):
        if part:
            yield from wrapped(_as_text(part, console).copy(), 0)
    headers = [_as_text(column.header, console) for column in table.columns]
    for header in headers:
        header.plain = header.plain.replace("\n", " ").strip()  # a group title over its first column, then the label
    columns = [list(column.cells) for column in table.columns]
    for row in range(max(map(len, columns), default=0)):
        cells = [_as_text(column[row], console) if row < len(column) else Text() for column in columns]
        yield Text()
        yield from wrapped(Text.assemble(headers[0], ": ", cells[0]) if headers[0].plain else cells[0], 0)
        for header, cell in zip(headers[1:], cells[1:]):
            if cell.plain.strip():
                yield from wrapped(Text.assemble(header, ": ", cell), 2)


def print_table(table: Table, fmt: str | None = None) -> None:
    """Print a table: rich on a terminal (rows as blocks when its words do not fit the width), else (or with
    fmt='markdown') Markdown at full width."""
    if fmt is None:
        fmt = "terminal" if sys.stdout.isatty() else "markdown"
    if fmt == "terminal":
        out_console().print(FittedTable(table))
    elif fmt == "markdown":
        sys.stdout.write(table_markdown(table) + "\n")
        sys.stdout.flush()
    else:
        raise ValueError(f"unknown table format {fmt!r}")


def echo_json(obj: Any) -> None:
    """One machine-readable object on stdout."""
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


@contextmanager
def progress(*columns: Any, transient: bool = False) -> Iterator[Any]:
    """A rich Progress on stderr, silent (disabled) when stderr is not a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = err_console()
    columns = columns or (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    bar = Progress(*columns, console=console, transient=transient, disable=not console.is_terminal)
    with bar:
        yield bar


def format_duration(seconds: float) -> str:
    """`1:02:03` or `2:03` (minutes:seconds under an hour): how the progress line and the bars show a duration."""
    whole = max(0, int(round(seconds)))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ProgressLine:
    """Progress as plain lines for a stderr that is not a terminal (a log file, CI, SLURM): `label 5/20 · 0:42
    elapsed · about 1:30 left · detail`, at most one line every `every_s` seconds plus the line of the last item,
    so a 1,000-example run does not write 1,000 lines. The estimate is the mean time per item finished in this
    process times the items left (items done before a --resume are not timed).

    Before the items start, `stage` names what is loading (`loading the model · 0:10 elapsed`); `heartbeat()`, called
    from a timer thread (`heartbeat_thread`), writes the current line whenever `every_s` passed without one, so a log
    hears from a run at least that often even while a model loads or one batch takes minutes. `tokens` counts the
    tokens generated so far: a batch in flight shows them grow."""

    def __init__(
        self,
        label: str,
        write: Callable[[str], None],
        every_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.label, self.write, self.every_s, self.clock = label, write, every_s, clock
        self.total: int | None = None
        self.done = self.already = self.tokens = 0
        self.began = self.started = clock()
        self.last_line: float | None = None
        self.current_stage: str | None = "starting"
        self.detail = ""
        self._lock = threading.Lock()  # the heartbeat thread and the run write lines

    def _emit(self, text: str) -> None:
        with self._lock:
            self.last_line = self.clock()
            self.write(text)

    def stage(self, text: str) -> None:
        """What loads now (before the first item): written at once."""
        self.current_stage = text
        self._emit(f"{text} · {format_duration(self.clock() - self.began)} elapsed")

    def start(self, total: int, already: int) -> None:
        self.total, self.done, self.already = total, already, already
        self.started = self.clock()
        self.current_stage = None
        self._emit(f"{self.label}: {total} to run" + (f", {already} already done" if already else ""))

    def line(self) -> str:
        if self.total is None and self.current_stage is not None:
            return f"{self.current_stage} · {format_duration(self.clock() - self.began)} elapsed"
        elapsed = self.clock() - self.started
        parts = [
            f"{self.label} {self.done}/{self.total if self.total is not None else '?'}",
            f"{format_duration(elapsed)} elapsed",
        ]
        left = self.seconds_left()
        if left is not None:
            parts.append(f"about {format_duration(left)} left")
        if self.tokens:
            parts.append(f"{self.tokens:,} tokens generated")
        return " · ".join(parts)

    def seconds_left(self) -> float | None:
        """Mean seconds per item finished here × items left; None before the first item or without a total."""
        finished_here = self.done - self.already
        if self.total is None or finished_here <= 0:
            return None
        return (self.clock() - self.started) / finished_here * (self.total - self.done)

    def generated(self, tokens: int) -> None:
        """Tokens one generation call produced (shown by the next line; the heartbeat writes it in time)."""
        self.tokens += tokens

    def advance(self, count: int, detail: str = "") -> None:
        self.done += count
        self.detail = detail
        now = self.clock()
        last_item = self.total is not None and self.done >= self.total
        if last_item or self.last_line is None or now - self.last_line >= self.every_s:
            self._emit(self.line() + (f" · {detail}" if detail else ""))

    def heartbeat(self) -> None:
        """Write the current line if `every_s` passed since the last one."""
        since = self.began if self.last_line is None else self.last_line
        if self.clock() - since >= self.every_s:
            self._emit(self.line() + (f" · {self.detail}" if self.detail else ""))


@contextmanager
def heartbeat_thread(line: ProgressLine, tick_s: float = 1.0) -> Iterator[ProgressLine]:
    """Call `line.heartbeat()` every `tick_s` seconds from a daemon thread while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(tick_s):
            line.heartbeat()

    thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
    thread.start()
    try:
        yield line
    finally:
        stop.set()
        thread.join()
