"""`evalsuite table RUN_DIR...`: layouts filled from run directories, with paired tests against a baseline."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as scipy_stats

from evalsuite.errors import EvalsuiteError
from evalsuite.stats import paired_bootstrap
from evalsuite.tables.layouts import format_p
from tests.conftest import import_extra

# statsmodels: the reference these tests compare with; without it the whole file is skipped, naming the extra
mcnemar = import_extra("stats", "statsmodels.stats.contingency_tables").mcnemar

BASE = "bamboogle_2026_04_24_16_17_search_r1_base"


def _csv_tables(text: str) -> list[list[list[str]]]:
    return [list(csv.reader(io.StringIO(block))) for block in text.strip().split("\n\n")]


def _mcnemar_statsmodels(a: dict[str, float], b: dict[str, float]) -> float:
    ids = sorted(a)
    x, y = np.array([a[i] for i in ids]), np.array([b[i] for i in ids])
    table = [[np.sum((x == 1) & (y == 1)), np.sum((x == 1) & (y == 0))], [np.sum((x == 0) & (y == 1)), np.sum((x == 0) & (y == 0))]]
    return float(mcnemar(table, exact=True).pvalue)


def test_base_vs_instruct_em_with_mcnemar_and_bootstrap_ci(bamboogle_runs, recorded, cli, tmp_path):
    stats_path = tmp_path / "stats.json"
    result = cli("table", *map(str, bamboogle_runs.values()), "--baseline", BASE, "--format", "csv", "--stats-json", str(stats_path))
    main, diffs = _csv_tables(result.output)
    assert [row[1] for row in main[1:]] == list(bamboogle_runs)
    stats = json.loads(stats_path.read_text())["em"]
    assert (stats["n_resamples"], stats["seed"], stats["baseline"]) == (10_000, 12345, BASE)
    base_em = recorded(BASE)["em"]
    by_system = {row[1].removesuffix(" (baseline)"): row for row in diffs[1:] if row[1]}
    for stem in bamboogle_runs:
        em = recorded(stem)["em"]
        row = by_system[stem]
        assert row[3] == f"{100 * sum(em.values()) / 125:.2f}"  # the mean EM of the file, FlashRAG's own scores
        if stem == BASE:
            continue
        d = stats["differences"][f"{stem}/bamboogle"]
        p_ref = _mcnemar_statsmodels(em, base_em)
        assert d["test"] == "mcnemar-exact" and d["p_value"] == pytest.approx(p_ref, rel=1e-12)
        assert (row[6], row[7]) == ("McNemar (exact)", format_p(p_ref))
        ids = list(base_em)  # the baseline's example order, which the resample indices refer to
        x, y = np.array([em[i] for i in ids]), np.array([base_em[i] for i in ids])
        reference = scipy_stats.bootstrap((x, y), lambda a, b, axis: a.mean(axis) - b.mean(axis), paired=True, vectorized=True,
                                          method="percentile", n_resamples=10_000, random_state=0).confidence_interval
        # different random draws: the bounds agree to one example (0.8 points of 125)
        assert d["ci_low"] == pytest.approx(reference.low, abs=1 / 125 + 1e-9)
        assert d["ci_high"] == pytest.approx(reference.high, abs=1 / 125 + 1e-9)
        ours = paired_bootstrap(x, y, n_resamples=10_000, seed=12345, key="bamboogle")
        assert row[5] == f"[{100 * ours.ci_low:.2f}, {100 * ours.ci_high:.2f}]"
        assert d["difference"] == pytest.approx(x.mean() - y.mean())
    # instruct seed-1 (43/125) beats base (3/125) by far; the instruct run of 4/125 does not
    assert by_system["bamboogle_2026_04_29_06_48_search_r1_instruct_seed1"][4] == "+32.00"
    assert stats["differences"]["bamboogle_2026_04_29_06_48_search_r1_instruct_seed1/bamboogle"]["significant"]
    assert not stats["differences"]["bamboogle_2026_04_24_17_37_search_r1_instruct/bamboogle"]["significant"]


def test_markdown_marks_significant_rows_and_carries_provenance(bamboogle_runs, cli):
    text = cli("table", *map(str, bamboogle_runs.values()), "--baseline", BASE, "--format", "markdown", "--ci").output
    # Wilson's bounds as statsmodels' proportion_confint(k, 125, method="wilson") gives them, never "± half-width"
    assert "| bamboogle_2026_04_29_06_48_search_r1_instruct_seed1 |  **34.40**▲ [26.65, 43.08] |" in text
    assert "| bamboogle_2026_04_24_17_37_search_r1_instruct       |          3.20 [1.25, 7.94] |" in text
    assert f"Settings of {BASE}: corpus not recorded, retriever not recorded, top-k not recorded, max turns not recorded, subset ids:125." in text
    assert f"(imported from {BASE}.json)" in text


def test_rows_with_different_settings_are_marked(bamboogle_runs, cli, tmp_path):
    other = tmp_path / "topk5"
    shutil.copytree(bamboogle_runs["bamboogle_2026_04_24_17_37_search_r1_instruct"], other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["topk"] = 5
    (other / "manifest.json").write_text(json.dumps(manifest))
    text = cli("table", str(bamboogle_runs[BASE]), str(other), "--format", "markdown", "--no-differences").output
    assert "| topk5§ " in text
    assert "§ topk5 differs: top-k 5." in text


def test_runs_over_different_examples_are_an_error_listing_ids(bamboogle_runs, cli, tmp_path):
    short = tmp_path / "short"
    shutil.copytree(bamboogle_runs[BASE], short)
    lines = (short / "predictions.jsonl").read_text().splitlines()
    (short / "predictions.jsonl").write_text("\n".join(lines[:-2]) + "\n")
    dropped = [json.loads(line)["id"] for line in lines[-2:]]
    with pytest.raises(EvalsuiteError, match=rf"bamboogle: cannot pair 'short' with '{BASE}' by example id; 2 id\(s\) .* {dropped[0]}"):
        cli("table", str(bamboogle_runs[BASE]), str(short))


def test_cli_errors_exit_2_with_a_message(bamboogle_runs):
    proc = subprocess.run([sys.executable, "-m", "evalsuite", "table", str(bamboogle_runs[BASE]), "--baseline", "search-r2"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "baseline 'search-r2' is not one of the runs" in proc.stderr


def _two_systems(make_run, tmp_path):
    # base gets 2/4, 1/4, 3/4, 0/4, 4/4, 2/4 right on NQ, TriviaQA, PopQA, HotpotQA, 2Wiki, MuSiQue; new gets one more on each
    tasks = ["nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique"]
    base_right = [2, 1, 3, 0, 4, 2]
    def scores(extra):
        return {t: {f"{t}-{i}": {"em": float(i < min(4, k + extra)), "f1": 0.5} for i in range(4)} for t, k in zip(tasks, base_right)}
    return make_run(tmp_path / "base", scores(0)), make_run(tmp_path / "new", scores(1))


def test_progress_table1_layout_averages(make_run, cli, tmp_path):
    base, new = _two_systems(make_run, tmp_path)
    result = cli("table", str(base), str(new), "--layout", "progress-table1", "--format", "csv", "--no-differences", "--resamples", "200")
    (table,) = _csv_tables(result.output)
    assert table[0][2:] == ["General QA NQ†", "General QA TriviaQA⋆", "General QA PopQA⋆", "Multi-hop QA HotpotQA†",
                            "Multi-hop QA 2Wiki⋆", "Multi-hop QA MuSiQue⋆", "Multi-hop QA Average", "Combined QA Average"]
    # base: 50, 25, 75, 0, 100, 50 → multi-hop (0+100+50)/3 = 50.00, combined 300/6 = 50.00
    assert table[1][1:] == ["base", "50.00", "25.00", "75.00", "0.00", "100.00", "50.00", "50.00", "50.00"]
    # new: 75, 50, 100, 25, 100, 75 → multi-hop 200/3 = 66.67, combined 425/6 = 70.83
    assert table[2][1:] == ["new", "75.00", "50.00", "100.00", "25.00", "100.00", "75.00", "66.67", "70.83"]


def _md_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_compact_layout_and_its_average(make_run, cli, tmp_path):
    base, new = _two_systems(make_run, tmp_path)
    text = cli("table", str(base), str(new), "--format", "markdown", "--resamples", "200").output
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("| Method"))
    assert _md_cells(header) == ["Method", "NQ", "TriviaQA", "PopQA", "HotpotQA", "2Wiki", "MuSiQue", "Avg."]
    new_row = next(line for line in lines if line.startswith("| new "))
    # 2Wiki ties at 100 (both bold); the average 425/6 = 70.83
    assert _md_cells(new_row) == ["new", "**75.00**", "**50.00**", "**100.00**", "**25.00**", "**100.00**", "**75.00**", "**70.83**▲"]
    # at most one discordant pair per benchmark: McNemar p = 1 on all six, but six gains of six move the stratified average
    assert len(re.findall(r"McNemar \(exact\) \| +1\.000 \| +1\.000 \|", text)) == 6
    assert "| **Average (NQ, TriviaQA, PopQA, HotpotQA, 2Wiki, MuSiQue)** |" in text


def test_oases_layout_reports_f1_and_em(make_run, cli, tmp_path):
    base, new = _two_systems(make_run, tmp_path)
    (table, _) = _csv_tables(cli("table", str(base), str(new), "--layout", "oases-table1", "--format", "csv", "--resamples", "200").output)
    assert table[0][2:4] == ["NQ F1", "NQ EM"]
    assert table[2][2:4] == ["50.00", "75.00"]
    assert table[2][6:8] == ["50.00", "100.00"]  # 2Wiki: F1 0.5 everywhere, EM 4/4
    assert table[2][8:10] == ["–", "–"]  # no Bamboogle scores, hence no average either
    assert table[2][12:14] == ["–", "–"]


def test_count_metrics_get_no_best_marks(bamboogle_runs, cli):
    text = cli("table", *map(str, bamboogle_runs.values()), "--metric", "n_searches", "--format", "markdown",
               "--no-differences", "--resamples", "300", "--permutations", "300").output
    assert "**" not in text.split("\n\n")[1] and "<u>" not in text
    assert "Scores ×100" not in text


def test_baseline_by_manifest_method_and_unknown_layout(make_run, cli, tmp_path):
    scores = {"nq": {"a": {"em": 1.0}, "b": {"em": 0.0}}}
    first = make_run(tmp_path / "run-a", scores, method="progress")
    second = make_run(tmp_path / "run-b", scores, method="search-r1")
    text = cli("table", str(first), str(second), "--baseline", "search-r1", "--format", "markdown", "--resamples", "200").output
    assert "Paired differences from run-b (em)" in text
    with pytest.raises(EvalsuiteError, match="unknown layout 'progress-table9'"):
        cli("table", str(first), "--layout", "progress-table9")
