"""`evalsuite train METHOD --config FILE -o CKPT_DIR`: run a training recipe (`--dry-run`: check it and
print its setting beside the paper's, training nothing); `evalsuite train METHOD ACTION`: a recipe's
own command (search-p1 plans: reference plans); `evalsuite train --list`: the registered recipes."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from evalsuite.console import out_console, print_table


def train_command(
    method: Optional[str] = typer.Argument(
        None, help="The recipe: a registered name (`evalsuite train --list` shows them)."
    ),
    action: str = typer.Argument(
        "run", help="run (default), or a recipe's own action (search-p1: plans, its reference plans built offline)."
    ),
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        help="Recipe YAML file, or a shipped config by name (cpu_smoke, gpu); required but with --list.",
    ),
    out: Optional[Path] = typer.Option(
        None,
        "--output",
        "-o",
        help=(
            "Output directory (checkpoint/, training_log.jsonl, "
            "training_curves.png, train_manifest.json); plans: the JSONL file."
        ),
    ),
    samples: int = typer.Option(4, "--samples", help="plans: sampled trajectories per question."),
    planner_backend: str = typer.Option(
        "hf", "--planner-backend", help="plans: the planner's backend (hf, vllm, llamacpp, openai)."
    ),
    planner_model: Optional[str] = typer.Option(
        None, "--planner-model", help="plans: the planner model (default: the config's model)."
    ),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue the stopped run in --output from its last GRPO checkpoint (needs grpo.save_strategy: steps).",
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help=(
            "Load and validate the config, build the reward and TRL's configs, print the setting "
            "table (paper / inherited / assumed, with source lines) and the deviations; train nothing."
        ),
    ),
    list_recipes: bool = typer.Option(
        False,
        "--list",
        help="List the registered recipes (name, evaluator method, stages, actions, shipped configs) and exit.",
    ),
) -> None:
    """Train METHOD with the recipe in --config, or run one of its actions (search-p1 plans: its reference plans)."""
    from evalsuite.training.config import load_config
    from evalsuite.training.recipe import default_registry

    console = out_console()
    if list_recipes:
        print_recipes(default_registry())
        return
    if method is None:
        raise typer.BadParameter("name a recipe (evalsuite train --list shows them)", param_hint="METHOD")
    if config is None:
        raise typer.BadParameter("a recipe YAML is required, e.g. --config cpu_smoke", param_hint="--config")
    recipe = default_registry().get(method)
    settings = load_config(config, method)
    if action != "run":
        if action not in recipe.actions:
            owners = [r.name for r in default_registry() if action in r.actions]
            known = ", ".join(("run", *recipe.actions))
            raise typer.BadParameter(
                f"{method} has no action {action!r} (its actions: {known})"
                + (f"; only {', '.join(owners)} has it" if owners else ""),
                param_hint="ACTION",
            )
        options = {"samples": samples, "planner_backend": planner_backend, "planner_model": planner_model}
        console.print(recipe.run_action(action, settings, out, options), markup=False)
        return
    if dry_run:
        print_dry_run(settings, config, out or Path("checkpoints") / method, console)
        return
    from evalsuite.training.trainer import train

    result = train(settings, out or Path("checkpoints") / method, resume=resume)
    per_step = ", ".join(f"{s:.1f}" for s in result.seconds_per_step)
    console.print(
        f"checkpoint: {result.checkpoint}\nlog: {result.log}\nplot: "
        f"{result.plot}\nmanifest: {result.manifest}\nseconds per step: {per_step}"
    )


def print_recipes(registry) -> None:
    """The registry as a table: what `evalsuite train` can run."""
    from rich.table import Table

    from evalsuite.resources import packaged_recipe_config_names

    table = Table(title="training recipes (evalsuite train METHOD --config CONFIG)")
    for column in ("recipe", "evaluator method", "stages", "actions", "shipped configs", "reward"):
        table.add_column(column, overflow="fold")
    for recipe in registry:
        configs = ", ".join(packaged_recipe_config_names(recipe.name))
        table.add_row(
            recipe.name,
            recipe.evaluator_method,
            " -> ".join(recipe.stages),
            ", ".join(("run", *recipe.actions)),
            configs,
            recipe.summary,
        )
    print_table(table)


def print_dry_run(settings, path: Path, out: Path, console) -> None:
    """Everything a run checks before loading a model, then the setting table and the deviations."""
    from rich.table import Table

    from evalsuite.training.paper_deviations import deviations, setting_table
    from evalsuite.training.trainer import build_reward, build_trl_configs

    reward = build_reward(settings)
    settings.rollout_config()
    from evalsuite.models.precision import cpu_supports_bf16

    # without a GPU: on the CPU, and bf16 only where the CPU has it natively (a config asking for it elsewhere was
    # refused at load); the GPU configs' bf16 is checked off on such a CPU
    overrides = {} if _has_gpu() else {"use_cpu": True, **({} if cpu_supports_bf16() else {"bf16": False})}
    built = build_trl_configs(settings, out, reward, overrides)
    table = Table(title=f"{settings.method}: the paper's setting and ours ({path})", show_lines=True)
    for column in ("setting", "paper", "label", "source", "ours", "differs"):
        table.add_column(column, overflow="fold")
    for row in setting_table(settings, path):
        table.add_row(
            row.paper.name,
            _cell(row.paper.value),
            row.paper.label,
            row.paper.source(),
            _cell(row.ours),
            "yes" if row.differs else ("" if row.compared else "n/a"),
        )
    print_table(table)
    console.print("deviations:" if deviations(settings) else "deviations: none")
    for deviation in deviations(settings):
        console.print(f"  - {deviation}", markup=False)
    checked = ", ".join(f"{stage} ({type(obj).__name__})" for stage, obj in built.items())
    note = " (bf16 checked off: no GPU here, no native bf16 on this CPU)" if "bf16" in overrides else ""
    console.print(
        f"dry run: config, reward {reward.config()['name']} and TRL configs {checked} built{note}; nothing trained",
        markup=False,
    )


def _has_gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def _cell(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "—" if value is None else str(value)


def register(app: typer.Typer) -> None:
    app.command("train")(train_command)
