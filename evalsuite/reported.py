"""Numbers the seed papers report, transcribed into `evalsuite/methods/<method>/reported/<table>.yaml`; their loader.

A file holds one printed table. Cells are kept as printed (e.g. "10.60", "**43.82**", "0.463"), so the
printed precision survives YAML and a renderer can reproduce the table digit for digit. See docs/reported.md.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from evalsuite.errors import DataError, EvalsuiteError, did_you_mean

# Printed markers for "not reported" cells.
MISSING_TOKENS = frozenset({"-", "–", "—", "n/a"})
_NUMBER = re.compile(r"^(?P<num>[+-]?\d+(?:\.\d+)?)(?P<rest>.*)$")


@dataclass(frozen=True)
class ReportedValue:
    """One printed cell: its value (None when not reported), marks such as †/⋆, and emphasis."""

    value: float | None
    marks: str = ""
    bold: bool = False
    underline: bool = False
    # The number exactly as printed ("10.60"), so renderers keep the paper's precision.
    printed: str = ""

    @property
    def decimals(self) -> int:
        """Digits after the decimal point as printed (0 for integers and missing cells)."""
        return len(self.printed.split(".", 1)[1]) if "." in self.printed else 0


@dataclass(frozen=True)
class ReportedColumn:
    """A printed column: a dataset score, an average of other columns, or another measure."""

    key: str
    label: str
    metric: str
    dataset: str | None = None
    marks: str = ""
    unit: str = ""
    average_of: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportedRow:
    """A printed row: which model, method and training set produced its numbers."""

    label: str
    model: str | None
    method: str
    train_set: str | None
    # For tables whose rows (not columns) are datasets, e.g. Progress Table 3.
    dataset: str | None = None


@dataclass(frozen=True)
class ReportedRecord:
    """One cell in long format (one record per cell)."""

    paper: str
    table: str
    caption: str
    model: str | None
    method: str
    train_set: str | None
    dataset: str
    metric: str
    value: float | None
    marks: str
    column: str
    printed: str
    is_average: bool


@dataclass(frozen=True)
class AverageCheck:
    """A printed average compared with the mean of the cells it averages, at the printed precision."""

    key: str
    row: str
    column: str
    printed: float
    recomputed: float
    ulps: int  # difference in units of the last printed digit

    @property
    def kind(self) -> Literal["exact", "rounding", "disagrees"]:
        """'rounding' means off by one last digit, which rounding of unrounded cells can explain."""
        return "exact" if self.ulps == 0 else "rounding" if abs(self.ulps) == 1 else "disagrees"


@dataclass
class ReportedTable:
    """One transcribed paper table with the layout needed to print it again."""

    key: str
    paper: str
    table: str
    caption: str
    metric: str
    column_groups: list[tuple[str, list[str]]]
    row_groups: list[tuple[str, list[str]]]
    cells: dict[tuple[str, str], ReportedValue]
    column_labels: dict[str, str]
    notes: list[str]
    paper_title: str
    columns: dict[str, ReportedColumn] = field(default_factory=dict)
    rows: dict[str, ReportedRow] = field(default_factory=dict)
    scale: Literal["percent", "fraction", "raw"] = "percent"
    averaging: str = ""
    arxiv: str | None = None
    # Where the table sits in the seed text it was transcribed from; only the transcription test reads it.
    seed_lines: str = ""

    @property
    def citation(self) -> str:
        """The paper and table, e.g. 'OASES: ... (arXiv:2604.01234), Table 1'."""
        arxiv = f" (arXiv:{self.arxiv})" if self.arxiv else ""
        return f"{self.paper_title or self.paper}{arxiv}, Table {self.table}"

    def long_rows(self) -> list[ReportedRecord]:
        """Every cell as a record, rows and columns in printed order."""
        records = []
        for _, labels in self.row_groups:
            for label in labels:
                row = self.rows[label]
                for _, keys in self.column_groups:
                    for key in keys:
                        col = self.columns[key]
                        cell = self.cells[(label, key)]
                        records.append(
                            ReportedRecord(
                                paper=self.paper,
                                table=self.table,
                                caption=self.caption,
                                model=row.model,
                                method=row.method,
                                train_set=row.train_set,
                                dataset=col.dataset or row.dataset or col.key,
                                metric=col.metric,
                                value=cell.value,
                                marks=cell.marks,
                                column=key,
                                printed=cell.printed,
                                is_average=bool(col.average_of),
                            )
                        )
        return records

    def check_averages(self) -> list[AverageCheck]:
        """Recompute every printed average as the mean of its cells, rounded half-up to the printed digits."""
        checks = []
        for (label, key), cell in self.cells.items():
            col = self.columns[key]
            if not col.average_of or cell.value is None:
                continue
            parts = [self.cells[(label, k)] for k in col.average_of]
            if any(p.value is None for p in parts):
                continue
            mean = sum((Decimal(p.printed) for p in parts), Decimal(0)) / len(parts)
            quantum = Decimal(1).scaleb(-cell.decimals)
            rounded = mean.quantize(quantum, rounding=ROUND_HALF_UP)
            ulps = int((Decimal(cell.printed) - rounded) / quantum)
            checks.append(AverageCheck(self.key, label, key, float(cell.printed), float(rounded), ulps))
        return checks


# ---- file schema (validated with pydantic so errors name the field) ----


class _ColumnSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key: str
    label: str
    dataset: str | None = None
    metric: str | None = None
    marks: str = ""
    unit: str = ""
    average_of: list[str] = []


class _ColumnGroupSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = ""
    columns: list[_ColumnSpec]


class _RowSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str
    method: str | None = None
    model: str | None = None
    train_set: str | None = None
    dataset: str | None = None
    cells: str

    @field_validator("cells", mode="before")
    @classmethod
    def _cells_are_text(cls, v):
        if not isinstance(v, str):
            raise ValueError('cells must be one quoted string of printed tokens, e.g. "10.60 28.80 -"')
        return v


class _RowGroupSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = ""
    model: str | None = None
    train_set: str | None = None
    dataset: str | None = None
    rows: list[_RowSpec]


class _TableSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paper: str
    paper_title: str
    arxiv: str | None = None
    table: str
    caption: str
    metric: str
    scale: Literal["percent", "fraction", "raw"] = "percent"
    seed_lines: str
    averaging: str = ""
    column_groups: list[_ColumnGroupSpec]
    row_groups: list[_RowGroupSpec]
    notes: list[str] = []

    @field_validator("table", mode="before")
    @classmethod
    def _table_as_text(cls, v):
        return str(v)

    @model_validator(mode="after")
    def _consistent(self):
        keys = [c.key for g in self.column_groups for c in g.columns]
        dup = {k for k in keys if keys.count(k) > 1}
        if dup:
            raise ValueError(f"duplicate column keys {sorted(dup)}")
        for g in self.column_groups:
            for c in g.columns:
                unknown = [k for k in c.average_of if k not in keys]
                if unknown:
                    raise ValueError(f"column {c.key!r} averages unknown columns {unknown}")
        labels = [r.label for g in self.row_groups for r in g.rows]
        dup = {k for k in labels if labels.count(k) > 1}
        if dup:
            raise ValueError(
                f"duplicate row labels {sorted(dup)}; make labels unique (method and train_set stay separate)"
            )
        return self


def reported_folders(root: Path | str | None = None) -> dict[str, Path]:
    """Each paper's folder of transcribed tables by its key (the method's registered name): the `<paper>/` folders
    under `root` (or under EVALSUITE_REPORTED_DIR when it is set), else the `reported/` folder of every method package
    that ships one (evalsuite/methods/<package>/reported/)."""
    from evalsuite.resources import method_folders

    root = root or os.environ.get("EVALSUITE_REPORTED_DIR")
    if root:
        return {p.name: p for p in sorted(Path(root).iterdir()) if p.is_dir()} if Path(root).is_dir() else {}
    return dict(sorted(method_folders("reported").items()))


def _paths(root: Path | str | None) -> dict[str, Path]:
    return {
        f"{paper}:{p.stem}": p
        for paper, folder in reported_folders(root).items()
        for p in sorted(folder.glob("table*.yaml"))
    }


def list_reported(root: Path | str | None = None) -> list[str]:
    """Keys of every transcribed table, e.g. 'progress:table1'."""
    return sorted(_paths(root))


def load_reported(key: str, root: Path | str | None = None) -> ReportedTable:
    """Load and validate one transcribed table by key ('<paper>:<table file stem>')."""
    paths = _paths(root)
    if key not in paths:
        where = root or "the method packages"
        hint = did_you_mean(key, paths, f"known tables: {', '.join(paths) or f'none under {where}'}")
        raise EvalsuiteError(f"no reported table {key!r}", hint=hint)
    return parse_table_file(paths[key], key)


def _validated(path: Path, model: type[BaseModel]):
    """Read a YAML file into a pydantic model; errors name the file and the field path."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: not valid YAML: {exc}", hint="fix the syntax at the line shown") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise DataError(f"{path}: {where}", hint="see docs/reported.md for the file format") from None


def parse_table_file(path: Path, key: str | None = None) -> ReportedTable:
    """Parse one YAML table file; every problem is a DataError naming the file and field."""
    key = key or f"{path.parent.name}:{path.stem}"
    spec = _validated(path, _TableSpec)
    paper = key.partition(":")[0]
    if spec.paper != paper:
        raise DataError(
            f"{path}: paper {spec.paper!r} differs from its folder's paper {paper!r}",
            hint="a table file lives in its method package's reported/ folder (or <root>/<paper>/), named by its paper",
        )
    return _build(spec, key, path)


def _check_dataset(name: str | None, where: str) -> None:
    from evalsuite.tasks import list_tasks

    known = [t.name for t in list_tasks()]
    if name is not None and name not in known:
        raise DataError(f"{where}: dataset {name!r} is not an evalsuite task", hint=f"use one of {', '.join(known)}")


def _build(spec: _TableSpec, key: str, path: Path) -> ReportedTable:
    for gi, column_group in enumerate(spec.column_groups):
        for ci, c in enumerate(column_group.columns):
            _check_dataset(c.dataset, f"{path}: column_groups.{gi}.columns.{ci}")
    for gi, row_group in enumerate(spec.row_groups):
        _check_dataset(row_group.dataset, f"{path}: row_groups.{gi}")
        for ri, r in enumerate(row_group.rows):
            _check_dataset(r.dataset, f"{path}: row_groups.{gi}.rows.{ri}")
    columns = {
        c.key: ReportedColumn(c.key, c.label, c.metric or spec.metric, c.dataset, c.marks, c.unit, tuple(c.average_of))
        for g in spec.column_groups
        for c in g.columns
    }
    order = list(columns)
    rows: dict[str, ReportedRow] = {}
    cells: dict[tuple[str, str], ReportedValue] = {}
    for gi, group in enumerate(spec.row_groups):
        for ri, r in enumerate(group.rows):
            where = f"{path}: row_groups.{gi}.rows.{ri} ({r.label!r})"
            rows[r.label] = ReportedRow(
                r.label,
                r.model or group.model,
                r.method or r.label,
                r.train_set if r.train_set is not None else group.train_set,
                r.dataset or group.dataset,
            )
            tokens = r.cells.split()
            if len(tokens) != len(order):
                raise DataError(
                    f"{where}: {len(tokens)} cells for {len(order)} columns {order}",
                    hint="write one token per column; '-' for a cell the paper leaves empty",
                )
            for col_key, token in zip(order, tokens):
                cells[(r.label, col_key)] = parse_cell(token, columns[col_key], where)
    return ReportedTable(
        key=key,
        paper=spec.paper,
        table=spec.table,
        caption=spec.caption,
        metric=spec.metric,
        column_groups=[(g.title, [c.key for c in g.columns]) for g in spec.column_groups],
        row_groups=[(g.title, [r.label for r in g.rows]) for g in spec.row_groups],
        cells=cells,
        column_labels={k: c.label for k, c in columns.items()},
        notes=list(spec.notes),
        paper_title=spec.paper_title,
        arxiv=spec.arxiv,
        seed_lines=spec.seed_lines,
        columns=columns,
        rows=rows,
        scale=spec.scale,
        averaging=spec.averaging,
    )


def parse_cell(token: str, column: ReportedColumn, where: str = "") -> ReportedValue:
    """Parse a printed token: '**x**' bold, '__x__' underline, '-' missing, trailing marks (e.g. '36.45†')."""
    text, bold, underline = token, False, False
    if len(text) > 4 and text.startswith("**") and text.endswith("**"):
        text, bold = text[2:-2], True
    if len(text) > 4 and text.startswith("__") and text.endswith("__"):
        text, underline = text[2:-2], True
    if text in MISSING_TOKENS:
        return ReportedValue(None, column.marks, bold, underline, text)
    m = _NUMBER.match(text)
    if not m:
        raise DataError(
            f"{where}: column {column.key!r}: cannot read cell {token!r}",
            hint="a cell is a number with optional trailing marks, '**x**' bold, '__x__' underline, or '-'",
        )
    rest = m["rest"]
    if column.unit and rest.startswith(column.unit):
        rest = rest[len(column.unit) :]
    if any(ch.isdigit() or ch in "*_" for ch in rest):
        raise DataError(
            f"{where}: column {column.key!r}: unexpected text {rest!r} after the number in {token!r}",
            hint="marks are symbols such as † or ⋆ written right after the number",
        )
    return ReportedValue(float(m["num"]), column.marks + rest, bold, underline, m["num"])


# ---- claims printed in running text (papers whose seed prints no table cells) ----


class ReportedClaim(BaseModel):
    """A number the paper states in prose, with the verbatim sentence and its seed line."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    line: int
    quote: str
    values: list[str]
    about: str = ""

    @field_validator("values", mode="before")
    @classmethod
    def _values_are_text(cls, v):
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ValueError('values must be a list of quoted strings as printed, e.g. ["7.7"]')
        return v


class ReportedNotes(BaseModel):
    """A paper's headline numbers stated in text, and tables its seed does not print."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    paper: str
    paper_title: str
    arxiv: str | None = None
    seed_lines: str
    claims: list[ReportedClaim] = []
    notes: list[str] = []


def list_reported_notes(root: Path | str | None = None) -> list[str]:
    """Papers that have a `notes.yaml` of text claims."""
    return sorted(paper for paper, folder in reported_folders(root).items() if (folder / "notes.yaml").is_file())


def load_reported_notes(paper: str, root: Path | str | None = None) -> ReportedNotes:
    """Load a paper's `notes.yaml` (in its method package's reported/ folder)."""
    folder = reported_folders(root).get(paper)
    path = folder / "notes.yaml" if folder is not None else None
    if path is None or not path.is_file():
        papers = list_reported_notes(root)
        hint = did_you_mean(paper, papers, f"papers with notes: {', '.join(papers) or 'none'}")
        raise EvalsuiteError(f"no reported notes for paper {paper!r}", hint=hint)
    return _validated(path, ReportedNotes)
