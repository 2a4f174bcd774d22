"""`evalsuite methods`: every registered method and baseline with its kind, prompt styles, source and protocol;
`--paper METHOD`: that paper's evaluation setting (benchmarks, splits, metric, retriever, top-k, max turns), each value
with its source line."""

from __future__ import annotations

import inspect
import json
from typing import Any

import typer
from evalsuite.console import print_table
from rich.table import Table


def method_rows() -> list[dict[str, Any]]:
    """One row per registered method: name, kind, styles, stop strings, source and protocol."""
    from evalsuite.agent.method import get_method, list_methods

    rows = []
    for name in list_methods():
        method = get_method(name)
        module_doc = inspect.getmodule(type(method)).__doc__ or ""
        rows.append(
            {
                "name": name,
                "kind": method.kind,
                "styles": list(method.styles),
                "stop": list(method.stop),
                "source": method.source or module_doc.strip().split("\n")[0],
                "protocol": method.protocol or (type(method).__doc__ or "").strip(),
            }
        )
    return rows


def methods_command(
    as_json: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
    paper: str | None = typer.Option(None, "--paper", help="Print this method's paper evaluation setting with the source of every value."),
) -> None:
    """List every method and baseline usable with `evalsuite run --method NAME`."""
    if paper is not None:
        print_paper_setting(paper, as_json)
        return
    rows = method_rows()
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    table = Table(title="evalsuite methods", show_lines=True)
    for column in ("name", "kind", "styles", "source", "protocol"):
        table.add_column(column, overflow="fold")
    for row in sorted(rows, key=lambda r: (r["kind"] != "method", r["name"])):
        table.add_row(row["name"], row["kind"], ", ".join(row["styles"]), row["source"], row["protocol"])
    print_table(table)


def print_paper_setting(method: str, as_json: bool) -> None:
    """The paper's evaluation setting: value, label (paper / inherited / assumed) and source line per item."""
    from evalsuite.agent.methods.papers import evaluation_setting

    values = evaluation_setting(method)
    if as_json:
        typer.echo(json.dumps({v.name: v.record() for v in values}, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{method}: the paper's evaluation setting", show_lines=True)
    for column in ("setting", "value", "label", "source"):
        table.add_column(column, overflow="fold")
    for value in values:
        shown = ", ".join(value.value) if isinstance(value.value, list) else str(value.value)
        table.add_row(value.name, shown, value.label, value.source())
    print_table(table)


def register(app: typer.Typer) -> None:
    app.command("methods")(methods_command)
