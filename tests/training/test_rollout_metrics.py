"""Training logs its rollouts' per-example numbers through the metric registry: a training step's n_turns and
n_searches are what `evalsuite run` and `score` record for the same turns (before #31 the rollout counted a turn
with three sub-queries as one search, the scorer as three)."""

from __future__ import annotations

from evalsuite.agent.engine import Rollout
from evalsuite.metrics.registry import MetricSpec, register_metric, scratch_registry
from evalsuite.runs.schema import ExampleRecord, Turn
from evalsuite.scoring import score_record
from evalsuite.training import rollout as training_rollout
from evalsuite.training.rollout import ROLLOUT_METRICS, rollout_metrics

TURNS = [Turn(text="", query="who"), Turn(text="", sub_queries=["a", "b", "c"]), Turn(text="<answer> x </answer>")]


def test_the_rollout_counts_as_the_scorer_does():
    logged = rollout_metrics(Rollout(key="r0", question="q?", prompt="", turns=TURNS))
    record = ExampleRecord(id="1", task="nq", question="q?", golden_answers=["x"], prediction="x", turns=TURNS)
    scored = score_record(record)
    assert logged == {name: scored[name] for name in ROLLOUT_METRICS} == {"n_turns": 3.0, "n_searches": 4.0}


def test_a_registered_metric_is_logged_by_naming_it(monkeypatch):
    with scratch_registry():
        register_metric(MetricSpec("n_sub_queries", "sub-queries", "count", lambda x: float(sum(len(t.sub_queries) for t in x.turns)),
                                   average="none", default=False))
        monkeypatch.setattr(training_rollout, "ROLLOUT_METRICS", (*ROLLOUT_METRICS, "n_sub_queries"))
        assert training_rollout.rollout_metrics(Rollout(key="r0", question="q?", prompt="", turns=TURNS))["n_sub_queries"] == 3.0
