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
from evalsuite.files import MAX_CONFIG_BYTES, file_sha256, read_untrusted_bytes

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
    eval_questions: int = 0  # distinct questions each evaluation answers (for the dry run's time estimate)


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
    repro.eval_questions = len(eval_questions)
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


# What each field of a stage record holds, as this module writes it (write_record); checked before anything reads it.
RECORD_FIELDS: dict[str, tuple[type, str]] = {
    "stage": (str, "string"),
    "inputs": (dict, "object"),
    "complete": (bool, "boolean"),
    "result": (dict, "object"),
}


def read_record(path: Path) -> dict[str, Any] | None:
    """A stage directory's record; None when it has none or it is not JSON (the stage is then not trusted as done).
    A record that is not a regular file (a FIFO would block), is oversized, or whose fields are not what
    `write_record` writes, is refused in one line naming the file and the field."""
    file = path / RECORD
    try:
        data = read_untrusted_bytes(file, MAX_CONFIG_BYTES, "stage record")
    except FileNotFoundError:
        return None
    try:
        record = json.loads(data)
    except ValueError:  # (UnicodeDecodeError included) a torn write: not a record, the stage is redone or refused
        return None
    hint = f"this is not a record `evalsuite reproduce` wrote; remove {path} so the stage is made again"
    if not isinstance(record, dict):
        raise DataError(f"{file}: expected a JSON object (a stage record), got {type(record).__name__}", hint=hint)
    for name, (kind, shown) in RECORD_FIELDS.items():
        if name in record and not isinstance(record[name], kind):
            raise DataError(
                f"{file}: field '{name}' must be a JSON {shown}, got {type(record[name]).__name__}", hint=hint
            )
    return record


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
    from evalsuite.agent.config import RunConfig
    from evalsuite.agent.runner import RunSpec

    s = repro.settings
    link_fields = {"method": repro.method, "config": str(repro.config_path), "stage": stage.name, **(link or {})}
    config = RunConfig(
        prompt_style=repro.train_config.prompt_style,
        subset=s.subset,
        batch_size=s.batch_size,
        **asdict(eval_rollout(repro)),  # the rollout's limits and decoding are RunConfig fields of the same names
    )
    return RunSpec(
        model=model,
        backend=s.backend,
        tasks=s.benchmarks,
        out=stage.path,
        method=repro.evaluator_method,
        config=config,
        split=s.split,
        data_dir=s.data_dir,
        retriever=s.retriever or repro.train_config.retriever,
        resume=(stage.path / "manifest.json").is_file(),
        notes=notes,
        recorded_options={"reproduce": link_fields},
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


def training_reward(config: Any) -> str:
    """The reward a recipe config optimised, as an entry's card states it: the method's reward with the settings the
    config changed, any shaping term, and the training rollout's turn limit."""
    settings = ", ".join(f"{k} {v}" for k, v in sorted(config.reward.settings.items()))
    overlap = f"; question-overlap shaping weight {config.smoke_overlap_weight}" if config.smoke_overlap_weight else ""
    turns = config.rollout.get("max_turns")
    return (
        f"{config.method} reward"
        + (f" ({settings})" if settings else " (its defaults)")
        + overlap
        + (f"; training max_turns {turns}" if turns is not None else "")
    )


def _submission(repro: Reproduction, stage: Stage) -> dict[str, Any]:
    """Pack the checkpoint's run with `leaderboard.pack` (the same packer as `evalsuite submit`)."""
    from evalsuite.leaderboard.pack import pack_submission
    from evalsuite.leaderboard.submission import SubmissionInfo
    from evalsuite.leaderboard.verification.declared_setting import manifest_setting
    from evalsuite.leaderboard.verify import verify_submission
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
        "training_reward": training_reward(config),
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


# ---- the dry run: each stage's requirements, command, output and time, checked without running anything ----

# Seconds measured in the search-r1 cpu_learn reproduction on 2 shared CPU cores, Gemma-3-270M
# (docs/recipes/runs/search-r1-cpu-learn: train 3,789.6 s for 16 steps x 12 rollouts x 24 tokens; eval-base 363.8 s
# for 128 questions x 24 tokens).
# Per generated-token budget, so a config with longer rollouts scales; a larger model is slower than this says.
CPU_TRAIN_S_PER_ROLLOUT_TOKEN = 3789.6 / (16 * 12 * 24)
CPU_EVAL_S_PER_QUESTION_TOKEN = 363.8 / (128 * 24)
ESTIMATE_SOURCE = "rates measured in search-r1 cpu_learn (Gemma-3-270M, 2 CPU cores), scaled by rollouts x tokens"
# the distributions each backend loads a model with, as the extra that brings them names them
BACKEND_EXTRAS = {
    "hf": "hf",
    "vllm": "vllm",
    "vllm-async": "vllm",
    "llamacpp": "llamacpp",
    "xllamacpp": "demo",
    "openai": "openai",
    "lmeval": "lmeval",
}
BACKENDS_NEEDING_TORCH = ("hf", "vllm", "vllm-async")
GIB = 1024**3


@dataclass
class Requirement:
    """One thing a stage needs, and whether it is here: `detail` says what was found, `hint` what to do if not."""

    what: str
    ok: bool
    detail: str
    hint: str = ""


@dataclass
class StagePlan:
    """What the dry run says of one stage."""

    name: str
    action: str  # run | resume | skip
    why: str
    does: str
    command: str | None  # the command that does the same by hand, where one exists
    output: str
    estimate_s: float | None
    requirements: list[Requirement]


def dry_run(repro: Reproduction) -> list[StagePlan]:
    """Each stage's plan with its requirements checked (extras, model, data, retriever, free disk); runs nothing."""
    plans = []
    for name in STAGES:
        stage = repro.stages[name]
        requirements = [] if stage.action == "skip" else _requirements(repro, name)
        plans.append(
            StagePlan(
                name,
                stage.action,
                stage.why,
                _STAGE_DOES[name],
                _stage_command(repro, name),
                str(stage.path / OUTPUT_FILES[name]),
                0.0 if stage.action == "skip" else _estimate_s(repro, name),
                requirements,
            )
        )
    return plans


def missing_requirements(plans: list[StagePlan]) -> list[tuple[str, Requirement]]:
    return [(p.name, r) for p in plans for r in p.requirements if not r.ok]


_STAGE_DOES = {
    "train": "trains the recipe from the base model",
    "eval-base": "evaluates the base model on the reproduce: section's questions",
    "eval-trained": "evaluates the checkpoint on the same questions with the same settings",
    "table": "sets the two runs beside the paper's numbers, with paired tests of checkpoint against base",
    "submission": "packs the checkpoint's run as a leaderboard submission naming the training manifest",
}


def _stage_command(repro: Reproduction, name: str) -> str | None:
    import shlex

    out = repro.out
    if name == "train":
        return shlex.join(
            ["evalsuite", "train", repro.method, "--config", str(repro.config_path), "-o", str(out / name)]
        )
    if name not in ("eval-base", "eval-trained"):
        return None  # done in process; `evalsuite table` / `submit` take other options than these stages use
    s, rollout = repro.settings, eval_rollout(repro)
    model = repro.train_config.model if name == "eval-base" else str(out / "train" / "checkpoint")
    words = ["evalsuite", "run", "--backend", s.backend, "--model", model, "--method", repro.evaluator_method]
    words += ["--prompt-style", repro.train_config.prompt_style, "--tasks", s.benchmarks, "--subset", s.subset]
    words += ["--split", s.split] if s.split else []
    words += ["--data-dir", s.data_dir] if s.data_dir else []
    retriever = s.retriever or repro.train_config.retriever
    words += ["--retriever", retriever] if retriever else []
    for option in ("max_turns", "max_tokens", "max_obs_tokens", "max_context_tokens", "topk", "temperature", "seed"):
        words += [f"--{option.replace('_', '-')}", str(getattr(rollout, option))]
    words += ["--top-p", str(rollout.top_p)] if rollout.top_p is not None else []
    words += ["--batch-size", str(s.batch_size), "-o", str(out / name)]
    return shlex.join(words)


def _on_cpu(repro: Reproduction) -> bool:
    return bool(repro.train_config.grpo.get("use_cpu"))


def _estimate_s(repro: Reproduction, name: str) -> float | None:
    """Seconds the stage should take on a CPU at the measured rates; None where no rate was measured (a GPU)."""
    if name in ("table", "submission"):
        return 5.0  # a table and a packed run: seconds
    if not _on_cpu(repro):
        return None
    if name == "train":
        grpo = repro.train_config.grpo
        rollouts = grpo.get("max_steps", 0) * grpo.get("per_device_train_batch_size", 8)
        rollouts *= grpo.get("gradient_accumulation_steps", 1)
        return rollouts * _tokens_per_rollout(repro.train_config.rollout_config()) * CPU_TRAIN_S_PER_ROLLOUT_TOKEN
    return repro.eval_questions * _tokens_per_rollout(eval_rollout(repro)) * CPU_EVAL_S_PER_QUESTION_TOKEN


def _tokens_per_rollout(rollout: Any) -> int:
    return int(rollout.max_tokens) * (int(rollout.max_turns) + 1)  # every search turn, then the answer turn


def _requirements(repro: Reproduction, name: str) -> list[Requirement]:
    s = repro.settings
    if name == "train":
        return [
            _extra("train", "training"),
            _distributions(["torch"], "torch (the CPU build: pip install torch==2.13.0; a GPU's from pytorch.org)"),
            _model(repro.train_config.model, None),
            _retriever(repro.train_config.retriever),
            _disk(repro.out, _train_disk_bytes(repro)),
        ]
    if name in ("eval-base", "eval-trained"):
        needs = [_extra(BACKEND_EXTRAS[s.backend], f"the {s.backend} backend")] if s.backend in BACKEND_EXTRAS else []
        if s.backend in BACKENDS_NEEDING_TORCH:
            needs.append(_distributions(["torch"], "torch (the CPU build: pip install torch==2.13.0)"))
        if name == "eval-base":
            needs.append(_model(repro.train_config.model, s.backend))
        else:
            needs.append(Requirement("model", True, f"the checkpoint the train stage writes ({repro.out / 'train'})"))
        needs.append(Requirement("data", True, f"{s.benchmarks} ({s.split or 'eval split'}, {s.subset}): found"))
        needs.append(_retriever(s.retriever or repro.train_config.retriever))
        return needs
    if name == "table":
        return [_distributions(["matplotlib"], 'pip install "evalsuite[site]" (the forest plots)')]
    return []


def _extra(extra: str, purpose: str) -> Requirement:
    """Whether every distribution of evalsuite's `extra` is installed at a version it accepts."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement as Pep508

    try:
        declared = [Pep508(line) for line in requires("evalsuite") or []]
    except PackageNotFoundError:  # a source tree on PYTHONPATH without an install: nothing to read the extras from
        return Requirement(f"extra [{extra}]", True, "evalsuite is not installed: its extras cannot be checked")
    wanted = [r for r in declared if r.marker is not None and r.marker.evaluate({"extra": extra})]
    found = _distributions([str(r) for r in wanted], f'pip install "evalsuite[{extra}]"')
    return replace(found, what=f"extra [{extra}] ({purpose})")


def _distributions(specs: list[str], install: str) -> Requirement:
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement as Pep508

    problems = []
    for spec in specs:
        wanted = Pep508(spec)
        try:
            have = version(wanted.name)
        except PackageNotFoundError:
            problems.append(f"{wanted.name} missing")
            continue
        if wanted.specifier and not wanted.specifier.contains(have, prereleases=True):
            problems.append(f"{wanted.name} {have} (needs {wanted.specifier})")
    names = ", ".join(Pep508(spec).name for spec in specs)
    if problems:
        return Requirement(names, False, "; ".join(problems), hint=install)
    return Requirement(names, True, "installed")


def _model(spec: str, backend: str | None) -> Requirement:
    """Whether the model can be loaded offline now, or fetched: a packaged name, a local path, a hub id."""
    from evalsuite.models.packaged import PACKAGED_MODELS, is_prepared

    if spec in PACKAGED_MODELS:
        packaged = PACKAGED_MODELS[spec]
        if backend not in ("llamacpp", "xllamacpp") and is_prepared(packaged.directory()):
            return Requirement(f"model {spec}", True, f"prepared in {packaged.directory()}")
        try:
            gguf = packaged.gguf()
        except EvalsuiteError as exc:
            return Requirement(f"model {spec}", False, exc.message, hint=packaged.install)
        return Requirement(f"model {spec}", True, f"packaged GGUF {gguf} (prepared on first use)")
    if Path(spec).exists():
        return Requirement(f"model {spec}", True, "local path")
    if spec.startswith(("/", ".", "~")) or spec.count("/") != 1:
        return Requirement(f"model {spec}", False, "no such path, and not a hub id (owner/name)", hint="check model:")
    from evalsuite.network import hub_unreachable

    if _in_hub_cache(spec):
        return Requirement(f"model {spec}", True, "in the Hugging Face cache")
    why = hub_unreachable()
    if why is None:
        return Requirement(f"model {spec}", True, "on the hub (downloaded on first use)")
    return Requirement(
        f"model {spec}",
        False,
        f"not in the Hugging Face cache, and the hub cannot be reached ({why})",
        hint="download it where the hub is reachable, or give a local model directory",
    )


def _in_hub_cache(repo: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    return isinstance(try_to_load_from_cache(repo, "config.json"), str)


def _retriever(spec: str | None) -> Requirement:
    from evalsuite.retrieval.index import is_url

    if spec is None:
        return Requirement("retriever", True, "none (the method does not search)")
    if spec == "adqa":
        return Requirement("retriever adqa", True, "BM25 over the packaged AD-QA corpus (built on first use)")
    if is_url(spec):
        from evalsuite.network import host_port, unreachable

        if (why := unreachable(spec)) is not None:
            return Requirement(
                f"retriever {spec}",
                False,
                f"no server answers ({why})",
                hint=f"start it first: evalsuite serve-retriever --index INDEX --port {host_port(spec)[1]}",
            )
        return Requirement(f"retriever {spec}", True, "a server answers")
    if (Path(spec) / "index.json").is_file():
        return Requirement(f"retriever {spec}", True, "index directory")
    return Requirement(
        f"retriever {spec}",
        False,
        "not an index directory (no index.json), a URL or adqa",
        hint="build one: evalsuite index build --corpus CORPUS.jsonl --retriever bm25 -o DIR",
    )


def _train_disk_bytes(repro: Reproduction) -> int | None:
    """About what training writes: the checkpoint and each saved GRPO step (weights and optimizer state, float32)."""
    from evalsuite.models.packaged import PACKAGED_MODELS, is_prepared

    model = repro.train_config.model
    directory = PACKAGED_MODELS[model].directory() if model in PACKAGED_MODELS else Path(model)
    if not directory.is_dir() or (model in PACKAGED_MODELS and not is_prepared(directory)):
        return None
    weights = sum(p.stat().st_size for p in directory.glob("*.safetensors")) + sum(
        p.stat().st_size for p in directory.glob("*.bin")
    )
    saves = repro.train_config.grpo.get("save_total_limit") or 2
    return weights * (1 + 3 * saves)  # the checkpoint, then per save: weights and Adam's two moments


def _disk(out: Path, need: int | None) -> Requirement:
    existing = next(p for p in (out, *out.resolve().parents) if p.exists())
    free = shutil.disk_usage(existing).free
    if need is None:
        return Requirement("disk", True, f"{free / GIB:.1f} GiB free at {existing} (the model's size is not known yet)")
    detail = f"{free / GIB:.1f} GiB free at {existing}, training writes about {need / GIB:.1f} GiB"
    return Requirement(
        "disk", free >= need, detail, hint="" if free >= need else "free some space, or choose another -o"
    )


def plan_json(repro: Reproduction, plans: list[StagePlan]) -> dict[str, Any]:
    known = [p.estimate_s for p in plans if p.estimate_s is not None]
    return {
        "method": repro.method,
        "config": str(repro.config_path),
        "output": str(repro.out),
        "ready": not missing_requirements(plans),
        "estimate_s": sum(known) if len(known) == len(plans) else None,
        "estimate_source": ESTIMATE_SOURCE,
        "stages": [asdict(p) for p in plans],
    }
