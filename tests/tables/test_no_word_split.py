"""Terminal tables never break inside a word, at 80 columns and up: every transcribed paper table (the widest real
tables the suite prints) and the `tasks` listing, printed through rich at widths 80, 100, 120 and 200. A table whose
longest words fit keeps its columns at least that wide; one whose words do not fit prints one block per row."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.table import Table as RichTable

from evalsuite.console import FittedTable, narrowed
from evalsuite.reported import list_reported, load_reported
from evalsuite.tables.render import rich_table
from evalsuite.tables.reported_table import table_from_reported

WIDTHS = [80, 100, 120, 200]
BOX = re.compile(r"[\u2500-\u257f]")  # box-drawing characters: borders, not words


def printed(renderable, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None, markup=True)
    console.print(renderable)
    return console.export_text()


def words(text: str) -> list[str]:
    return [w.rstrip(":") for w in BOX.sub(" ", text).split()]


def assert_no_word_split(make, width: int) -> str:
    """Every word printed at `width` is a word of the same table printed where nothing needs to wrap: a word split
    across lines would print as two fragments that are not words of the table (`Zero-searc`, `h`)."""
    whole = set(words(printed(make(), 100_000)))
    text = printed(make(), width)
    fragments = sorted(set(words(text)) - whole)
    assert not fragments, f"at {width} columns these are pieces of words: {fragments}\n{text}"
    assert "…" not in text and max(map(len, text.splitlines())) <= width
    return text


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("key", list_reported())
def test_every_transcribed_paper_table_keeps_its_words_whole(key, width):
    assert_no_word_split(lambda: rich_table(table_from_reported(load_reported(key))), width)


def test_a_table_too_wide_for_its_words_prints_one_block_per_row_and_a_narrower_one_stays_a_table():
    make = lambda: rich_table(table_from_reported(load_reported("progress:table1")))  # noqa: E731
    vertical = assert_no_word_split(make, 80)
    assert "┃" not in vertical and "Method: Search-R1 (EM, FR)" in vertical and "  MuSiQue⋆: 13.65" in vertical
    table = assert_no_word_split(make, 120)
    assert "┃" in table and "Zero-search" in table  # rich alone printed `Zero-searc` / `h` here


@pytest.mark.parametrize("width", WIDTHS)
def test_task_names_a_user_types_are_never_split(width):
    from evalsuite.tasks.registry import list_tasks

    def make():
        table = RichTable(title="tasks")
        for column in ("task", "category", "eval split", "hub", "description"):
            table.add_column(column)
        for task in list_tasks():
            table.add_row(task.name, str(task.category), task.eval_split, str(task.hub_path), str(task.description))
        return FittedTable(table)

    text = assert_no_word_split(make, width)
    assert "2wikimultihopqa" in text


def test_narrowing_takes_from_the_widest_column_and_never_below_a_minimum():
    assert narrowed([30, 10, 20], [12, 10, 5], 40) == [15, 10, 15]
    assert narrowed([30, 10, 20], [12, 10, 5], 27) == [12, 10, 5]
    assert narrowed([8, 8], [2, 2], 20) == [8, 8]
