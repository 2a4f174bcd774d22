"""`evalsuite adqa generate|check|info`: the open AD-QA-style benchmark (docs/adqa.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

adqa_app = typer.Typer(help="The open, generated AD-QA-style enterprise multi-hop benchmark.", no_args_is_help=True)


@adqa_app.command("generate")
def generate_command(
    out: Path = typer.Option(
        ..., "-o", "--output", help="Directory to write test/train/corpus .jsonl.gz and MANIFEST.json."
    ),
    seed: int = typer.Option(2024, "--seed", help="Generator seed (the shipped v1 uses 2024)."),
    n_test: int = typer.Option(1000, "--n-test", help="Test questions."),
    n_train: int = typer.Option(3000, "--n-train", help="Training questions."),
) -> None:
    """Generate a release: knowledge base, corpus and questions, byte-reproducible for a given seed."""
    from evalsuite.errors import EvalsuiteError
    from evalsuite.tasks.adqa.dataset import generate_release, write_release

    if n_test < 1 or n_train < 0:
        raise EvalsuiteError(
            f"invalid sizes --n-test {n_test} --n-train {n_train}", hint="use --n-test >= 1 and --n-train >= 0"
        )
    manifest = write_release(generate_release(seed, n_test, n_train), out)
    for name, entry in manifest["files"].items():
        typer.echo(f"{out / name}: {entry['rows']} rows, {entry['bytes']} bytes, sha256 {entry['sha256']}")
    typer.echo(f"{out / 'MANIFEST.json'}")


def _searcher_for(directory: Path | None):
    """(questions dir, corpus rows, searcher) for a release directory, or for the shipped copy when None."""
    from evalsuite.tasks.adqa.check import find_file, read_jsonl
    from evalsuite.tasks.adqa.index import cached_bm25
    from evalsuite.tasks.adqa.shipped import adqa_index, shipped_corpus_path, shipped_dir

    if directory is None:
        corpus, _ = read_jsonl(shipped_corpus_path())
        return shipped_dir(), corpus, adqa_index()
    corpus, digest = read_jsonl(find_file(directory, "corpus"))
    return directory, corpus, cached_bm25(corpus, digest, name="adqa-local")


@adqa_app.command("check")
def check_command(
    directory: Optional[Path] = typer.Argument(
        None, help="Release directory (default: the copy shipped in the package)."
    ),
    split: str = typer.Option("test", "--split", help="Which question file to check."),
    k: int = typer.Option(3, "--topk", "-k", help="BM25 passages per question."),
    show_errors: int = typer.Option(10, "--show-errors", help="How many structural problems to print."),
) -> None:
    """Print BM25 top-k recall of all supporting passages (raw
    question vs gold sub-questions) and single-passage answerability."""
    from evalsuite.tasks.adqa.check import RAW_MAX, SINGLE_MAX, SUB_MIN, check_release, find_file, read_jsonl

    where, corpus, searcher = _searcher_for(directory)
    questions, _ = read_jsonl(find_file(where, split))
    report = check_release(questions, corpus, searcher, split=split, k=k)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "OUT OF BOUNDS"

    typer.echo(
        f"AD-QA check: {where} split={split} questions={report.questions} corpus={len(corpus)} passages, BM25 top-{k}"
    )
    typer.echo(
        f"  raw question, all supporting passages in top-{k}:     {report.raw_all:.3f}  "
        f"(bound < {RAW_MAX})  {verdict(report.raw_all < RAW_MAX)}"
    )
    typer.echo(f"  raw question, any supporting passage in top-{k}:      {report.raw_any:.3f}  (for reference)")
    typer.echo(
        f"  gold sub-questions one by one, all hops in top-{k}:    "
        f"{report.sub_all:.3f}  (bound > {SUB_MIN})  {verdict(report.sub_all > SUB_MIN)}"
    )
    typer.echo(f"  gold sub-questions, per sub-question:                {report.sub_hop:.3f}")
    typer.echo(
        f"  answerable from a single passage:                    {report.single_passage:.3f}  "
        f"(bound = {SINGLE_MAX:g})  {verdict(report.single_passage <= SINGLE_MAX)}"
    )
    typer.echo(f"  decomposition/supporting-passage problems:           {len(report.structural_errors)}")
    for problem in report.structural_errors[:show_errors]:
        typer.echo(f"    {problem}")
    typer.echo("  by template (n, raw_all, raw_any, sub_all, single_passage):")
    for template, values in report.by_template.items():
        typer.echo(
            f"    {template:<13} {int(values['n']):>5}  {values['raw_all']:.3f}  "
            f"{values['raw_any']:.3f}  {values['sub_all']:.3f}  {values['single_passage']:.3f}"
        )
    typer.echo("PASS" if report.passed else "FAIL")
    if not report.passed:
        raise typer.Exit(1)


@adqa_app.command("info")
def info_command() -> None:
    """Counts and statistics of the shipped release (from its manifest)."""
    import json

    from evalsuite.tasks.adqa.shipped import shipped_dir, shipped_manifest

    manifest = shipped_manifest()
    typer.echo(f"{manifest['name']} {manifest['version']} (seed {manifest['seed']}) in {shipped_dir()}")
    for name, entry in manifest["files"].items():
        typer.echo(f"  {name}: {entry['rows']} rows, sha256 {entry['sha256']}")
    typer.echo(json.dumps(manifest["statistics"], indent=2))


def register(app: typer.Typer) -> None:
    app.add_typer(adqa_app, name="adqa")
