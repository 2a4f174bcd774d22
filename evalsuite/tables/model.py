"""The neutral table every layout builds and every renderer prints: grouped columns, grouped rows, marked cells."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Emphasis = Literal["", "best", "second"]


@dataclass
class Column:
    """A value column; `highlight` columns get best (bold) and second-best (underline) marks."""

    key: str
    label: str
    highlight: bool = True
    higher_is_better: bool = True


@dataclass
class ColumnGroup:
    """Consecutive columns under one spanning header ('' for none)."""

    title: str
    columns: list[Column]


@dataclass
class Cell:
    """A printed cell: its text without markup, its number (for ranking and CSV), marks and emphasis."""

    text: str
    value: float | None = None
    marks: str = ""
    emphasis: Emphasis = ""
    # Shown after the value when intervals are requested, e.g. "± 3.1"; kept apart so CSV stays numeric.
    detail: str = ""


@dataclass
class Row:
    """One row: the leading label cells (method, train set, ...), value cells by column key, and a row mark."""

    lead: list[str]
    cells: dict[str, Cell]
    mark: str = ""


@dataclass
class RowGroup:
    """Consecutive rows under a group header ('' for none)."""

    title: str
    rows: list[Row]


@dataclass
class Table:
    """A paper-style table; footnotes carry provenance and the meaning of every mark."""

    title: str
    lead_headers: list[str]
    column_groups: list[ColumnGroup]
    row_groups: list[RowGroup]
    caption: str = ""
    footnotes: list[str] = field(default_factory=list)

    @property
    def columns(self) -> list[Column]:
        """All value columns in printed order."""
        return [c for g in self.column_groups for c in g.columns]

    @property
    def rows(self) -> list[Row]:
        """All rows in printed order."""
        return [r for g in self.row_groups for r in g.rows]

    @property
    def has_column_groups(self) -> bool:
        return any(g.title for g in self.column_groups)


def mark_best(table: Table, scope: Literal["table", "group"] = "table") -> None:
    """Bold the best and underline the second-best value of each highlight column (ties share the mark)."""
    scopes = [table.rows] if scope == "table" else [g.rows for g in table.row_groups]
    for column in table.columns:
        if not column.highlight:
            continue
        for rows in scopes:
            cells = [
                r.cells[column.key] for r in rows if column.key in r.cells and r.cells[column.key].value is not None
            ]
            distinct = sorted({c.value for c in cells}, reverse=column.higher_is_better)  # type: ignore[type-var]
            for cell in cells:
                cell.emphasis = (
                    "best"
                    if cell.value == distinct[0]
                    else "second"
                    if len(distinct) > 1 and cell.value == distinct[1]
                    else ""
                )
