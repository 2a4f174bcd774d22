"""Rescoring, as `evalsuite score` does it: a run directory rescored in place or into another, and a FlashRAG /
Search-R1 result file (or FlashRAG run folder) imported into a run directory, with what each recorded that the
rescoring reproduces or not. The command line only parses its options and prints what these return.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalsuite.errors import EvalsuiteError

if TYPE_CHECKING:
    from evalsuite.runs.flashrag import Difference
    from evalsuite.runs.recorded import CheckTally, MetricCheck


@dataclass
class ScoredInput:
    """One input rescored: the run directory it was written to and, for a result file, what it recorded."""

    name: str
    out_dir: Path
    # None for run directories: they carry no scores recorded by another pipeline to check against.
    differences: list[Difference] | None
    checked_averages: bool = False
    layout: str | None = None  # the writer whose layout was read (evalsuite.runs.writer_layouts)
    metric_checks: list[MetricCheck] = dataclasses.field(default_factory=list)
    tally: CheckTally | None = None  # None for run directories


def unique_name(path: Path, taken: set[str]) -> str:
    """The run directory name of an input: its file stem or folder name (a FlashRAG run folder's for its
    intermediate_data.json), numbered when `taken` already holds it; the name is added to `taken`."""
    if path.name == "intermediate_data.json":
        path = path.parent
    from evalsuite.files import untaken_name

    return untaken_name(path.stem if path.is_file() else path.name, taken)


def score_result_file(
    path: Path,
    out_dir: Path,
    task: str | None,
    method: str | None,
    data_dir: Path | None,
    metrics: list[str] | None = None,
    pipeline: str | None = None,
    fields: str | None = None,
) -> ScoredInput:
    """Score a result file or FlashRAG run folder into a run directory: its differences from what it recorded, whether
    it had averages (metric_score.txt) to check, and what became of each metric it recorded."""
    from evalsuite.agent.method import get_method
    from evalsuite.files import file_sha256
    from evalsuite.metrics.process import add_process_metrics
    from evalsuite.provenance import provenance_fields
    from evalsuite.runs import Manifest, RunDirectory
    from evalsuite.runs.flashrag import (
        check_against_task_data,
        compare_averages,
        compare_with_recorded,
        infer_task,
        read_result_source,
        records_from_source,
        resolve_layout,
        retrieval_recorded,
    )
    from evalsuite.runs.recorded import check_recorded_metrics, tally_checks
    from evalsuite.scoring import score_imported
    from evalsuite.tasks.loader import resolve_data_dir
    from evalsuite.tasks.registry import default_method, get_task, resolve_task
    from evalsuite.tasks.subset import ids_hash

    source = read_result_source(path)
    # The task's own default method applies when --method is not given.
    task_name = resolve_task(task).name if task else infer_task(source.path, source.config)
    method_given = method is not None
    method = method or default_method([get_task(task_name)], "search-r1")
    layout = resolve_layout(source, pipeline, fields)
    # A layout that names its protocol (R1-Searcher's eval script) is parsed with it unless --method says otherwise.
    parser_of = None if method_given else (lambda name: get_method(name).parse)
    task_name, records, recorded = records_from_source(source, task_name, get_method(method).parse, layout, parser_of)
    directory = resolve_data_dir(data_dir)
    # golds and questions checked against the task data before scoring: a differing gold is listed and replaced
    registry = check_against_task_data(source, records, task_name, directory) if directory is not None else []
    for record, original, retrieval in zip(records, recorded, retrieval_recorded(layout, records, recorded)):
        record.metrics = score_imported(record, original.retrieved, retrieval, metrics)
    add_process_metrics(records)
    run = RunDirectory(out_dir)
    data_file = source.data_file
    manifest = Manifest(
        kind="import",
        tasks=[task_name],
        splits={task_name: (records[0].split or "") if records else ""},
        subset=f"ids:{len(records)}",
        subset_ids_hash={task_name: ids_hash([r.id for r in records])},
        method=method,
        source={
            "format": f"flashrag-{source.layout}",
            "layout": layout.name,
            "writer": layout.writer,
            "path": str(path.resolve()),
            "sha256": file_sha256(data_file),
            "n": len(records),
        },
        notes=(
            "Imported from a FlashRAG/Search-R1 result file; the "
            "trajectories were generated elsewhere and rescored here."
        ),
        **provenance_fields(),
    )
    run.write(manifest, records)
    differences = registry + compare_with_recorded(records, recorded) + compare_averages(source, records, recorded)
    return ScoredInput(
        out_dir.name,
        out_dir,
        differences,
        source.metric_file is not None,
        layout.name,
        check_recorded_metrics(source, records, recorded, differences),
        tally_checks(source, records, recorded, differences),
    )


def rescore_run(path: Path, out_dir: Path, metrics: list[str] | None = None) -> None:
    """Rescore a run directory's records into `out_dir` (the run itself when it is that folder)."""
    from evalsuite.metrics.process import add_process_metrics
    from evalsuite.metrics.termination import RUN_METRICS
    from evalsuite.provenance import now_iso
    from evalsuite.runs import RunDirectory
    from evalsuite.scoring import score_record

    source = RunDirectory(path)
    manifest = source.read_manifest()
    records = source.read_predictions()
    run_metrics = RUN_METRICS if metrics is None and manifest.kind == "run" else ()
    for record in records:
        if record.status == "ok":
            record.metrics = score_record(record, metrics)
            if run_metrics:  # a run's records keep its termination and cost columns (before, rescoring dropped them)
                record.metrics.update(score_record(record, run_metrics))
    add_process_metrics(records)
    target = RunDirectory(out_dir)
    if target.path.resolve() != source.path.resolve():
        manifest = manifest.model_copy(update={"rescored_from": str(path.resolve()), "rescored_at": now_iso()})
    # the rescored records replace the old ones in place too (before, predictions.jsonl kept the old scores while
    # metrics.json and the cached columns had the new); a run that had not finished is still unfinished
    target.write(manifest, records, complete=manifest.finished_at is not None or manifest.kind == "import")


def refuse_output_inside_an_input(output: Path, inputs: list[Path]) -> None:
    """-o is the folder that receives one run directory per input: never an input itself, nor inside one (a run
    directory would be written into the run it was read from). Rescoring in place is `-o` the input's parent."""
    target = output.resolve()
    for path in inputs:
        source = path.resolve()
        if target == source or (path.is_dir() and target.is_relative_to(source)):
            raise EvalsuiteError(
                f"-o {output} is the input {path}"
                + ("" if target == source else " or inside it")
                + ": score writes one run directory per input under -o",
                hint=f"choose another -o folder (-o {path.parent} rescores the run in place)",
            )


def score_input(
    path: Path,
    out_dir: Path,
    task: str | None = None,
    method: str | None = None,
    data_dir: Path | None = None,
    metrics: list[str] | None = None,
    pipeline: str | None = None,
    fields: str | None = None,
) -> ScoredInput:
    """Rescore one input into `out_dir`, by what it is: a run directory, a FlashRAG run folder or a result file."""
    from evalsuite.runs.flashrag import CONFIG_FILE, METRIC_SCORE_FILE, is_flashrag_run, missing_intermediate_data
    from evalsuite.runs.schema import MANIFEST_FILE

    if path.is_dir() and (path / MANIFEST_FILE).is_file():
        rescore_run(path, out_dir, metrics)
        return ScoredInput(out_dir.name, out_dir, None)
    if is_flashrag_run(path) or (path.is_file() and path.suffix in (".json", ".jsonl")):
        return score_result_file(path, out_dir, task, method, data_dir, metrics, pipeline, fields)
    if path.is_dir() and any((path / name).is_file() for name in (METRIC_SCORE_FILE, CONFIG_FILE)):
        raise missing_intermediate_data(path)  # a FlashRAG run folder whose items are missing
    raise EvalsuiteError(
        f"{path}: unknown layout: not a run directory (manifest.json), a FlashRAG "
        "run folder (intermediate_data.json) or a result file (.json, .jsonl)",
        hint="pass run directories, result files or FlashRAG run folders",
    )


def chosen_metrics(names: str | None) -> list[str] | None:
    """`--metrics em,f1` as registered metric names (None: each task's own); naming none is refused."""
    if names is None:
        return None
    from evalsuite.metrics.registry import get_metric

    chosen = [get_metric(name.strip()).name for name in names.split(",") if name.strip()]
    if not chosen:
        raise EvalsuiteError("--metrics names no metric", hint="pass e.g. --metrics em,f1 (docs/metrics.md lists them)")
    return chosen
