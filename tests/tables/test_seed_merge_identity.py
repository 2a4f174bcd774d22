"""`merge --as-seeds`: the order of the seed runs changes no number, and a run joins as a seed only on its record
(the same model identity, a seed of its own) or, for an imported file, on the merger's declaration, said so.

The attack (issue 37 / 38): two one-sample seed runs A and B of 100 questions whose answers never agree. Ties then
went to the answer seen first, so `merge --as-seeds A B` gave EM maj 0.10 and `B A` 0.30, and `table AB BA --metric
em_maj` reported +20 points with McNemar p = 0.002 on identical data.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from evalsuite.agent.merge import merge_seed_runs
from evalsuite.errors import EvalsuiteError
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest, RunDirectory

MODEL = {"spec": "search-r1-3b.gguf", "sha256": "5eed"}


def _run(path, seed, right: set[int], answer: str, model=MODEL, n=100):
    """A finished one-sample run of questions q000..: `answer`-i as every prediction, right (EM 1) on `right`."""
    run = RunDirectory(path)
    run.write_manifest(Manifest(tasks=["nq"], method="search-r1", model=model or {},
                                seeds={} if seed is None else {"seed": seed}, decoding={"temperature": 1.0},
                                finished_at="2026-01-01T00:00:00+00:00", **provenance_fields()))
    run.rewrite_predictions([
        ExampleRecord(id=f"q{i:03d}", task="nq", question="?", golden_answers=["gold"],
                      prediction="gold" if i in right else f"{answer}{i}", trajectory=f"{answer}:{i}",
                      metrics={"em": float(i in right)})
        for i in range(n)])
    return path


@pytest.fixture
def never_agree(tmp_path):
    """A right on q000..q009, B right on q010..q039; every other answer differs between them."""
    return (_run(tmp_path / "A", 1, set(range(10)), "a"), _run(tmp_path / "B", 2, set(range(10, 40)), "b"))


def test_the_order_of_seed_runs_changes_no_metric_and_no_table(never_agree, tmp_path, cli):
    a, b = never_agree
    for name, runs in (("AB", (a, b)), ("BA", (b, a))):
        result = cli("merge", "--as-seeds", *map(str, runs), "-o", str(tmp_path / name))
        assert result.exit_code == 0, result.output
    ab, ba = (json.loads((tmp_path / n / "metrics.json").read_text()) for n in ("AB", "BA"))
    # every question is a tie of two answers: maj@2 is their mean, (10 + 30) / 2 of 100
    assert ab["tasks"]["nq"]["metrics"]["em_maj"]["mean"] == pytest.approx(0.20)
    assert ab["tasks"] == ba["tasks"] and ab["extra"]["samples"] == ba["extra"]["samples"]
    out = cli("table", str(tmp_path / "AB"), str(tmp_path / "BA"), "--metric", "em_maj", "--format", "csv").output
    main, diffs = [list(csv.reader(io.StringIO(block))) for block in out.strip().split("\n\n")]
    assert [r[2] for r in main[1:]] == ["20.00", "20.00"]
    header, row = diffs[0], next(r for r in diffs[1:] if r[1] == "BA")
    delta = next(c for c in header if c.startswith("Δ") or c.startswith("diff"))
    assert float(row[header.index(delta)].split()[0]) == 0.0
    assert float(row[header.index("p")]) == pytest.approx(1.0)


def test_imported_files_join_only_as_declared_and_say_so(tmp_path, cli):
    a = _run(tmp_path / "imp-a", None, {1, 2}, "a", model=None)
    b = _run(tmp_path / "imp-b", None, {3}, "b", model=None)
    with pytest.raises(EvalsuiteError, match="records no model identity and no seed") as caught:
        merge_seed_runs([a, b], tmp_path / "out")
    assert "--declared-seeds" in caught.value.hint and not (tmp_path / "out").exists()
    result = cli("merge", "--as-seeds", "--declared-seeds", str(a), str(b), "-o", str(tmp_path / "declared"))
    assert result.exit_code == 0, result.output
    assert f"note: {a} records no model identity, no seed: merged as a seed on your declaration" in result.output
    manifest = json.loads((tmp_path / "declared" / "manifest.json").read_text())
    assert manifest["declared_seeds"] == {str(a): "no model identity, no seed", str(b): "no model identity, no seed"}


def test_refusals_name_the_run_and_write_nothing(tmp_path):
    a = _run(tmp_path / "a", 1, {1}, "a")
    imported = _run(tmp_path / "imp", None, {2}, "c", model=None)
    imported_again = _run(tmp_path / "imp2", None, {2}, "c", model=None)
    cases = [
        ([a, _run(tmp_path / "other", 2, {1}, "b", model={"spec": "other.gguf", "sha256": "0ther"})], "different settings"),
        ([a, _run(tmp_path / "unseeded", None, {1}, "b")], "records no seed"),
        ([a, _run(tmp_path / "nomodel", 3, {1}, "b", model=None)], "model: the run has '5eed', this command has None"),
        ([a, _run(tmp_path / "same-seed", 1, {4}, "d")], "seed 1 is in both"),
    ]
    for runs, message in cases:
        with pytest.raises(EvalsuiteError, match=message) as caught:
            merge_seed_runs(runs, tmp_path / "out")
        assert "\n" not in caught.value.message and not (tmp_path / "out").exists()
    # the same file imported twice, its second import's predictions edited: one file is not two seeds
    edited = _run(tmp_path / "edited", None, {5}, "e", model=None)
    for path in (imported, edited):
        manifest = RunDirectory(path).read_manifest()
        manifest.source = {"path": "results.json", "sha256": "f11e"}
        RunDirectory(path).write_manifest(manifest)
    for runs in ([imported, imported_again], [imported, edited]):
        with pytest.raises(EvalsuiteError, match="holds the same trajectories as .*two copies of one run"):
            merge_seed_runs(runs, tmp_path / "out", declared=True)
        assert not (tmp_path / "out").exists()
