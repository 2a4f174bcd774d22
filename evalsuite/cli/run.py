"""`evalsuite run` (a checkpoint through the rollout loop into a run directory) and `evalsuite merge` (shards)."""

from __future__ import annotations

import datetime as _dt
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional, get_args

import typer
from pydantic.fields import FieldInfo
from rich.table import Table

from evalsuite.cli._config import command_line_first, fill_from_config, resolved_config
from evalsuite.cli._interrupt import stop_at_once
from evalsuite.cli._options import subset_with_limit
from evalsuite.cli._progress import run_progress
from evalsuite.console import echo_json, err_console, escape, out_console, print_table
from evalsuite.agent.config import RunConfig, option
from evalsuite.errors import EvalsuiteError

# Exit codes of `evalsuite run` (README.md): 0 every example ran; 2 a usage or data error, or the run stopped early
# (finished examples are kept, --resume continues); 3 the run finished but some examples failed (backend error,
# missing recording, retriever failure) and --allow-failures was not given.
EXIT_FAILED_EXAMPLES = 3


def _options(pairs: list[str]) -> dict[str, object]:
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise EvalsuiteError(
                f"invalid --backend-option {pair!r}", hint="use KEY=VALUE, e.g. --backend-option n_ctx=4096"
            )
        out[key.strip()] = _scalar(value.strip())
    return out


def _scalar(value: str) -> object:
    for cast in (int, float):
        try:
            return cast(value)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(value.lower(), value)


def failures_note(metrics) -> str | None:
    """How many examples failed and how the means treat them; None when none failed."""
    failed = sum(summary.n_failed for summary in metrics.tasks.values())
    if not failed:
        return None
    total = sum(summary.n for summary in metrics.tasks.values())
    return (
        f"{failed} of {total} examples failed (backend error, missing recording or retriever failure; see the "
        f"'failed' column): they score 0 on every metric and count in n, so the means include them as wrong answers."
    )


def check_out(out: Path | None) -> None:
    """-o must be a directory (new, or a run directory to resume)."""
    if out is not None and out.exists() and not out.is_dir():
        raise EvalsuiteError(
            f"-o {out} is an existing file, not a run directory",
            hint="give -o a new directory (or a run directory with --resume)",
        )


def metric_headers() -> list[str]:
    """The summary metrics' labels (evalsuite.metrics.registry), the first followed by its 95% interval."""
    from evalsuite.metrics.registry import summary_metrics

    labels = [m.label for m in summary_metrics()]
    return labels[:1] + ["95% CI"] + labels[1:]


def metric_cells(summaries: dict) -> list[str]:
    """One task's summary metrics as printed: percent metrics ×100, counts as they are; '-' where not scored."""
    from evalsuite.metrics.registry import summary_metrics

    specs = summary_metrics()
    cells = [f"{summaries[m.name].mean * (100 if m.percent else 1):.1f}" if m.name in summaries else "-" for m in specs]
    first = summaries.get(specs[0].name) if specs else None
    ci = f"[{first.ci_low * 100:.1f}, {first.ci_high * 100:.1f}]" if first is not None and specs[0].percent else "-"
    return cells[:1] + [ci] + cells[1:]


def sampled_table(metrics) -> Table | None:
    """A sampled run's avg@K, pass@K and maj@K of EM (and F1
    avg@K) per task with their 95% intervals; None if greedy."""
    samples = metrics.extra.get("samples")
    if not samples:
        return None
    k = samples["k"]
    columns = {
        "em_avg": f"EM avg@{k}",
        f"em_pass@{k}": f"EM pass@{k}",
        "em_maj": f"EM maj@{k}",
        "f1_avg": f"F1 avg@{k}",
    }
    left_out = {
        task: max(counts.get(name, 0) for name in columns)
        for task, counts in (samples.get("left_out") or {}).items()
        if any(name in counts for name in columns)
    }
    caption = (
        "questions short of K samples (a run cut off) have no maj@K or pass@K: left out of those columns ("
        + ", ".join(f"{task}: {n}" for task, n in left_out.items())
        + ")"
        if left_out
        else None
    )
    table = Table(title=f"{k} samples per question (intervals over questions)", caption=caption, caption_justify="left")
    for column in ("task", "questions", *columns.values(), "EM spread (sd of a one-sample run)"):
        table.add_column(column, justify="right" if column != "task" else "left")
    for task, summary in metrics.tasks.items():
        cells = [
            f"{100 * m.mean:.1f} [{100 * m.ci_low:.1f}, {100 * m.ci_high:.1f}]"
            if (m := summary.metrics.get(name))
            else "-"
            for name in columns
        ]
        spread = samples["spread"].get(task, {}).get("em")
        table.add_row(task, str(summary.n), *cells, "-" if spread is None else f"{100 * spread:.1f}")
    return table


def results_table(metrics, title: str) -> Table:
    """The per-task results table printed at the end of a run; a caption says how many examples failed."""
    note = failures_note(metrics)
    table = Table(title=title, caption=note, caption_justify="left")
    for column in ("task", "n", "failed", *metric_headers()):
        table.add_column(column, justify="right" if column != "task" else "left")
    for task, summary in metrics.tasks.items():
        table.add_row(task, str(summary.n), str(summary.n_failed), *metric_cells(summary.metrics))
    return table


def checked_retriever(method: str, retriever: str | None, max_turns: int) -> str | None:
    """The run's retriever: a method that searches needs one (a forgotten --retriever would leave every search
    unanswered), unless `--max-turns 0` leaves it no turn to search in; `--retriever none` runs it without one on
    purpose, and is None from here on."""
    from evalsuite.agent.method import get_method

    if retriever is not None:
        return None if retriever == "none" else retriever
    if max_turns > 0 and get_method(method).retrieves:
        raise EvalsuiteError(
            f"--method {method} searches, but no --retriever was given",
            hint=(
                "pass --retriever INDEX_DIR, http://host:port/retrieve or adqa; "
                "--retriever none runs it without retrieval on purpose"
            ),
        )
    return None


# Settings whose option shows no default: the embedded demo (no --model) fills them when they are not given.
DEMO_FILLED = frozenset({"subset", "max_turns", "max_tokens"})


def with_setting_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with one option per `RunConfig` field in place of its `**settings` (TRL's `HfArgumentParser`
    pattern), after its --retriever: named as the field (`max_turns`: --max-turns), with the field's type, default
    and description as its help, and converted by the field's own validation (`RunConfig.setting`: the same one line
    a config file, a manifest or Python gets). So a new setting is one field of RunConfig, and nothing here."""
    signature = inspect.signature(command)
    # keyword-only, so the generated options may sit among them (typer passes every option by name)
    own = [p.replace(kind=p.KEYWORD_ONLY) for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    at = next(i for i, p in enumerate(own) if p.name == "retriever") + 1
    command.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*own[:at], *(setting_option(name) for name in RunConfig.model_fields), *own[at:]]
    )
    return command


def setting_option(name: str) -> inspect.Parameter:
    """The `evalsuite run` option of one RunConfig field (typer reads options from a function's parameters)."""
    field = RunConfig.model_fields[name]
    shown = None if name in DEMO_FILLED else field.default
    help_text = field.description or ""
    if shown is None and field.default is not None:
        help_text = f"{help_text.rstrip('.')} (default {field.default})."
    parsed = typer.Option(shown, option(name), help=help_text, parser=lambda value: RunConfig.setting(name, value))
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=parsed, annotation=cli_type(field))


def cli_type(field: FieldInfo) -> Any:
    """The type typer shows (`<int>`) for a field: its scalar type, else text (`--seeds 1,2,3`), always optional so
    that an option the demo fills can be left unset; the value itself is the field's validation's."""
    scalar = next((t for t in (int, float, str) if t is field.annotation or t in get_args(field.annotation)), str)
    return Optional[scalar]


def run_command(
    ctx: typer.Context,
    config: Optional[Path] = typer.Option(
        None,
        "--config",
        "-c",
        callback=fill_from_config,
        is_eager=True,
        help=(
            "YAML/JSON file of options (keys: the long names, e.g. max_turns), "
            "or a run's manifest.json to repeat that run; flags override it."
        ),
    ),
    model: Optional[str] = typer.Option(
        None,
        "--model",
        "-m",
        help=(
            "Checkpoint: local path, hub name, packaged model (evalsuite models list), GGUF "
            "file, endpoint URL, or recording (replay). Omit for the embedded CPU demo."
        ),
    ),
    backend: Optional[str] = typer.Option(
        None,
        "--backend",
        "-b",
        help=(
            "openai | hf | vllm | vllm-async | llamacpp | xllamacpp | lmeval | replay (default: guessed from --model)."
        ),
    ),
    method: Optional[str] = typer.Option(
        None,
        "--method",
        help="Agent method (prompt, action parser, observation format); default: the tasks' own, else search-r1.",
    ),
    tasks: Optional[str] = typer.Option(None, "--tasks", "-t", help="Comma-separated tasks, e.g. nq,hotpotqa."),
    split: Optional[str] = typer.Option(None, "--split", help="Split to evaluate (default: the task's eval split)."),
    data_dir: Optional[Path] = typer.Option(None, "--data-dir", help="Directory of <task>.<split>.jsonl files."),
    limit: Optional[int] = typer.Option(
        None, "--limit", min=1, help="Only the first N examples of each task: short for --subset first:N."
    ),
    retriever: Optional[str] = typer.Option(
        None,
        "--retriever",
        "-r",
        help=(
            "Index directory, http://host:port/retrieve, adqa (BM25 over the shipped AD-QA corpus), replay, or none "
            "(a search method runs without retrieval only when asked so)."
        ),
    ),
    shard: Optional[str] = typer.Option(
        None, "--shard", help="i/n: evaluate a deterministic share; combine with `evalsuite merge`."
    ),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run in -o: finished examples are kept, failed ones retried."
    ),
    backend_option: list[str] = typer.Option(
        [], "--backend-option", help="KEY=VALUE passed to the backend (repeatable)."
    ),
    out: Optional[Path] = typer.Option(None, "--output", "-o", help="Run directory (default: runs/<timestamp>)."),
    allow_failures: bool = typer.Option(
        False, "--allow-failures", help=f"Exit 0 even when some examples failed (default: exit {EXIT_FAILED_EXAMPLES})."
    ),
    report_to: list[str] = typer.Option(
        [],
        "--report-to",
        help=(
            "tensorboard | wandb (repeatable): per-task metrics and sampled "
            "trajectories sent there too (extras of the same names)."
        ),
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object (run directory, metrics, notes) instead of the table."
    ),
    ray: Optional[str] = typer.Option(
        None,
        "--ray",
        help=(
            "Spread the run over Ray actors (extra [ray]): HEAD_IP:PORT, auto "
            "(the cluster this machine joined) or local (start Ray here)."
        ),
    ),
    ray_actors: Optional[int] = typer.Option(
        None, "--ray-actors", help="Backend replicas (default: as many as the cluster's CPUs, or GPUs, hold)."
    ),
    ray_cpus: float = typer.Option(1.0, "--ray-cpus-per-actor", help="CPUs each Ray actor reserves."),
    ray_gpus: float = typer.Option(
        0.0, "--ray-gpus-per-actor", help="GPUs each Ray actor reserves (vLLM: its tensor_parallel_size)."
    ),
    **settings: Any,  # one option per RunConfig field (`with_setting_options`), listed after --retriever
) -> None:
    """Run a search agent over benchmarks and write a run directory (no --model: the embedded CPU demo)."""
    from evalsuite.agent.runner import RunSpec, parse_shard
    from evalsuite.models.registry import backend_choice, backend_class, check_backend_ready, guess_backend

    subset, limit = command_line_first(ctx, "subset", "limit")
    recorded = resolved_config(ctx)
    settings["subset"] = subset_with_limit(subset, limit)

    def run_settings(**changed: Any) -> RunConfig:
        """The run's settings, validated by RunConfig (an option left at None keeps RunConfig's default)."""
        return RunConfig(**{k: v for k, v in {**settings, **changed}.items() if v is not None})

    run_config = run_settings()  # before anything is loaded
    check_out(out)
    run_config.check_backend(backend or (guess_backend(model) if model else None))
    from evalsuite.runs.report import check_destinations, report_run

    destinations = check_destinations(report_to, "--report-to")  # a missing client is named before the run, not after
    if method is not None:
        from evalsuite.agent.method import check_method

        check_method(method)  # before a model is loaded or the demo's GGUF assembled
    options = _options(backend_option)
    out = out or Path("runs") / _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    with stop_at_once(out, sys.argv[1:]) as kept, run_progress(kept) as shown:
        note = None
        if model is None:
            from evalsuite.agent.default import DEMO_NOTE, demo_settings

            shown.stage("preparing the demo model")
            demo = demo_settings()
            model, backend, retriever = demo.model, backend or demo.backend, retriever or demo.retriever
            tasks = tasks or demo.tasks
            changed = {
                "subset": settings["subset"] or demo.subset,
                "prompt_style": demo.prompt_style if run_config.prompt_style == "auto" else run_config.prompt_style,
                "max_tokens": settings["max_tokens"] or demo.max_tokens,
                "max_turns": demo.max_turns if settings["max_turns"] is None else settings["max_turns"],
            }
            if getattr(ctx.get_parameter_source("batch_size"), "name", None) == "DEFAULT":
                changed["batch_size"] = recorded["batch_size"] = demo.batch_size
            run_config = run_settings(**changed)
            note = DEMO_NOTE
        if tasks is None:
            raise EvalsuiteError("no task given", hint="pass --tasks nq,hotpotqa (see `evalsuite tasks`)")
        if method is None:
            from evalsuite.tasks.registry import default_method, parse_task_list

            method = default_method(parse_task_list(tasks), "search-r1")
        chosen_by = None
        if backend is None:
            backend, chosen_by = backend_choice(model)
            shown.note(f"backend: {backend} (--model is {chosen_by}; --backend chooses another)")
            if "backend" in recorded:  # a run repeated from its manifest uses this backend, whatever is installed
                recorded["backend"] = backend
        # a schedule the backend cannot run is refused before anything is installed or loaded
        run_config.resolve_schedule(backend_class(backend).supports_async, backend)
        shown.stage("checking the model")
        check_backend_ready(backend, model, options)  # before any task data or index is loaded
        retriever = checked_retriever(method, retriever, run_config.max_turns)
        spec = RunSpec(
            model=model,
            backend=backend,
            tasks=tasks,
            out=out,
            method=method,
            config=run_config,
            split=split,
            data_dir=None if data_dir is None else str(data_dir),  # RunSpec's field is a str (load_split reads either)
            retriever=retriever,
            shard=parse_shard(shard),
            resume=resume,
            backend_options=options,
            notes=note,
            recorded_options=recorded,
            backend_chosen_by=chosen_by,
        )
        ray_options = None
        if ray is not None:
            from evalsuite.agent.distributed import RayOptions

            ray_options = RayOptions(address=ray, actors=ray_actors, num_cpus=ray_cpus, num_gpus=ray_gpus)
        from evalsuite.agent.runner import execute

        result = execute(spec, on_stage=shown.stage, on_tokens=shown.generated, ray=ray_options, **shown.hooks())
    # the model the backend reports (a server's served model, not the last part of its URL)
    served = result.directory.read_manifest().backend.model or spec.model
    plot = result.directory.plot_path if result.directory.plot_path.is_file() else None  # drawn by RunDirectory.finish
    reported = report_run(
        destinations, result.directory.path, result.metrics, result.records, result.directory.path.name
    )
    if as_json:
        echo_json(
            {
                "run_directory": str(result.directory.path),
                "metrics": result.metrics.model_dump(mode="json"),
                "plot": str(plot) if plot else None,
                "reported": reported,
                "stopped": result.stopped,
                "note": note,
                "failures": failures_note(result.metrics),
                "paper_setting": result.paper.to_dict() if result.paper else None,
            }
        )
    else:
        per_sample = sampled_table(result.metrics)  # a sampled run has no per-record EM: its table is per question
        if per_sample is None:
            print_table(results_table(result.metrics, f"{spec.method} · {Path(str(served)).name} · {spec.backend}"))
        else:
            per_sample.title = f"{spec.method} · {Path(str(served)).name} · {spec.backend} · {per_sample.title}"
            print_table(per_sample)
        console = out_console(markup=True)
        console.print(f"run directory: {escape(str(result.directory.path))}")
        if plot is not None:
            console.print(f"plot: {escape(str(plot))}")
        for line in reported:
            console.print(escape(line))
        from evalsuite.cli.view import view_command_line

        console.print(f"see every example: {escape(view_command_line(result.directory.path))}")
        if result.paper is not None and not result.paper.matches:
            console.print(f"[yellow]{escape(spec.method)}:[/] {escape(result.paper.summary())}")
        if note:
            console.print(f"[yellow]note:[/] {escape(note)}")
    if result.stopped:
        raise EvalsuiteError(
            f"the run stopped early: {result.stopped}",
            hint=f"finished examples are kept; continue with --resume -o {out}",
        )
    if failures_note(result.metrics) and not allow_failures:
        err_console().print(
            f"error: some examples failed; exit code {EXIT_FAILED_EXAMPLES} "
            f"(--allow-failures exits 0; --resume -o {out} retries them)"
        )
        raise typer.Exit(code=EXIT_FAILED_EXAMPLES)


def merge_command(
    runs: list[Path] = typer.Argument(
        ..., help="Shard run directories written with --shard i/n (or, with --as-seeds, one run per seed)."
    ),
    out: Path = typer.Option(..., "--output", "-o", help="Merged run directory."),
    as_seeds: bool = typer.Option(
        False,
        "--as-seeds",
        help=(
            "The runs repeat one setting with other seeds: one multi-seed "
            "run (run i is sample i); tables show mean ± sd over seeds."
        ),
    ),
    declared_seeds: bool = typer.Option(
        False,
        "--declared-seeds",
        help="With --as-seeds: accept runs that record no model identity or seed (imported files) as seeds of "
        "one model on your word; the merged manifest says so.",
    ),
) -> None:
    """Combine the shard run directories of one run into a single run
    directory, or (--as-seeds) seed runs into one multi-seed run."""
    from evalsuite.agent.merge import merge_runs, merge_seed_runs

    if as_seeds:
        manifest, records, metrics = merge_seed_runs(list(runs), out, declared=declared_seeds)
        for run, lacks in (getattr(manifest, "declared_seeds", None) or {}).items():
            typer.echo(f"note: {run} records {lacks}: merged as a seed on your declaration (--declared-seeds)")
        table = sampled_table(metrics)
        assert table is not None  # a multi-seed run is a sampled run
        table.title = f"merged {len(runs)} seed runs · {table.title}"
        print_table(table)
    else:
        manifest, records, metrics = merge_runs(list(runs), out)
        print_table(results_table(metrics, f"merged {len(runs)} shards · {len(records)} examples"))
    typer.echo(f"run directory: {out}")


def register(app: typer.Typer) -> None:
    app.command("run")(with_setting_options(run_command))
    app.command("merge")(merge_command)
