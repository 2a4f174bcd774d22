"""Export evalsuite tasks as lm-evaluation-harness task YAMLs that run offline with our prompts and metrics.

For each task and setting it writes `data/<name>.jsonl` (one row per question with the finished prompt, the gold
answers and, for naive-rag, the precomputed passages), `<name>.yaml` (`dataset_path: json` over that local file,
`generate_until`, greedy) and one shared `utils.py` whose `process_results` scores the generation with evalsuite's
answer rule and the task's metrics that average over benchmarks (em, cover_em, f1 for the standard tasks; from the
metric registry, under the task's answer normalization), so lm-eval reports exactly the numbers `evalsuite score` would.
A group `evalsuite_<task>` runs both settings. Prompts are the baselines' `base` style (raw text, FlashRAG's system
and user texts joined by a blank line); with `--apply_chat_template` lm-eval sends that whole text as one user message,
which chat models (SmolLM2-Instruct) need to answer at all.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError

SETTINGS = {"direct": "direct", "naive-rag": "naive-rag"}
NO_CHAT = staticmethod(lambda messages: None)

UTILS = (
    '"""lm-eval hooks written by `evalsuite lmeval export`: score a generation with evalsuite\'s answer rule and '
    'metrics."""\n'
    "\n"
    "from evalsuite.lmeval_export import process_results  # noqa: F401\n"
)


@dataclass(frozen=True)
class ExportedTask:
    """One written lm-eval task: its name, YAML path, data file and row count."""

    name: str
    yaml: Path
    data: Path
    rows: int


def task_name(task: str, setting: str) -> str:
    """`evalsuite_<task>_<setting>` with dashes as underscores (lm-eval task names)."""
    return f"evalsuite_{task}_{setting}".replace("-", "_")


def exported_metrics(task: str) -> list[str]:
    """The metrics an exported task reports: its metrics that average over benchmarks (a single generation has
    no turns or passages to score)."""
    from evalsuite.metrics.registry import get_metric
    from evalsuite.scoring import task_metrics

    return [name for name in task_metrics(task) if get_metric(name).average == "macro"]


def fallback_metrics() -> list[str]:
    """What a doc without its own `metrics` is scored with: the default metrics that average over benchmarks (a
    metric declared `default=False` belongs to the tasks that name it, never to a doc that names none)."""
    from evalsuite.metrics.registry import averaged_metrics, default_metrics

    return averaged_metrics(default_metrics())


def process_results(doc: dict[str, Any], results: Sequence[str]) -> dict[str, float]:
    """lm-eval `process_results`: the method's answer rule on the generation, then the doc's metrics (default:
    `fallback_metrics()`) under its answer normalization (default: SQuAD's)."""
    from evalsuite.agent.method import get_method
    from evalsuite.metrics.registry import MetricInput, get_metric, get_normalizer

    prediction = get_method(doc["method"]).extract_answer(results[0])
    example = MetricInput(
        prediction, doc["golden_answers"], normalize=get_normalizer(doc.get("normalization", "squad"))
    )
    return {name: float(get_metric(name).compute(example)) for name in doc.get("metrics") or fallback_metrics()}


def _yaml(name: str, data: Path, max_gen_toks: int, stop: Sequence[str], metrics: Sequence[str]) -> str:
    from evalsuite.metrics.registry import get_metric

    import yaml

    spec = {
        "task": name,
        "dataset_path": "json",
        "dataset_kwargs": {"data_files": {"test": str(data.resolve())}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{golden_answers[0]}}",
        "generation_kwargs": {"until": list(stop), "max_gen_toks": max_gen_toks, "do_sample": False},
        "metric_list": [
            {"metric": m, "aggregation": "mean", "higher_is_better": get_metric(m).higher_is_better} for m in metrics
        ],
        "metadata": {"version": 1.0, "exported_by": "evalsuite lmeval export"},
    }
    # `!function` is lm-eval's YAML tag for a Python hook next to the YAML file.
    return (
        yaml.safe_dump(spec, sort_keys=False, allow_unicode=True) + "process_results: !function utils.process_results\n"
    )


def export_tasks(
    out: str | Path,
    tasks: Sequence[str] | None = None,
    settings: Sequence[str] = ("direct", "naive-rag"),
    data_dir: str | Path | None = None,
    split: str | None = None,
    subset: str = "full",
    retriever: Any = None,
    topk: int = 3,
    max_gen_toks: int = 32,
) -> list[ExportedTask]:
    """Write the task YAMLs, data files, utils.py and per-task groups into `out` (`tasks`: default every registered
    task); returns what was written."""
    from evalsuite.agent.method import get_method
    from evalsuite.tasks import apply_subset, load_split
    from evalsuite.tasks.registry import resolve_task, task_names

    tasks = task_names() if tasks is None else tasks

    unknown = [s for s in settings if s not in SETTINGS]
    if unknown:
        raise EvalsuiteError(f"unknown lm-eval setting(s): {', '.join(unknown)}", hint=f"use {', '.join(SETTINGS)}")
    if "naive-rag" in settings and retriever is None:
        raise EvalsuiteError(
            "the naive-rag setting needs precomputed passages", hint="pass --retriever INDEX_DIR (or --settings direct)"
        )
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "utils.py").write_text(UTILS, encoding="utf-8")
    written: list[ExportedTask] = []
    for task_spec in tasks:
        task = resolve_task(task_spec)  # a name, or a task declaration FILE.yaml
        loaded = load_split(task, split, data_dir)
        rows = apply_subset(loaded.rows, subset)
        names = []
        metrics = exported_metrics(task.name)
        for setting in settings:
            method = get_method(SETTINGS[setting])
            name = task_name(task.name, setting)
            data = out / "data" / f"{name}.jsonl"
            hits = (
                retriever.search([row.question for row in rows], topk) if setting == "naive-rag" else [None] * len(rows)
            )
            with open(data, "w", encoding="utf-8") as handle:
                for row, row_hits in zip(rows, hits):
                    if row_hits is None:
                        prompt, passages = method.prompt(row.question, "base", NO_CHAT), []
                    else:
                        prompt = method.prompt_with_passages(
                            row.question, "base", NO_CHAT, [row_hits], lambda text: text
                        )
                        passages = [
                            {"id": str(h.doc_id), "contents": h.contents, "score": float(h.score)} for h in row_hits
                        ]
                    record = {
                        "id": row.id,
                        "question": row.question,
                        "golden_answers": row.golden_answers,
                        "method": method.name,
                        "prompt": prompt,
                        "passages": passages,
                        "metrics": metrics,
                        "normalization": task.normalization,
                    }
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            yaml_path = out / f"{name}.yaml"
            yaml_path.write_text(_yaml(name, data, max_gen_toks, stop=["\n\n"], metrics=metrics), encoding="utf-8")
            written.append(ExportedTask(name, yaml_path, data, len(rows)))
            names.append(name)
        group = f"evalsuite_{task.name}"
        (out / f"{group}.yaml").write_text(
            f"group: {group}\ntask:\n" + "".join(f"  - {n}\n" for n in names) + "metadata:\n  version: 1.0\n",
            encoding="utf-8",
        )
    return written
