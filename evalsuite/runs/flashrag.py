"""Import FlashRAG / Search-R1 result files and check them against what they recorded.

Three layouts, as those pipelines write them:
- a JSON list of `{id, question, golden_answers, output}` (FlashRAG `Dataset.save`, Search-R1 reproductions);
- JSONL, one such object per line;
- a FlashRAG run folder `<dataset>_<date>_<note>/` holding `intermediate_data.json` (that JSON list), `metric_score.txt`
  (`em: 0.352` lines, the averages FlashRAG's `Evaluator` wrote) and `config.yaml` (its `dataset_name` names the task).

The response is `output.final_response` (Search-R1 reproductions) or, in FlashRAG's reasoning pipelines, the part of
`output.prompt` after the question (that field holds prompt and response together).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.protocol.search_r1 import parse_trajectory
from evalsuite.protocol.trajectory import ParsedTrajectory
from evalsuite.runs.conventions import METRIC_FUNCTIONS, PredictionContext, explain_metric, explain_prediction
from evalsuite.runs.schema import ExampleRecord
from evalsuite.tasks.registry import get_task, list_tasks

INTERMEDIATE_FILE = "intermediate_data.json"
METRIC_SCORE_FILE = "metric_score.txt"
CONFIG_FILE = "config.yaml"
# FlashRAG's recorded metric names → ours.
RECORDED_METRICS = {"em": "em", "acc": "cover_em", "f1": "f1", "precision": "precision", "recall": "recall"}
_CHAT_ASSISTANT_HEADERS = ("<|im_start|>assistant\n", "<|start_header_id|>assistant<|end_header_id|>\n\n", "<start_of_turn>model\n")


@dataclass
class ResultItem:
    """One result item and where it is (`file: item 3` or `file:12`), for messages that name it."""

    where: str
    data: dict[str, Any]


@dataclass
class ResultSource:
    """A result file or run folder as read: its items, and the averages and config a FlashRAG run folder holds."""

    path: Path
    layout: str  # "json-list", "jsonl" or "flashrag-run"
    items: list[ResultItem]
    metric_file: Path | None = None
    averages: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def data_file(self) -> Path:
        return self.path / INTERMEDIATE_FILE if self.path.is_dir() else self.path


@dataclass
class RecordedScore:
    """What the original pipeline recorded for one question, and what it may have extracted its prediction from."""

    id: str
    pred: str | None
    metric_score: dict[str, float]
    context: PredictionContext | None = None


@dataclass
class Difference:
    """One recorded value we do not reproduce, with the convention that explains it (None: no known one does)."""

    item: str
    what: str
    ours: str
    recorded: str
    explanation: str | None

    def line(self) -> str:
        why = self.explanation or "no known convention explains it"
        return f"{self.item}: {self.what} {self.ours} != recorded {self.recorded} ({why})"


def is_flashrag_run(path: Path) -> bool:
    """A FlashRAG run folder, or its `intermediate_data.json` given directly."""
    return (path.is_dir() and (path / INTERMEDIATE_FILE).is_file()) or path.name == INTERMEDIATE_FILE


def read_result_source(path: Path) -> ResultSource:
    """Read any of the three layouts; anything else is one error naming the file and the layouts accepted."""
    if path.name == INTERMEDIATE_FILE:
        path = path.parent
    if path.is_dir():
        if not (path / INTERMEDIATE_FILE).is_file():
            raise DataError(f"{path}: unknown layout: a folder without {INTERMEDIATE_FILE}", hint=_LAYOUT_HINT)
        data_file = path / INTERMEDIATE_FILE
        source = ResultSource(path, "flashrag-run", _read_json_list(data_file))
        metric_file = path / METRIC_SCORE_FILE
        if metric_file.is_file():
            source.metric_file, source.averages = metric_file, read_metric_score(metric_file)
        if (path / CONFIG_FILE).is_file():
            source.config = _read_config(path / CONFIG_FILE)
        return source
    if path.suffix == ".jsonl":
        return ResultSource(path, "jsonl", _read_jsonl(path))
    return ResultSource(path, "json-list", _read_json_list(path))


_LAYOUT_HINT = "pass a JSON list of results, a .jsonl file, or a FlashRAG run folder (intermediate_data.json beside metric_score.txt)"


def _read_text(path: Path) -> str:
    if path.exists() and not path.is_file():  # a pipe or device handed over as a result file would block or never end
        raise DataError(f"{path}: not a regular file", hint=_LAYOUT_HINT)
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})", hint=_LAYOUT_HINT) from None


def _read_json_list(path: Path) -> list[ResultItem]:
    text = _read_text(path)
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # one object per line in a .json file
            return _read_jsonl(path)
        raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})", hint=_LAYOUT_HINT) from None
    if not isinstance(items, list):
        keys = f" with keys {', '.join(list(items)[:5])}" if isinstance(items, dict) else ""
        raise DataError(f"{path}: unknown layout: a JSON {type(items).__name__}{keys}, not a list of results", hint=_LAYOUT_HINT)
    return [ResultItem(f"{path}: item {index}", item) for index, item in enumerate(items)]


def _read_jsonl(path: Path) -> list[ResultItem]:
    items = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(ResultItem(f"{path}:{number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{number}: invalid JSON ({exc.msg})", hint="each line of a .jsonl result file is one result object") from None
    return items


def read_metric_score(path: Path) -> dict[str, float]:
    """FlashRAG's `metric_score.txt`: one `name: value` line per metric (`Evaluator.save_metric_score`)."""
    averages: dict[str, float] = {}
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        try:
            averages[name.strip()] = float(value)
        except ValueError:
            if not sep:
                raise DataError(f"{path}:{number}: expected 'metric: value', got {line[:60]!r}", hint="FlashRAG writes lines like 'em: 0.35'") from None
            continue  # a non-numeric entry (e.g. a list) is not an average to check
    return averages


class _LenientLoader(yaml.SafeLoader):
    """FlashRAG dumps its whole config with `yaml.dump`, Python objects included: read their tags as plain values."""


def _construct_any(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)


_LenientLoader.add_multi_constructor("", _construct_any)


def _read_config(path: Path) -> dict[str, Any]:
    from evalsuite.files import MAX_CONFIG_BYTES, load_untrusted_yaml, read_untrusted_bytes

    try:
        text = read_untrusted_bytes(path, MAX_CONFIG_BYTES, "FlashRAG config").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})", hint=_LAYOUT_HINT) from None
    try:
        config = load_untrusted_yaml(text, path, _LenientLoader)
    except yaml.YAMLError as exc:
        raise DataError(f"{path}: invalid YAML ({exc})") from None
    return config if isinstance(config, dict) else {}


def infer_task(path: Path, config: dict[str, Any] | None = None) -> str:
    """The task: config.yaml's `dataset_name`, else the registered task whose name prefixes the file or folder name."""
    names = {t.name.lower(): t.name for t in list_tasks()}
    dataset = str((config or {}).get("dataset_name", "")).lower()
    if dataset in names:
        return names[dataset]
    stem = (path.parent.name if path.name == INTERMEDIATE_FILE else path.name).lower()
    matches = [name for low, name in names.items() if stem.startswith(low + "_") or stem.startswith(low + ".")]
    if not matches:
        raise EvalsuiteError(f"cannot infer the task of {path} from its name", hint="pass --task NAME (see `evalsuite tasks`)")
    return max(matches, key=len)


def response_of(output: dict[str, Any], question: str) -> str | None:
    """The model's response: `final_response`, else what follows the question in FlashRAG's `prompt` field."""
    if isinstance(output.get("final_response"), str):
        return output["final_response"]
    prompt = output.get("prompt")
    if not isinstance(prompt, str) or not question or question not in prompt:
        return None
    rest = prompt[prompt.find(question) + len(question) :]
    for header in _CHAT_ASSISTANT_HEADERS:
        if header in rest:
            return rest[rest.find(header) + len(header) :]
    return rest[1:] if rest.startswith("\n") else rest


def _prompt_of(output: dict[str, Any], response: str) -> str | None:
    if isinstance(output.get("query"), str):
        return output["query"]
    prompt = output.get("prompt")
    return prompt[: len(prompt) - len(response)] if isinstance(prompt, str) and prompt.endswith(response) else None


def _check_item(item: ResultItem) -> tuple[str, str, list[str], dict[str, Any], str]:
    """(id, question, golds, output, response) of a valid item; a one-line error naming the item otherwise."""
    data, where = item.data, item.where
    if not isinstance(data, dict):
        raise DataError(f"{where}: expected a result object, got {type(data).__name__}", hint=_LAYOUT_HINT)
    for key in ("id", "question", "golden_answers"):
        if key not in data:
            raise DataError(f"{where}: missing '{key}'", hint="each result needs id, question, golden_answers and output (FlashRAG format)")
    golds = data["golden_answers"]
    golds = [golds] if isinstance(golds, str) else golds
    if not isinstance(golds, list):
        raise DataError(f"{where} (id {data['id']!r}): 'golden_answers' must be a list of strings")
    output = data.get("output")
    response = response_of(output, str(data["question"])) if isinstance(output, dict) else None
    if response is None:
        raise DataError(
            f"{where} (id {data['id']!r}): missing 'output.final_response'",
            hint="this reader takes Search-R1 results (output.final_response) and FlashRAG reasoning-pipeline results (output.prompt)",
        )
    return str(data["id"]), str(data["question"]), [str(g) for g in golds], output, response


def records_from_source(
    source: ResultSource, task: str | None = None, parse: Callable[[str], ParsedTrajectory] = parse_trajectory
) -> tuple[str, list[ExampleRecord], list[RecordedScore]]:
    """Each result item as an ExampleRecord (unscored) parsed with `parse` (a method's `Method.parse`; Search-R1's
    by default), plus what the source recorded."""
    task_name = get_task(task).name if task else infer_task(source.path, source.config)
    split = get_task(task_name).eval_split
    records: list[ExampleRecord] = []
    recorded: list[RecordedScore] = []
    seen: set[str] = set()
    for item in source.items:
        example_id, question, golds, output, response = _check_item(item)
        if example_id in seen:
            raise DataError(f"{item.where}: duplicate id {example_id!r}", hint="each question may appear once per result file")
        seen.add(example_id)
        parsed = parse(response)
        records.append(
            ExampleRecord(
                id=example_id, task=task_name, split=split, question=question, golden_answers=golds, prediction=parsed.answer,
                trajectory=response, turns=parsed.turns, protocol_errors=parsed.errors, stop_reason=output.get("stop_reason"),
                metadata={"prompt": output.get("query")} if output.get("query") else {},
            )
        )
        pred = output.get("pred")
        recorded.append(
            RecordedScore(
                id=example_id, pred=None if pred is None else str(pred), metric_score=dict(output.get("metric_score") or {}),
                context=PredictionContext(response=response, prompt=_prompt_of(output, response), parsed=parsed),
            )
        )
    return task_name, records, recorded


def check_against_task_data(source: ResultSource, records: list[ExampleRecord], task: str, data_dir: Path) -> None:
    """Every question must be in the task's data (by id, else by question text): one error line naming the first that is not."""
    from evalsuite.tasks.loader import available_splits, load_split
    from evalsuite.tasks.rows import normalize_question

    splits = available_splits(data_dir, task)
    if not splits:
        raise DataError(f"{data_dir}: no data for task {task!r}", hint="pass --data-dir with the benchmark files, or --task with the file's benchmark")
    ids, questions = set(), set()
    for split in splits:
        for row in load_split(task, split, data_dir).rows:
            ids.add(row.id)
            questions.add(row.question)
    for item, record in zip(source.items, records):
        if record.id not in ids and normalize_question(record.question) not in questions:
            raise DataError(
                f"{item.where} (id {record.id!r}): question not in task {task!r} ({', '.join(splits)} under {data_dir}): {record.question[:80]!r}",
                hint="pass --task with the benchmark this file was run on, or --data-dir with the data it was run on",
            )


def compare_with_recorded(records: list[ExampleRecord], recorded: list[RecordedScore], tolerance: float = 1e-9) -> list[Difference]:
    """Every recorded prediction and per-item score we do not reproduce, each with the convention that explains it."""
    differences: list[Difference] = []
    for record, original in zip(records, recorded):
        ours = record.prediction if record.prediction is not None else ""
        if original.pred is not None and ours != original.pred:
            why = explain_prediction(original.pred, original.context) if original.context else None
            differences.append(Difference(record.id, "prediction", repr(ours), repr(original.pred), why))
        for theirs, mine in RECORDED_METRICS.items():
            value = _number(original.metric_score.get(theirs))
            if value is None or mine not in record.metrics or abs(record.metrics[mine] - value) <= tolerance:
                continue
            why = explain_metric(theirs, value, ours, original.pred, record.golden_answers, tolerance)
            differences.append(Difference(record.id, mine, f"{record.metrics[mine]:.4f}", f"{theirs} {value:.4f}", why))
    return differences


def compare_averages(source: ResultSource, records: list[ExampleRecord], recorded: list[RecordedScore], tolerance: float = 1e-6) -> list[Difference]:
    """metric_score.txt's averages against the mean of our scores, explained by the per-item scores the file holds."""
    if source.metric_file is None or not records:
        return []
    differences = []
    for theirs, value in source.averages.items():
        mine = RECORDED_METRICS.get(theirs)
        if mine is None or theirs not in METRIC_FUNCTIONS:
            continue
        ours = sum(r.metrics.get(mine, 0.0) for r in records) / len(records)
        if abs(ours - value) <= tolerance:
            continue
        item_values = [v for v in (_number(o.metric_score.get(theirs)) for o in recorded) if v is not None]
        item_mean = sum(item_values) / len(item_values) if item_values else None
        if item_mean is not None and len(item_values) == len(records) and abs(item_mean - value) <= tolerance:
            why = "the file's own per-item scores average to it: the per-item differences listed account for it"
        elif item_mean is not None and len(item_values) < len(records) and abs(item_mean - value) <= tolerance:
            why = f"averaged over the {len(item_values)} items that have a recorded score, not all {len(records)}"
        elif abs(round(ours, 2) - value) <= tolerance or abs(round(ours, 3) - value) <= tolerance:
            why = "the same average rounded"
        elif abs(100 * ours - value) <= 100 * tolerance:
            why = "the same average on a 0-100 scale"
        else:
            why = None
        differences.append(Difference(source.metric_file.name, f"average {mine}", f"{ours:.6f}", f"{theirs} {value:.6f}", why))
    return differences


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number
