"""`evalsuite methods`: every registered method and baseline with its kind, prompt styles, source and protocol;
`--paper METHOD`: that paper's evaluation setting (benchmarks, splits, metric and the metrics we score it with,
retriever, top-k, max turns), each value with its source line, then its training recipe's own choices (reward settings
and `rule.*` definitions, each labelled) and the recipe's deviations from the paper."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any

import typer
from evalsuite.console import out_console, print_table
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
    paper: str | None = typer.Option(
        None, "--paper", help="Print this method's paper evaluation setting with the source of every value."
    ),
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
    from evalsuite.agent.papers import evaluation_setting

    values = evaluation_setting(method)
    recipe = recipe_choices(method)
    if as_json:
        record: dict[str, Any] = {v.name: v.record() for v in values}
        if recipe is not None:
            record["training_recipe"] = {
                "config": recipe.config,
                "choices": {v.name: v.record() for v in recipe.choices},
                "deviations": recipe.deviations,
            }
        typer.echo(json.dumps(record, indent=2, ensure_ascii=False))
        return
    table = Table(title=f"{method}: the paper's evaluation setting", show_lines=True)
    for column in ("setting", "value", "label", "source"):
        table.add_column(column, overflow="fold")
    for value in values:
        shown = ", ".join(value.value) if isinstance(value.value, list) else str(value.value)
        table.add_row(value.name, shown, value.label, value.source())
    print_table(table)
    if recipe is not None:
        print_recipe_choices(method, recipe)


@dataclass(frozen=True)
class RecipeChoices:
    """A training recipe's own choices: its `paper:` entries that are reward settings or `rule.*` definitions (not
    the optimisation settings `train --dry-run` compares), and its deviations from the paper."""

    config: str
    choices: list[Any]
    deviations: list[str]


def recipe_choices(method: str) -> RecipeChoices | None:
    """The shipped GPU recipe's choices for `method`, or None when no recipe is shipped for it."""
    from evalsuite.resources import packaged_recipe_config
    from evalsuite.training.config import load_config
    from evalsuite.training.paper_deviations import deviations, paper_values

    path = packaged_recipe_config(method, "gpu")
    if path is None:
        return None
    config = load_config(path, method)
    own = [v for v in paper_values(config, path) if "." in v.name]  # reward.settings.*, state_eval.*, rule.*, ...
    return RecipeChoices(f"evalsuite/methods/{method.replace('-', '_')}/configs/gpu.yaml", own, deviations(config))


def print_recipe_choices(method: str, recipe: RecipeChoices) -> None:
    """The recipe's choices as a table, then its deviations, one a line."""
    table = Table(title=f"{method}: the training recipe's own choices ({recipe.config})", show_lines=True)
    for column in ("choice", "value", "label", "source"):
        table.add_column(column, overflow="fold")
    for value in recipe.choices:
        ours = f"; ours differs: {value.because}" if value.because else ""
        table.add_row(value.name, str(value.value), value.label, value.source() + ours)
    print_table(table)
    console = out_console()
    console.print("deviations:" if recipe.deviations else "deviations: none")
    for deviation in recipe.deviations:
        console.print(f"  - {deviation}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("methods")(methods_command)
