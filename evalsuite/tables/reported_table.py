"""A transcribed paper table (evalsuite.reported) as a printable table, in the paper's own layout and digits."""

from __future__ import annotations

from typing import Literal

from evalsuite.reported import ReportedRow, ReportedTable, ReportedValue
from evalsuite.tables.model import Cell, Column, ColumnGroup, Row, RowGroup, Table, mark_best

EmphasisMode = Literal["auto", "computed", "paper", "none"]


def _row_name(row: ReportedRow, group_title: str, with_train_set: bool) -> str:
    # Labels are unique keys ("Search-R1 [HotpotQA]", "2wiki / Progress"); print what the paper printed.
    name = row.label
    if with_train_set and row.train_set and name.endswith(f" [{row.train_set}]"):
        name = name[: -len(f" [{row.train_set}]")]
    if group_title and name.startswith(f"{group_title} / "):
        name = name[len(group_title) + 3 :]
    return name


def _cell(value: ReportedValue, column_marks: str, unit: str) -> Cell:
    # Column marks (†/⋆) are printed in the header; a cell shows only marks of its own.
    own = value.marks[len(column_marks) :] if value.marks.startswith(column_marks) else value.marks
    text = value.printed + (unit if value.value is not None else "")
    emphasis: Literal["", "best", "second"] = "best" if value.bold else "second" if value.underline else ""
    return Cell(text=text, value=value.value, marks=own, emphasis=emphasis)


def table_from_reported(reported: ReportedTable, emphasis: EmphasisMode = "auto") -> Table:
    """Rebuild a reported table: its column and row groups, printed numbers, marks, and best/second emphasis.

    `auto` keeps the paper's bold/underline where the transcription has them and otherwise recomputes them per
    column (within each row group when the groups are datasets); tables of raw counts get none.
    """
    # Tables whose row groups are datasets (Progress Table 3) print no train set; the transcription assumes one.
    with_train_set = any(r.train_set for r in reported.rows.values()) and not any(
        r.dataset for r in reported.rows.values()
    )
    lead_headers = ["Method"] + (["Trainset"] if with_train_set else [])
    column_groups = [
        ColumnGroup(
            title, [Column(key, reported.column_labels[key], highlight=reported.scale != "raw") for key in keys]
        )
        for title, keys in reported.column_groups
    ]
    row_groups = []
    for title, labels in reported.row_groups:
        rows = []
        for label in labels:
            meta = reported.rows[label]
            lead = [_row_name(meta, title, with_train_set)] + ([meta.train_set or "-"] if with_train_set else [])
            cells = {
                key: _cell(reported.cells[(label, key)], reported.columns[key].marks, reported.columns[key].unit)
                for _, keys in reported.column_groups
                for key in keys
            }
            rows.append(Row(lead, cells))
        row_groups.append(RowGroup(title, rows))
    table = Table(
        title=f"Table {reported.table} ({reported.key})",
        lead_headers=lead_headers,
        column_groups=column_groups,
        row_groups=row_groups,
        caption=reported.caption,
        footnotes=[
            f"Transcribed from {reported.citation} ({reported.key}); "
            f"metric: {reported.metric}, scale: {reported.scale}."
        ],
    )
    _apply_emphasis(table, reported, emphasis)
    return table


def _apply_emphasis(table: Table, reported: ReportedTable, mode: EmphasisMode) -> None:
    printed = any(v.bold or v.underline for v in reported.cells.values())
    if mode == "paper" or (mode == "auto" and printed):
        return
    for cell in (c for r in table.rows for c in r.cells.values()):
        cell.emphasis = ""
    if mode == "none":
        return
    by_dataset = any(r.dataset for r in reported.rows.values())
    mark_best(table, scope="group" if by_dataset else "table")
    table.footnotes.append(
        "Bold: best, underline: second best per column"
        + (" within each group" if by_dataset else "")
        + (" (recomputed here; the transcription does not record the paper's emphasis)." if not printed else ".")
    )
