"""Paper-style tables: a neutral table model, layouts (from papers' reported numbers or from runs), renderers, plots."""

from evalsuite.tables.layouts import LAYOUTS, build_run_table, differences_table, get_layout
from evalsuite.tables.model import Cell, Column, ColumnGroup, Row, RowGroup, Table, mark_best
from evalsuite.tables.render import RENDERERS, render
from evalsuite.tables.reported_table import table_from_reported
from evalsuite.tables.sources import RunData, load_runs, resolve_baseline

__all__ = [
    "LAYOUTS",
    "RENDERERS",
    "Cell",
    "Column",
    "ColumnGroup",
    "Row",
    "RowGroup",
    "RunData",
    "Table",
    "build_run_table",
    "differences_table",
    "get_layout",
    "load_runs",
    "mark_best",
    "render",
    "resolve_baseline",
    "table_from_reported",
]
