"""Import FlashRAG / Search-R1 result files and check them against what they recorded.

Three layouts, as those pipelines write them:
- a JSON list of `{id, question, golden_answers, output}` (FlashRAG `Dataset.save`, Search-R1 reproductions);
- JSONL, one such object per line;
- a FlashRAG run folder `<dataset>_<date>_<note>/` holding `intermediate_data.json` (that JSON list), `metric_score.txt`
  (`em: 0.352` lines, the averages FlashRAG's `Evaluator` wrote) and `config.yaml` (its `dataset_name` names the task).

Which writer produced the records (a FlashRAG pipeline, a family eval script, or `--fields`) is
`evalsuite.runs.writer_layouts`' table: it says where the prediction, the raw generation and the recorded scores are.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.protocol.search_r1 import parse_trajectory
from evalsuite.protocol.trajectory import ParsedTrajectory
from evalsuite.runs.conventions import (
    METRIC_FUNCTIONS,
    RECORDED_ALIASES,
    PredictionContext,
    explain_metric,
    explain_prediction,
)
from evalsuite.runs.writer_layouts import (
    MISSING,
    FAMILY_LAYOUTS,
    LAYOUTS,
    ResultLayout,
    detect_layout,
    get_layout,
    golds_of,
    layout_of_save_note,
    lookup,
    extra_keys,
    is_judgment_key,
    missing_field,
    nearest_layout,
    parse_fields,
    require_path,
    response_of,
)
from evalsuite.runs.schema import ExampleRecord
from evalsuite.tasks.registry import get_task, list_tasks, resolve_task

INTERMEDIATE_FILE = "intermediate_data.json"
METRIC_SCORE_FILE = "metric_score.txt"
CONFIG_FILE = "config.yaml"
# FlashRAG's recorded metric names → ours.
RECORDED_METRICS = {"em": "em", "acc": "cover_em", "f1": "f1", "precision": "precision", "recall": "recall"}


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
    save_note: str | None = None  # FlashRAG's save_note: config.yaml's, else the folder name's last part
    unread_metrics: list[str] = field(default_factory=list)  # metric_score.txt entries that are not one number

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
    # The passages the writer recorded as retrieved outside the trajectory (FlashRAG's `retrieval_result`), as the texts
    # a retrieval hit is judged on; None: it recorded none.
    retrieved: list[str] | None = None
    judgments: dict[str, Any] = field(default_factory=dict)  # a judge's verdicts: listed, never recomputed
    extra_keys: list[str] = field(default_factory=list)  # keys beside the writer's own, not read
    pred_note: str | None = None  # what explains a recorded prediction its trajectory does not give
    # the record keeps a trajectory, but no extraction rule of its writer applies to it (a pipeline with a run() of its
    # own, a shape the rule does not know): its prediction is scored as recorded and said to be unchecked, never ✓
    pred_unchecked: bool = False


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
            raise missing_intermediate_data(path)
        data_file = path / INTERMEDIATE_FILE
        source = ResultSource(path, "flashrag-run", _read_json_list(data_file))
        metric_file = path / METRIC_SCORE_FILE
        if metric_file.is_file():
            source.metric_file, source.averages = metric_file, read_metric_score(metric_file)
            names = (line.partition(":")[0].strip() for line in _read_text(metric_file).splitlines() if line.strip())
            source.unread_metrics = [name for name in names if name not in source.averages]
        if (path / CONFIG_FILE).is_file():
            source.config = _read_config(path / CONFIG_FILE)
        source.save_note = save_note_of(path, source.config)
        return source
    if path.suffix == ".jsonl":
        source = ResultSource(path, "jsonl", _read_jsonl(path))
    else:
        source = ResultSource(path, "json-list", _read_json_list(path))
    if not source.items:  # nothing to score or check: an empty run directory would read as a finished one
        raise DataError(f"{path}: holds no result records", hint="pass the file the evaluation wrote its results to")
    return source


def missing_intermediate_data(folder: Path) -> DataError:
    """One line: a folder read as a FlashRAG run lacks the file that holds its items, and what it does hold."""
    held = sorted(child.name for child in folder.iterdir())[:8] if folder.is_dir() else []
    holds = f"it holds {', '.join(held)}" if held else "it is empty"
    return DataError(
        f"{folder}: a FlashRAG run folder without {INTERMEDIATE_FILE} (the items Dataset.save writes); {holds}",
        hint=f"copy the run's {INTERMEDIATE_FILE} into the folder, or pass a result file (.json, .jsonl) itself",
    )


# FlashRAG `Config._prepare_dir`: `<dataset_name>_<%Y_%m_%d_%H_%M>_<save_note>`.
_RUN_FOLDER = re.compile(r"_\d{4}_\d{2}_\d{2}_\d{2}_\d{2}_(?P<note>.+)$")


def save_note_of(folder: Path, config: dict[str, Any]) -> str | None:
    """The save_note a FlashRAG run folder was written under (it names the method, `examples/methods/run_exp.py`)."""
    note = config.get("save_note")
    if isinstance(note, str) and note:
        return note
    match = _RUN_FOLDER.search(folder.name)
    return match["note"] if match else None


_LAYOUT_HINT = (
    "pass a JSON list of results, a .jsonl file, or a FlashRAG run "
    "folder (intermediate_data.json beside metric_score.txt)"
)


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
        raise DataError(
            f"{path}: unknown layout: a JSON {type(items).__name__}{keys}, not a list of results", hint=_LAYOUT_HINT
        )
    return [ResultItem(f"{path}: item {index}", item) for index, item in enumerate(items)]


def _read_jsonl(path: Path) -> list[ResultItem]:
    items = []
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(ResultItem(f"{path}:{number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise DataError(
                f"{path}:{number}: invalid JSON ({exc.msg})",
                hint="each line of a .jsonl result file is one result object",
            ) from None
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
                raise DataError(
                    f"{path}:{number}: expected 'metric: value', got {line[:60]!r}",
                    hint="FlashRAG writes lines like 'em: 0.35'",
                ) from None
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
    # `nq_2026_…` (FlashRAG), `nq.json`, `hotpotqa-<model>_temp0.0….jsonl` (R1-Searcher's eval script)
    matches = [name for low, name in names.items() if any(stem.startswith(low + sep) for sep in "_.-")]
    if not matches:
        raise EvalsuiteError(
            f"cannot infer the task of {path} from its name", hint="pass --task NAME (see `evalsuite tasks`)"
        )
    return max(matches, key=len)


def _prompt_of(prompt: Any, response: str | None) -> str | None:
    if response is None or not isinstance(prompt, str):
        return None
    return prompt[: len(prompt) - len(response)] if prompt.endswith(response) else prompt


@dataclass
class ExtractedItem:
    """One record's fields, read through its layout."""

    id: str
    question: str
    golds: list[str]
    prediction: str | None  # what the writer scored (None: parse it from the response)
    response: str | None  # the raw generation (None: the writer keeps none)
    prompt: str | None
    scores: dict[str, Any]
    stop_reason: str | None


def resolve_layout(source: ResultSource, pipeline: str | None = None, fields: str | None = None) -> ResultLayout:
    """The layout of a source: `--fields`, else `--pipeline`,
    else the FlashRAG save_note, else the keys of its records."""
    if fields:
        return parse_fields(fields)
    if pipeline:
        return get_layout(pipeline)
    if source.save_note and (named := layout_of_save_note(source.save_note)) is not None:
        return named
    if not source.items:
        return FAMILY_LAYOUTS["search-r1-results"]
    first = source.items[0]
    layout = detect_layout(first.data) if isinstance(first.data, dict) else None
    if layout is not None:
        return layout
    if not isinstance(first.data, dict):
        raise DataError(f"{first.where}: expected a result object, got {type(first.data).__name__}", hint=_LAYOUT_HINT)
    raise _unknown_layout(source, first)


def _unknown_layout(source: ResultSource, item: ResultItem) -> DataError:
    output = item.data.get("output")
    keys = sorted(output) if isinstance(output, dict) else sorted(item.data)
    where = "output keys" if isinstance(output, dict) else "keys"
    if source.layout == "flashrag-run":
        note = f" (save_note {source.save_note!r})" if source.save_note else ""
        nearest, lacking = nearest_layout(item.data)
        message = (
            f"{source.path}: unknown pipeline{note}: {item.where} has {where} "
            f"{', '.join(keys)}, which no known FlashRAG pipeline writes; nearest layout {nearest.name} "
            f"(lacks {', '.join(lacking)})"
        )
    else:
        nearest, lacking = nearest_layout(item.data)
        message = (
            f"{item.where}: unknown result layout ({where} {', '.join(keys[:12])}); nearest layout {nearest.name} "
            f"(looks for {nearest.looks_for()}; lacks {', '.join(lacking)})"
        )
    return DataError(
        message,
        hint=(
            f"pass --pipeline NAME ({', '.join(LAYOUTS)}) or --fields prediction=PATH,response=PATH,golds=PATH,id=PATH"
        ),
    )


def extract_item(item: ResultItem, layout: ResultLayout, position: int) -> ExtractedItem:
    """The fields of one record as its layout places them; one error line naming the record otherwise."""
    data, where, fields = item.data, item.where, layout.fields
    if not isinstance(data, dict):
        raise DataError(f"{where}: expected a result object, got {type(data).__name__}", hint=_LAYOUT_HINT)
    numbered = fields.id is None or fields.id.split("|")[-1] == "#"  # the position names a record without an id
    id_path = "|".join(p for p in (fields.id or "#").split("|") if p != "#")
    found = lookup(data, id_path) if id_path else MISSING
    if found is MISSING and not numbered:
        raise missing_field(data, id_path, "id", where, layout)
    example_id = str(position) if found is MISSING else str(found)
    where = where if found is MISSING else f"{where} (id {example_id!r})"
    question = require_path(data, fields.question, "question", where, layout) if fields.question else ""
    golds = golds_of(require_path(data, fields.golds, "golds", where, layout))
    if golds is None:
        raise DataError(
            f"{where}: '{fields.golds}' must be a list of strings (or one string)",
            hint="map the gold answers with --fields golds=PATH",
        )
    recorded_output = data.get("output")
    output: dict[str, Any] = recorded_output if isinstance(recorded_output, dict) else {}
    response = _response(data, output, str(question), layout)
    if not question and layout.question_pattern:
        # the writer keeps no question: read it where its prompt template put it (the prompt, else the response)
        texts = (lookup(data, fields.prompt) if fields.prompt else None, response)
        found = (re.search(layout.question_pattern, text) for text in texts if isinstance(text, str))
        question = next((match[1].strip() for match in found if match), question)
    prediction = lookup(data, fields.prediction) if fields.prediction else None
    if prediction is MISSING or (prediction is None and response is None and not layout.parse_prediction):
        raise missing_field(data, fields.prediction or fields.response or "output.pred", "prediction", where, layout)
    if layout.parse_prediction and response is None:
        raise missing_field(data, fields.response or "output.prompt", "response", where, layout)
    scores = lookup(data, fields.scores) if fields.scores else None
    scores = dict(scores) if isinstance(scores, dict) else {}
    part = data if layout.container is None else output
    scores.update({k: v for k, v in part.items() if any(re.fullmatch(p, k) for p in layout.recorded)})
    prompt = (
        lookup(data, fields.prompt) if fields.prompt else (output.get("prompt") if layout.response_in_prompt else None)
    )
    stop = output.get("stop_reason", output.get("finish_reason", data.get("stop_reason_final")))
    return ExtractedItem(
        example_id,
        str(question),
        golds,
        None if prediction is None else str(prediction),
        response,
        _prompt_of(prompt, response) if prompt is not MISSING else None,
        scores,
        None if stop is None else str(stop),
    )


def _response(data: dict[str, Any], output: dict[str, Any], question: str, layout: ResultLayout) -> str | None:
    if layout.read_response is not None:
        return layout.read_response(data)
    if layout.response_in_prompt:
        return response_of(output, question)
    if layout.fields.response is None:
        return None
    # `a|b`: the first of the fields present (AdaptivePipeline keeps raw_pred only for the items IRCoT answered).
    value = lookup(data, layout.fields.response)
    return value if isinstance(value, str) else None


def method_of(layout: ResultLayout, response: str | None) -> str | None:
    """The protocol a layout's response follows (None: the caller's --method or the task default)."""
    for marker, method in layout.method_markers:
        if response and marker in response:
            return method
    return layout.method


def records_from_source(
    source: ResultSource,
    task: str | None = None,
    parse: Callable[[str], ParsedTrajectory] = parse_trajectory,
    layout: ResultLayout | None = None,
    parser_of: Callable[[str], Callable[[str], ParsedTrajectory]] | None = None,
) -> tuple[str, list[ExampleRecord], list[RecordedScore]]:
    """Each result item as an ExampleRecord (unscored) plus what the source recorded. The prediction is what the
    writer scored (FlashRAG's `pred`); the response, where the writer keeps one, is parsed into turns with `parse`
    (a method's `Method.parse`; Search-R1's by default), or with `parser_of(method)` where the layout names one."""
    layout = layout or resolve_layout(source)
    task_name = resolve_task(task).name if task else infer_task(source.path, source.config)
    split = get_task(task_name).eval_split
    records: list[ExampleRecord] = []
    recorded: list[RecordedScore] = []
    seen: set[str] = set()
    for position, item in enumerate(source.items):
        fields = extract_item(item, layout, position)
        if fields.id in seen:
            raise DataError(
                f"{item.where}: duplicate id {fields.id!r}", hint="each question may appear once per result file"
            )
        seen.add(fields.id)
        method = method_of(layout, fields.response)
        parser = parser_of(method) if method and parser_of else parse
        parsed = (
            parser(fields.response)
            if layout.parse_turns and fields.response is not None
            else ParsedTrajectory(turns=[], answer=None)
        )
        if layout.passages and fields.response is not None:
            split_observations(parsed, fields.response, layout)
        prediction = parsed.answer if layout.parse_prediction else fields.prediction
        if layout.predict is not None:
            prediction = layout.predict(item.data)
        # The writer's own rule over the trajectory the record holds gives the answer scored; the recorded prediction
        # is checked against it (a prediction the trajectory does not give is listed, never scored silently).
        from_trajectory = layout.trajectory_answer(item.data) if layout.trajectory_answer else None
        if from_trajectory is not None:
            prediction = from_trajectory
        metadata: dict[str, Any] = {"layout": layout.name}
        if fields.prompt:
            metadata["prompt"] = fields.prompt
        if layout.parse_turns and not layout.parse_prediction and fields.response is not None:
            metadata["parsed_answer"] = parsed.answer  # what the turns say, beside the prediction the writer scored
        records.append(
            ExampleRecord(
                id=fields.id,
                task=task_name,
                split=split,
                question=fields.question,
                golden_answers=fields.golds,
                prediction=prediction,
                trajectory=fields.response or "",
                turns=parsed.turns,
                protocol_errors=parsed.errors,
                stop_reason=fields.stop_reason,
                metadata=metadata,
            )
        )
        # Where we parse the prediction ourselves, the writer's own `pred` is checked against it.
        recorded_pred = lookup(item.data, "output.pred") if layout.parse_prediction else None
        recorded_pred = None if recorded_pred is MISSING or recorded_pred is None else str(recorded_pred)
        if from_trajectory is not None:
            recorded_pred = fields.prediction
        empty = from_trajectory is not None and recorded_pred == "" and from_trajectory != ""
        # a layout that parses the prediction always has the response (extract_item refuses a record without one)
        parsed_from = fields.response if layout.parse_prediction else None
        part = layout.part_of(item.data) or {}
        recorded.append(
            RecordedScore(
                id=fields.id,
                pred=recorded_pred,
                metric_score=fields.scores,
                context=PredictionContext(response=parsed_from, prompt=fields.prompt, parsed=parsed)
                if parsed_from is not None
                else None,
                retrieved=_retrieval_result(item.data),
                pred_note=layout.empty_prediction if empty else None,
                judgments={key: value for key, value in part.items() if _is_added_judgment(key, layout)},
                extra_keys=extra_keys(item.data, layout) if layout.name != "fields" else [],
                pred_unchecked=layout.trajectory_answer is not None
                and from_trajectory is None
                and bool(fields.response)
                and fields.prediction is not None,
            )
        )
    return task_name, records, recorded


def retrieval_recorded(layout: ResultLayout, records: list[ExampleRecord], recorded: list[RecordedScore]) -> list[bool]:
    """Per item, whether the file records what it retrieved: its trajectory of searches (a layout whose response is
    parsed into turns), or retrieved passages kept beside it (FlashRAG's `retrieval_result`: where a file keeps them, an
    item without them retrieved nothing). Elsewhere a retrieval hit cannot be computed and is left out, never 0."""
    kept = any(original.retrieved is not None for original in recorded)
    return [kept or (layout.parse_turns and bool(record.trajectory)) for record in records]


def _is_added_judgment(key: str, layout: ResultLayout) -> bool:
    """A judge's verdict the record carries beside the writer's own keys (a pipeline's own `judge_result` is a step of
    the pipeline, not a verdict on the answer; a writer's declared judgment, AutoRefine's `llm_score`, is read as a
    recorded score and listed there)."""
    own = key in layout.required or key in layout.allowed or any(re.fullmatch(p, key) for p in layout.patterns)
    return is_judgment_key(key) and not own


def _retrieval_result(data: dict[str, Any]) -> list[str] | None:
    """FlashRAG's `output.retrieval_result` (the hits the pipeline retrieved, each with `contents`) as passage texts;
    None where the record holds none."""
    output = data.get("output")
    hits = output.get("retrieval_result") if isinstance(output, dict) else None
    if not isinstance(hits, list):
        return None
    # FlashRAG's own Retrieval_Recall reads each hit's `contents` ("Title"\ntext) whole, as a retrieval hit does here
    contents = (hit.get("contents") if isinstance(hit, dict) else hit for hit in hits)
    return [text for text in contents if isinstance(text, str)]


def split_observations(parsed: ParsedTrajectory, response: str, layout: ResultLayout) -> None:
    """The passages of each search turn as the writer laid out its observation blocks (the method's parser reads the
    layout our engine writes, which may differ): the i-th block (in the response's order) belongs to the i-th turn that
    searched."""
    blocks = []
    for open_tag, close_tag, split in layout.passages:
        pattern = re.compile(re.escape(open_tag) + r"(.*?)" + re.escape(close_tag), re.DOTALL)
        blocks += [(match.start(), split, match[1]) for match in pattern.finditer(response)]
    searched = [turn for turn in parsed.turns if turn.query is not None or turn.sub_queries]
    if len(blocks) != len(searched):
        return  # the blocks do not pair with the turns: keep what the method's parser found
    for turn, (_, split, content) in zip(searched, sorted(blocks, key=lambda block: block[0])):
        turn.passages = split(content)


TASK_DATA_DIFFERENCES = ("gold answers", "question")  # what check_against_task_data lists
REGISTRY_GOLD = "the file's gold answers differ from the task data's: the task data's are scored"
REGISTRY_QUESTION = "the id names another question in the task data: matched by its question text instead"


def check_against_task_data(
    source: ResultSource, records: list[ExampleRecord], task: str, data_dir: Path
) -> list[Difference]:
    """Every record must be a question of the task's data: its id with the same question, else its question text (a
    record without a question: its id alone). A record matching none refuses the file, in one line with the count and
    the first. A record whose gold answers differ from the matched row's is listed and scored against the row's
    golds; one whose id names another question is listed and matched by its text."""
    from evalsuite.tasks.loader import available_splits, load_split
    from evalsuite.tasks.rows import TaskRow, normalize_question

    splits = available_splits(data_dir, task)
    if not splits:
        raise DataError(
            f"{data_dir}: no data for task {task!r}",
            hint="pass --data-dir with the benchmark files, or --task with the file's benchmark",
        )
    by_id: dict[str, TaskRow] = {}
    by_question: dict[str, TaskRow] = {}
    for split in splits:
        for loaded in load_split(task, split, data_dir).rows:
            by_id.setdefault(loaded.id, loaded)
            by_question.setdefault(normalize_question(loaded.question), loaded)
    differences: list[Difference] = []
    unmatched: list[tuple[ResultItem, ExampleRecord]] = []
    for item, record in zip(source.items, records):
        row: TaskRow | None = by_id.get(record.id)
        if record.question:
            question = normalize_question(record.question)
            if row is not None and normalize_question(row.question) != question:
                listed = row.question
                row = by_question.get(question)
                if row is not None:
                    differences.append(
                        Difference(record.id, "question", repr(row.question), repr(listed), REGISTRY_QUESTION)
                    )
            elif row is None:
                row = by_question.get(question)
        if row is None:
            unmatched.append((item, record))
            continue
        if sorted(g.strip() for g in row.golden_answers) != sorted(g.strip() for g in record.golden_answers):
            differences.append(
                Difference(
                    record.id, "gold answers", repr(row.golden_answers), repr(record.golden_answers), REGISTRY_GOLD
                )
            )
            record.golden_answers = list(row.golden_answers)
    if unmatched:
        item, record = unmatched[0]
        raise DataError(
            f"{item.where} (id {record.id!r}): question not in task {task!r} "
            f"({', '.join(splits)} under {data_dir}): {record.question[:80]!r}; {len(unmatched)} of {len(records)} "
            "records match no question of the task data by id and question text, and the file is refused",
            hint="pass --task with the benchmark this file was run on, or --data-dir with the data it was run on",
        )
    return differences


def recorded_metric_name(key: str) -> str | None:
    """The FlashRAG metric a recorded per-item key means (`em`, `acc`, ..., or an alias: R1-Searcher's `cover_em_1`,
    AutoRefine's `answer_em`); None for a key that is none of them."""
    name = RECORDED_ALIASES.get(key, key)
    return name if name in RECORDED_METRICS else None


def compared_scores(record: ExampleRecord, original: RecordedScore) -> list[tuple[str, str, float]]:
    """The recorded per-item scores that meet one of ours: (recorded key, its FlashRAG name, value)."""
    pairs = []
    for key, raw in original.metric_score.items():
        name, value = recorded_metric_name(key), number(raw)
        if name is not None and value is not None and RECORDED_METRICS[name] in record.metrics:
            pairs.append((key, name, value))
    return pairs


def compare_with_recorded(
    records: list[ExampleRecord], recorded: list[RecordedScore], tolerance: float = 1e-9
) -> list[Difference]:
    """Every recorded prediction and per-item score we do not reproduce, each with the convention that explains it."""
    differences: list[Difference] = []
    for record, original in zip(records, recorded):
        ours = record.prediction if record.prediction is not None else ""
        if original.pred is not None and ours != original.pred:
            why = original.pred_note or (
                explain_prediction(original.pred, original.context) if original.context else None
            )
            differences.append(Difference(record.id, "prediction", repr(ours), repr(original.pred), why))
        for key, name, value in compared_scores(record, original):
            mine = RECORDED_METRICS[name]
            if abs(record.metrics[mine] - value) <= tolerance:
                continue
            why = explain_metric(name, value, ours, original.pred, record.golden_answers, tolerance)
            differences.append(Difference(record.id, mine, f"{record.metrics[mine]:.4f}", f"{key} {value:.4f}", why))
    return differences


def compare_averages(
    source: ResultSource, records: list[ExampleRecord], recorded: list[RecordedScore], tolerance: float = 1e-6
) -> list[Difference]:
    """metric_score.txt's averages against the mean of our scores, explained by the per-item scores the file holds."""
    if source.metric_file is None or not records:
        return []
    differences = []
    for theirs, value in source.averages.items():
        mine = RECORDED_METRICS.get(theirs)
        if mine is None or theirs not in METRIC_FUNCTIONS or not any(mine in r.metrics for r in records):
            continue  # not computed here is not a difference (nor a 0)
        ours = sum(r.metrics.get(mine, 0.0) for r in records) / len(records)
        if abs(ours - value) <= tolerance:
            continue
        item_values = [v for v in (number(o.metric_score.get(theirs)) for o in recorded) if v is not None]
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
        differences.append(
            Difference(source.metric_file.name, f"average {mine}", f"{ours:.6f}", f"{theirs} {value:.6f}", why)
        )
    return differences


def number(value: Any) -> float | None:
    """A recorded score as a float (bools count 0/1); None for anything that is not one number."""
    try:
        parsed = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(parsed) else parsed
