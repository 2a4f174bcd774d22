"""`evalsuite table --mid-p`: the mid-p versions of the paired tests on the real Bamboogle runs."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from evalsuite.stats.significance import mcnemar_pvalues

BASE, INSTRUCT = "bamboogle_2026_04_28_16_36_search_r1_base_seed1", "bamboogle_2026_04_29_06_48_search_r1_instruct_seed1"


def test_mid_p_mcnemar_on_em(bamboogle_runs, recorded, cli):
    out = cli("table", str(bamboogle_runs[BASE]), str(bamboogle_runs[INSTRUCT]), "--metric", "em", "--mid-p",
              "--format", "csv").output
    diffs = list(csv.reader(io.StringIO(out.strip().split("\n\n")[1])))
    header, row = diffs[0], diffs[-1]
    assert row[header.index("test")] == "McNemar (mid-p)"
    base, instruct = recorded(BASE)["em"], recorded(INSTRUCT)["em"]
    only_instruct = sum(instruct[q] > base[q] for q in base)
    only_base = sum(base[q] > instruct[q] for q in base)
    expected = mcnemar_pvalues(np.array([only_instruct]), np.array([only_base]), mid_p=True)[0]
    assert float(row[header.index("p")]) == pytest.approx(expected, rel=0.01)
    assert expected < mcnemar_pvalues(np.array([only_instruct]), np.array([only_base]))[0]


def test_mid_p_randomization_on_f1(bamboogle_runs, cli):
    out = cli("table", str(bamboogle_runs[BASE]), str(bamboogle_runs[INSTRUCT]), "--metric", "f1", "--mid-p",
              "--format", "markdown").output
    assert "randomization (mid-p)" in out and "10000 permutations" in out
