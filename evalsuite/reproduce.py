"""`evalsuite reproduce`: a recipe's reproduction in stages, each resumable and each refusing stale work.

    train            the recipe (training.trainer.train)                         -> DIR/train/
    eval-base        the base model on the config's benchmarks (agent.runner)    -> DIR/eval-base/
    eval-trained     the checkpoint on the same questions and settings           -> DIR/eval-trained/
    table            the paper-style table, paper's numbers beside ours, paired  -> DIR/table/
                     tests of the checkpoint against the base (tables.layouts)
    submission       a leaderboard submission of the checkpoint's run, whose     -> DIR/submission/
                     manifests link the training manifest (leaderboard.pack)

Every stage directory holds `stage.json`: the sha256 of each of the stage's inputs (the settings it runs with, the
rows it reads, the outputs of the stages before it) and whether it finished. A stage whose record matches and
finished is skipped; one that stopped half way with the same inputs resumes (GRPO from its last saved checkpoint, an
evaluation from its finished examples); one whose inputs changed is refused, naming the input, unless the caller asks
for it to be re-run. All of this is decided before the first long stage starts, so bad input costs seconds.

The settings come from the recipe YAML's `reproduce:` section (`ReproduceSettings`); the training itself reads the
rest of the file, so editing the evaluation settings never retrains.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable

from evalsuite.errors import DataError, EvalsuiteError, first_line
from evalsuite.files import file_sha256

STAGES = ("train", "eval-base", "eval-trained", "table", "submission")
RECORD = "stage.json"
# the submission's own folder inside the stage directory (pack_submission refuses an existing output)
SUBMISSION_DIR = "entry"


@dataclass
class ReproduceSettings:
    """The `reproduce:` section of a recipe YAML: what the checkpoint and its base are evaluated on, and how the
    result is tabulated and labelled. Unset rollout limits are the training rollout's, decoded greedily."""

    benchmarks: str = "adqa"
    split: str | None = None  # default: each task's eval split
    subset: str = "full"  # the same questions for base and checkpoint (`evalsuite run --subset`)
    backend: str = "hf"
    retriever: str | None = None  # default: the training retriever
    data_dir: str | None = None
    rollout: dict[str, Any] = field(default_factory=dict)
    batch_size: int = 16
    metrics: list[str] = field(default_factory=lambda: ["em"])  # one table each; the first is the headline
    seed: int = 12345  # of every paired test's resampling
    reported: str | None = None  # a transcribed paper table, e.g. progress:table1
    reported_rows: list[str] = field(default_factory=list)  # its rows printed beside ours
    label: str = (
        "reproduction"  # e.g. "CPU-scale reproduction": in the entry's name, so it is never ranked as the paper's
    )
    submission: dict[str, Any] = field(default_factory=dict)  # SubmissionInfo fields over the defaults

    @classmethod
    def from_config(cls, raw: dict[str, Any], where: str) -> ReproduceSettings:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise DataError(f"{where}: unknown reproduce keys {unknown}", hint=f"known: {', '.join(sorted(known))}")
        settings = cls(**raw)
        if isinstance(settings.metrics, str):
            settings.metrics = [settings.metrics]
        return settings


@dataclass
class Stage:
    """One stage's plan: its directory, the sha256 of each input, and what to do (run, resume, skip)."""

    name: str
    path: Path
    inputs: dict[str, str | None]
    action: str = "run"  # run | resume | skip
    why: str = ""

    def digest(self) -> str:
        return sha256_text(json.dumps(self.inputs, sort_keys=True))


@dataclass
class Reproduction:
    """Everything a reproduction needs, resolved from the config before anything long runs."""

    method: str
    config_path: Path
    train_config: Any  # training.config.TrainConfig (or the recipe's subclass)
    settings: ReproduceSettings
    out: Path
    evaluator_method: str  # the method the recipe trains, which the evaluations play
    eval_rows: dict[str, str]  # task -> sha256 of the evaluated rows (ids, questions, golds)
    train_rows: str  # sha256 of the training rows
    held_out_overlap: int  # evaluated questions that are also training questions
    stages: dict[str, Stage] = field(default_factory=dict)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_text(json.dumps(value, sort_keys=True, default=str))


# ---- planning: everything checked before the first long stage ----


def plan(
    method: str, config: str | Path, out: Path, rerun: bool = False, rerun_from: str | None = None
) -> Reproduction:
    """Load the config, check the data and existing stage outputs, and decide each stage's action. Raises a one-line
    error for missing benchmark data, a changed input (unless `rerun`), or an existing checkpoint that cannot load."""
    from evalsuite.training.config import load_config
    from evalsuite.training.recipe import default_registry

    if rerun_from is not None and rerun_from not in STAGES:
        raise EvalsuiteError(f"--from {rerun_from!r} is not a stage", hint=f"one of: {', '.join(STAGES)}")
    train_config = load_config(config, method)
    where = str(config)
    if not train_config.reproduce:
        # without it the checkpoint would be evaluated on defaults nobody chose
        raise DataError(
            f"{where}: no reproduce: section (the benchmarks, subset and backend to evaluate on)",
            hint="add one; the shipped cpu_smoke.yaml and gpu.yaml of every recipe have one to copy",
        )
    settings = ReproduceSettings.from_config(dict(train_config.reproduce), where)
    recipe = default_registry().get(method)
    eval_rows, eval_questions = _benchmark_rows(settings, where)
    train_rows, train_questions = _training_rows(train_config)
    repro = Reproduction(
        method,
        Path(config),
        train_config,
        settings,
        out,
        recipe.played_method(train_config),
        eval_rows,
        train_rows,
        len(eval_questions & train_questions),
    )
    forced = set(STAGES[STAGES.index(rerun_from) :]) if rerun_from else set()
    for name in STAGES:
        # a stage after one that runs again reads None for that output, so its record cannot match: it runs too
        stage = Stage(name, out / name, stage_inputs(repro, name))
        repro.stages[name] = stage
        decide(stage, rerun, name in forced)
    if repro.stages["train"].action == "skip":
        check_checkpoint(out / "train" / "checkpoint")
    return repro


def _benchmark_rows(settings: ReproduceSettings, where: str) -> tuple[dict[str, str], set[str]]:
    """Each benchmark's evaluated rows (hash), read from local or packaged data only: a benchmark whose data is not
    here is refused now, not after training (the loader's hub fallback would fail much later, offline)."""
    from evalsuite.provenance import rows_sha256
    from evalsuite.tasks import apply_subset, load_split, parse_task_list
    from evalsuite.tasks.loader import locate_split
    from evalsuite.tasks.subset import ids_hash

    hashes, questions = {}, set()
    for task in parse_task_list(settings.benchmarks):
        split = settings.split or task.eval_split
        found = locate_split(task, split, settings.data_dir)
        if found["found_in"] in ("not found", "error"):
            raise DataError(
                f"{where}: reproduce.benchmarks names {task.name} (split "
                f"{split}), whose data is not here ({found['origin']})",
                hint=(
                    f"evalsuite data download --tasks {task.name}, or point "
                    "reproduce.data_dir (or $EVALSUITE_DATA_DIR) at the files"
                ),
            )
        rows = apply_subset(load_split(task, split, settings.data_dir).rows, settings.subset)
        hashes[task.name] = sha256_json([ids_hash([r.id for r in rows]), rows_sha256(rows)])
        questions |= {r.question for r in rows}
    return hashes, questions


def _training_rows(train_config: Any) -> tuple[str, set[str]]:
    from evalsuite.training.data import training_rows

    rows = training_rows(train_config)
    return sha256_json([(r["question"], r["golden_answers"]) for r in rows]), {r["question"] for r in rows}


def training_settings(train_config: Any) -> dict[str, Any]:
    """The training config without its reproduce section: what decides the checkpoint."""
    return {k: v for k, v in asdict(train_config).items() if k != "reproduce"}


def eval_rollout(repro: Reproduction) -> Any:
    """The training rollout's limits, decoded greedily, with the reproduce section's overrides."""
    from evalsuite.agent.engine import RolloutConfig

    unknown = sorted(set(repro.settings.rollout) - {f.name for f in fields(RolloutConfig)})
    if unknown:
        raise DataError(
            f"{repro.config_path}: unknown reproduce.rollout settings {unknown}",
            hint=f"known: {', '.join(f.name for f in fields(RolloutConfig))}",
        )
    return replace(repro.train_config.rollout_config(), **{"temperature": 0.0, **repro.settings.rollout})


def eval_settings(repro: Reproduction) -> dict[str, Any]:
    """What both evaluations share (so base and checkpoint answer the same questions the same way)."""
    s = repro.settings
    return {
        "method": repro.evaluator_method,
        "benchmarks": s.benchmarks,
        "split": s.split,
        "subset": s.subset,
        "backend": s.backend,
        "retriever": s.retriever or repro.train_config.retriever,
        "rollout": asdict(eval_rollout(repro)),
        "prompt_style": repro.train_config.prompt_style,
        "rows": repro.eval_rows,
    }


def stage_inputs(repro: Reproduction, name: str) -> dict[str, str | None]:
    """sha256 of each input of a stage. An upstream output that is not (yet) complete reads None, so a stage whose
    upstream will run again cannot be taken as unchanged."""
    out, s = repro.out, repro.settings
    if name == "train":
        return {
            "training settings": sha256_json(training_settings(repro.train_config)),
            "training rows": repro.train_rows,
        }
    if name == "eval-base":
        return {
            "evaluation settings": sha256_json(eval_settings(repro)),
            "base model": sha256_text(repro.train_config.model),
        }
    if name == "eval-trained":
        return {
            "evaluation settings": sha256_json(eval_settings(repro)),
            "training manifest": output_digest(out / "train", "train"),
        }
    if name == "table":
        return {
            "table settings": sha256_json([s.metrics, s.seed, s.reported, s.reported_rows]),
            "base predictions": output_digest(out / "eval-base", "eval-base"),
            "checkpoint predictions": output_digest(out / "eval-trained", "eval-trained"),
        }
    return {
        "submission settings": sha256_json([s.label, s.submission]),
        "checkpoint predictions": output_digest(out / "eval-trained", "eval-trained"),
        "training manifest": output_digest(out / "train", "train"),
    }


# the file whose sha256 identifies a finished stage's output to the stages after it
OUTPUT_FILES = {
    "train": "train_manifest.json",
    "eval-base": "predictions.jsonl",
    "eval-trained": "predictions.jsonl",
    "table": "table.md",
    "submission": f"{SUBMISSION_DIR}/submission.json",
}


def read_record(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / RECORD).read_text())
    except (OSError, ValueError):
        return None


def output_digest(path: Path, name: str) -> str | None:
    """sha256 of a stage's output file, when the stage finished; None otherwise."""
    record = read_record(path)
    target = path / OUTPUT_FILES[name]
    if not record or not record.get("complete") or not target.is_file():
        return None
    return file_sha256(target)


def decide(stage: Stage, rerun: bool, forced: bool) -> None:
    """Skip, resume or run the stage; refuse when its recorded inputs differ and re-running was not asked for
    (`rerun`: re-run changed stages; `forced`: run it whatever its record says)."""
    record = read_record(stage.path)
    if record is None:
        if stage.path.exists() and any(stage.path.iterdir()) and not (rerun or forced):
            raise EvalsuiteError(
                f"{stage.path} exists but holds no stage record, so its "
                f"contents cannot be trusted as the {stage.name} stage",
                hint="remove it, pass --rerun to replace it, or choose another -o",
            )
        return
    recorded = record.get("inputs", {})
    changed = [k for k, v in stage.inputs.items() if recorded.get(k) != v]
    if forced:
        stage.why = "asked for (--from)"
    elif changed:
        if not rerun:
            raise EvalsuiteError(
                f"stage {stage.name}: {', '.join(changed)} changed since {stage.path} was written",
                hint="pass --rerun to redo the changed stages (their outputs are replaced), or choose another -o",
            )
        stage.why = f"{', '.join(changed)} changed"
    elif record.get("complete") and (stage.path / OUTPUT_FILES[stage.name]).is_file():
        stage.action, stage.why = "skip", "finished, inputs unchanged"
    else:
        stage.action, stage.why = "resume", "stopped before it finished, inputs unchanged"


def check_checkpoint(path: Path) -> None:
    """Refuse a checkpoint that cannot be loaded for evaluation, without loading its weights: its config and tokenizer
    load, and every safetensors file opens and lists its tensors."""
    from evalsuite.errors import require

    transformers = require("transformers", "hf", "checking the trained checkpoint")
    weights = sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin"))
    try:
        if not path.is_dir():
            raise FileNotFoundError(f"{path} does not exist")
        transformers.AutoConfig.from_pretrained(str(path))
        transformers.AutoTokenizer.from_pretrained(str(path))
        if not weights:
            raise FileNotFoundError("no weight files (*.safetensors, *.bin)")
        from safetensors import safe_open

        for file in weights:
            if file.suffix == ".safetensors":
                with safe_open(str(file), framework="pt") as handle:
                    list(handle.keys())
    except Exception as exc:  # noqa: BLE001 - any loader failure is the same user-facing fact
        raise EvalsuiteError(
            f"the checkpoint {path} cannot be loaded for evaluation: {first_line(exc)}",
            hint="retrain it: evalsuite reproduce ... --from train",
        ) from None


# ---- running ----


def write_record(stage: Stage, complete: bool, **extra: Any) -> None:
    stage.path.mkdir(parents=True, exist_ok=True)
    record = {
        "stage": stage.name,
        "inputs": stage.inputs,
        "inputs_sha256": stage.digest(),
        "complete": complete,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **extra,
    }
    (stage.path / RECORD).write_text(json.dumps(record, indent=2, default=str) + "\n")


def run(repro: Reproduction, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the planned stages in order; returns what each did and where its output is."""
    summary: dict[str, Any] = {}
    runners = {
        "train": _train,
        "eval-base": _eval_base,
        "eval-trained": _eval_trained,
        "table": _table,
        "submission": _submission,
    }
    for name in STAGES:
        stage = repro.stages[name]
        stage.inputs = stage_inputs(repro, name)  # upstream outputs exist now
        if stage.action == "skip":
            say(f"{name}: skipped ({stage.why})")
            summary[name] = {
                "action": "skipped",
                "path": str(stage.path),
                **(read_record(stage.path) or {}).get("result", {}),
            }
            continue
        if stage.path.exists() and (stage.action == "run" or name in ("table", "submission")):
            # a changed input: nothing of the old output is kept; the table and the submission are quick, so a
            # stopped one is simply made again
            shutil.rmtree(stage.path)
        say(f"{name}: {'resuming' if stage.action == 'resume' else 'running'}{f' ({stage.why})' if stage.why else ''}")
        started = time.time()
        write_record(stage, complete=False)
        result = runners[name](repro, stage)
        write_record(stage, complete=True, seconds=round(time.time() - started, 1), result=result)
        summary[name] = {
            "action": stage.action,
            "path": str(stage.path),
            "seconds": round(time.time() - started, 1),
            **result,
        }
    return summary


def _train(repro: Reproduction, stage: Stage) -> dict[str, Any]:
    from evalsuite.training.trainer import CHECKPOINT, MANIFEST, last_grpo_checkpoint, train

    resume = stage.action == "resume" and last_grpo_checkpoint(stage.path) is not None
    if stage.action == "resume" and not resume:
        for child in stage.path.iterdir():  # nothing saved to resume from: start again
            if child.name != RECORD:
                shutil.rmtree(child) if child.is_dir() else child.unlink()
    result = train(repro.train_config, stage.path, resume=resume)
    check_checkpoint(stage.path / CHECKPOINT)
    return {
        "checkpoint": str(result.checkpoint),
        "manifest": str(stage.path / MANIFEST),
        "plot": str(result.plot),
        "seconds_per_step": result.seconds_per_step,
    }


def _run_spec(repro: Reproduction, model: str, stage: Stage, notes: str, link: dict[str, Any] | None = None):
    from evalsuite.agent.runner import RunSpec

    s = repro.settings
    config = {
        "reproduce": {"method": repro.method, "config": str(repro.config_path), "stage": stage.name, **(link or {})}
    }
    return RunSpec(
        model=model,
        backend=s.backend,
        tasks=s.benchmarks,
        out=stage.path,
        method=repro.evaluator_method,
        prompt_style=repro.train_config.prompt_style,
        split=s.split,
        data_dir=s.data_dir,
        subset=s.subset,
        retriever=s.retriever or repro.train_config.retriever,
        rollout=eval_rollout(repro),
        batch_size=s.batch_size,
        resume=(stage.path / "manifest.json").is_file(),
        notes=notes,
        config=config,
    )


def _evaluate(spec) -> dict[str, Any]:
    from evalsuite.agent.runner import execute

    result = execute(spec)
    if result.stopped:
        raise EvalsuiteError(
            f"the evaluation in {spec.out} stopped early: {result.stopped}", hint="rerun the same command to resume it"
        )
    failed = sum(summary.n_failed for summary in result.metrics.tasks.values())
    return {
        "examples": len(result.records),
        "failed": failed,
        "means": {
            task: {m: v.mean for m, v in summary.metrics.items()} for task, summary in result.metrics.tasks.items()
        },
    }


def _eval_base(repro: Reproduction, stage: Stage) -> dict[str, Any]:
    return _evaluate(_run_spec(repro, repro.train_config.model, stage, f"{repro.method} reproduction: the base model"))


def training_link(repro: Reproduction) -> dict[str, Any]:
    """How an evaluation or a submission names the training run it comes from."""
    manifest = repro.out / "train" / "train_manifest.json"
    return {"training_manifest": {"path": str(manifest.resolve()), "sha256": file_sha256(manifest)}}


def _eval_trained(repro: Reproduction, stage: Stage) -> dict[str, Any]:
    checkpoint = repro.out / "train" / "checkpoint"
    check_checkpoint(checkpoint)
    spec = _run_spec(
        repro,
        str(checkpoint.resolve()),
        stage,
        f"{repro.method} reproduction: the trained checkpoint",
        training_link(repro),
    )
    return _evaluate(spec)


def _table(repro: Reproduction, stage: Stage) -> dict[str, Any]:
    """Per metric: the runs' table (compact layout, checkpoint against base with the paired test the metric's kind
    takes and Holm across benchmarks), the paper's rows beside ours, and the differences table."""
    from evalsuite.tables.layouts import build_run_table, differences_table, get_layout
    from evalsuite.tables.plots import plot_forest
    from evalsuite.tables.render import render
    from evalsuite.tables.sources import load_runs

    runs = load_runs([repro.out / "eval-base", repro.out / "eval-trained"])
    base = runs[0].name
    parts, stats = [], {}
    for metric in repro.settings.metrics:
        built = build_run_table(runs, get_layout("compact"), metric, base, with_ci=True, seed=repro.settings.seed)
        add_reported_rows(built.table, repro.settings, metric)
        comparison = built.comparisons[metric]
        parts += [
            render(built.table, "markdown"),
            render(differences_table(comparison, [r.name for r in runs]), "markdown"),
        ]
        stats[metric] = comparison.to_dict()
        plot_forest(comparison, stage.path / f"forest_{metric}.png")
    curves = repro.out / "train" / "training_curves.png"
    header = (
        f"# {repro.method} {repro.settings.label}: checkpoint against base\n\nconfig: {repro.config_path}; "
        f"evaluated questions that are also training questions: {repro.held_out_overlap}; "
        f"learning curves: {curves}\n\n"
    )
    (stage.path / "table.md").write_text(header + "\n".join(parts), encoding="utf-8")
    (stage.path / "stats.json").write_text(json.dumps(stats, indent=2, default=str) + "\n")
    headline = repro.settings.metrics[0]
    return {
        "table": str(stage.path / "table.md"),
        "headline": headline,
        "differences": headline_differences(stats[headline]),
    }


def headline_differences(stats: dict[str, Any]) -> list[dict[str, Any]]:
    """The checkpoint-minus-base differences of one metric, per benchmark (from stats.json): the difference, its
    interval, the paired test, p and Holm's p, and McNemar's discordant counts for a 0/1 metric."""
    keys = (
        "system",
        "task",
        "n",
        "difference",
        "ci_low",
        "ci_high",
        "test",
        "p_value",
        "p_holm",
        "only_system",
        "only_baseline",
    )
    return [{k: d.get(k) for k in keys} for d in stats.get("differences", {}).values()]


def add_reported_rows(table: Any, settings: ReproduceSettings, metric: str) -> None:
    """The paper's rows (a transcribed table) under ours, in the benchmark columns both have; a column the paper did not
    report reads '—'. Only when the paper's metric is this table's."""
    from evalsuite.reported import load_reported
    from evalsuite.tables.model import Row, RowGroup

    if not settings.reported:
        return
    reported = load_reported(settings.reported)
    # the paper's columns of this metric (a table such as OASES's prints F1 and EM per benchmark), by benchmark
    by_dataset = {
        col.dataset or col.key: col.key
        for col in reported.columns.values()
        if not col.average_of and (col.metric or reported.metric) == metric
    }
    if not by_dataset:
        table.footnotes.append(f"{reported.citation} reports no {metric}: no paper rows in this table.")
        return
    rows = []
    for label in settings.reported_rows:
        if label not in reported.rows:
            raise DataError(
                f"reproduce.reported_rows: {label!r} is not a row of {settings.reported}",
                hint=f"rows: {', '.join(reported.rows)}",
            )
        cells = {}
        for column in table.columns:
            key = by_dataset.get(column.key)
            value = reported.cells.get((label, key)) if key else None
            cells[column.key] = _paper_cell(value, reported.scale)
        rows.append(Row([f"{label} (paper)"], cells))
    table.row_groups.append(RowGroup(f"reported: {reported.citation}", rows))
    table.footnotes.append(
        f"Rows marked (paper) are the numbers printed in {reported.citation}, for its model, data and scale; "
        "they are context, not a test: only checkpoint against base is tested."
    )


def _paper_cell(value: Any, scale: str) -> Any:
    """A paper's printed number as our percent cells print it (a table printed as fractions is scaled ×100)."""
    from evalsuite.tables.model import Cell

    if value is None or value.value is None:
        return Cell("—")
    if scale == "fraction":
        return Cell(f"{value.value * 100:.1f}", value.value * 100)
    return Cell(value.printed, value.value)


def _submission(repro: Reproduction, stage: Stage) -> dict[str, Any]:
    """Pack the checkpoint's run with `leaderboard.pack` (the same packer as `evalsuite submit`)."""
    from evalsuite.leaderboard.pack import pack_submission
    from evalsuite.leaderboard.submission import SubmissionInfo
    from evalsuite.leaderboard.verify import manifest_setting, verify_submission
    from evalsuite.runs import RunDirectory

    run = repro.out / "eval-trained"
    link = training_link(repro)["training_manifest"]
    config = repro.train_config
    defaults = {
        "name": f"{repro.method} · {config.model} ({repro.settings.label})",
        "method": repro.method,
        "model": {
            "name": f"{config.model} trained with evalsuite's {repro.method} recipe",
            "source": f"train_manifest.json sha256:{link['sha256']}",
        },
        "training_data": f"{config.tasks} ({config.split}, {config.subset})",
        "compute": repro.settings.label,
        "setting": manifest_setting(RunDirectory(run).read_manifest()),
        "description": (
            f"{repro.settings.label} of {repro.method} by `evalsuite reproduce "
            f"{repro.method} --config {repro.config_path.name}`. Training manifest sha256 "
            f"{link['sha256']} (its run manifest's run_config.reproduce.training_manifest)."
        ),
    }
    info = SubmissionInfo.model_validate({**defaults, **repro.settings.submission})
    path = pack_submission([run], stage.path / SUBMISSION_DIR, info)
    # verified as `evalsuite leaderboard add` would, so a refusal is said now instead of at filing time; a subset of a
    # split (every CPU reproduction) is packed as `test@first:N`: an entry in a column of its own
    report = verify_submission(path, repro.settings.data_dir)
    verdict = (
        "accepted" if report.accepted else f"refused ({len(report.problems)} problems), first: {report.problems[0]}"
    )
    return {"submission": str(path), "training_manifest_sha256": link["sha256"], "leaderboard": verdict}
