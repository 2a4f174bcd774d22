"""A multi-seed leaderboard entry: two real Search-R1 base runs of Bamboogle merged as seeds, packed and verified.

Verification recomputes every seed's scores from its own trajectory, then the metrics over seeds (avg@2, pass@2,
maj@2) from those, and holds the claimed metrics.json to them.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from leaderboard_support import cli, info

from evalsuite.leaderboard import pack_submission
from evalsuite.leaderboard.submission import write_checksums
from evalsuite.leaderboard.verify import verify_submission

BASE_RUNS = ("bamboogle_2026_04_24_16_17_search_r1_base", "bamboogle_2026_04_28_16_36_search_r1_base_seed1")


@pytest.fixture(scope="module")
def multi_seed(tmp_path_factory, trajectories_dir: Path) -> tuple[Path, Path]:
    """(the merged run directory, its packed submission)."""
    out = tmp_path_factory.mktemp("seeds")
    assert cli("score", *(trajectories_dir / f"{stem}.json" for stem in BASE_RUNS), "-o", out / "scored").exit_code == 0
    result = cli("merge", "--as-seeds", "--declared-seeds", *(out / "scored" / stem for stem in BASE_RUNS), "-o", out / "merged")
    assert result.exit_code == 0, result.output
    return out / "merged", pack_submission([out / "merged"], out / "submission", info("Search-R1 base, 2 seeds"))


def _tampered(source: Path, tmp_path: Path, edit) -> Path:
    """A copy of the submission with its run's records or metrics edited by `edit`, checksums rewritten (so only
    the recomputation can catch it)."""
    target = tmp_path / "sub"
    shutil.copytree(source, target)
    run = next((target / "runs").iterdir())
    edit(run)
    (target / "checksums.sha256").unlink()
    write_checksums(target)
    return target


def _edit_records(change):
    def edit(run: Path) -> None:
        path = run / "predictions.jsonl.gz"
        lines = [json.loads(line) for line in gzip.decompress(path.read_bytes()).decode().splitlines()]
        path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in change(lines)).encode()))
    return edit


def test_a_multi_seed_entry_verifies_from_each_seeds_predictions(multi_seed, benchmarks_dir):
    merged, submission = multi_seed
    report = verify_submission(submission, benchmarks_dir)
    assert report.accepted, report.problem_lines()
    verified = report.tasks["bamboogle"]
    assert verified.summary.n == 125 and len(verified.records) == 250
    claimed = json.loads((merged / "metrics.json").read_text())["tasks"]["bamboogle"]["metrics"]
    for name in ("em_avg", "em_pass@2", "em_maj", "f1_avg"):
        assert verified.summary.metrics[name].mean == pytest.approx(claimed[name]["mean"])
    assert [(r.id, r.sample) for r in verified.records[:4]] == [("test_0", 0), ("test_0", 1), ("test_1", 0), ("test_1", 1)]


def test_a_seeds_edited_score_or_summary_or_a_dropped_sample_is_refused(multi_seed, benchmarks_dir, tmp_path):
    _, submission = multi_seed

    def flip_em(lines):
        record = next(r for r in lines if r["sample"] == 1 and r["metrics"]["em"] == 0.0)
        record["metrics"]["em"] = 1.0
        return lines

    def raise_em_avg(run: Path) -> None:
        metrics = json.loads((run / "metrics.json").read_text())
        metrics["tasks"]["bamboogle"]["metrics"]["em_avg"]["mean"] += 0.01
        (run / "metrics.json").write_text(json.dumps(metrics))

    cases = [
        (_edit_records(flip_em), "score", "claimed em 1 but recomputed 0"),
        (raise_em_avg, "score", "bamboogle: claimed em_avg"),
        (_edit_records(lambda lines: [r for r in lines if not (r["id"] == "test_7" and r["sample"] == 1)]),
         "missing-sample", "1 questions lack some of the run's 2 samples: test_7"),
        (_edit_records(lambda lines: lines + [lines[0]]), "duplicate-id", "id 'test_0' sample 0 appears again"),
    ]
    for i, (edit, check, message) in enumerate(cases):
        report = verify_submission(_tampered(submission, tmp_path / str(i), edit), benchmarks_dir)
        assert not report.accepted
        assert any(p.check == check and message in p.message for p in report.problems), report.problem_lines()
