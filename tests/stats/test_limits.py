"""docs/statistics.md "Limits": every bullet names something the code still lacks, shown here against the code.

Each bullet has a probe below that passes only while the lack is there; a bullet without a probe, or a probe
without a bullet, fails. When a lack is fixed its probe fails: remove the bullet (and the probe) then, so the section
never again promises a limit the code no longer has (it once said `--ci` printed a half-width, that nothing
corrected across systems and that continuous metrics used the bootstrap, long after each was fixed).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from evalsuite.errors import DataError
from evalsuite.metrics.registry import get_metric
from evalsuite.provenance import provenance_fields
from evalsuite.runs import ExampleRecord, Manifest
from evalsuite.runs.columns import ScoreColumns
from evalsuite.runs.sampled import sampled_task
from evalsuite.stats.intervals import mean_intervals
from evalsuite.tables.sources import RunData

DOC = Path(__file__).resolve().parents[2] / "docs" / "statistics.md"


def limits_bullets() -> list[str]:
    """The bullets of the "## Limits" section, each joined onto one line."""
    section = DOC.read_text(encoding="utf-8").split("\n## Limits\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n- ", "\n" + section.split("\n- ", 1)[1]) if "\n- " in section else []
    return [" ".join(b.split()) for b in bullets if b.strip()]


def _sampled(em: dict[str, list[float]]) -> list[ExampleRecord]:
    return [ExampleRecord(id=q, task="nq", question="?", golden_answers=["a"], prediction="a" if v else f"w{j}",
                          sample=j, sample_seed=j, metrics={"em": v}) for q, row in em.items() for j, v in enumerate(row)]


def _run_data(records: list[ExampleRecord]) -> RunData:
    return RunData("r", Path("r"), Manifest(tasks=["nq"], **provenance_fields()), ScoreColumns.from_records(records))


def training_set_not_recorded() -> None:
    fields = set(Manifest.model_fields)
    assert not {f for f in fields if "train" in f}, "the manifest records a training set now"


def counts_use_the_bootstrap() -> None:
    assert get_metric("n_searches").interval == "bootstrap"
    (interval,) = mean_intervals("n_searches", np.zeros(20), "nq")
    assert interval.low == interval.high == 0.0  # the percentile bootstrap's zero width on 20 equal scores
    (unknown,) = mean_intervals("novel_queries", np.zeros(20), "nq")
    assert unknown.low == unknown.high == 0.0


def short_questions_have_no_estimate() -> None:
    records = _sampled({"q0": [1.0, 0.0, 1.0], "q1": [0.0]})  # q1 cut off after one of three samples
    assert np.isnan(sampled_task("nq", records).metrics["em_pass@2"][1])
    with pytest.raises(DataError, match="example 'q1' .* has no metric 'em_pass@2'"):
        _run_data(records).scores("em_pass@2")


# A phrase of each bullet → its probe.
PROBES = {
    "a run manifest does not record the training set": training_set_not_recorded,
    "Count metrics (searches, turns, tokens) and metrics the registry does not know get the percentile bootstrap":
        counts_use_the_bootstrap,
    "A question with fewer samples than K (a run cut off) has no maj@K or pass@k": short_questions_have_no_estimate,
}


def test_every_limits_bullet_has_a_probe_and_every_probe_a_bullet():
    bullets = limits_bullets()
    assert bullets, "docs/statistics.md has no Limits bullets"
    for bullet in bullets:
        assert sum(phrase in bullet for phrase in PROBES) == 1, f"a Limits bullet without one probe: {bullet}"
    for phrase in PROBES:
        assert sum(phrase in bullet for bullet in bullets) == 1, f"a probe without a Limits bullet: {phrase}"


@pytest.mark.parametrize("phrase", list(PROBES))
def test_each_limit_is_still_there_in_the_code(phrase):
    PROBES[phrase]()
