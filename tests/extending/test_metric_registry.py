"""The metric registry's contract: declarations get their statistics from their kind, names are unique and
suggested when mistyped, scratch registries leave nothing behind, and the scorer follows the task's choices."""

from __future__ import annotations

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics import registry
from evalsuite.metrics.registry import MetricSpec, default_metrics, get_metric, list_metrics, register_metric, scratch_registry
from evalsuite.runs.schema import LEGACY_METRICS, ExampleRecord, Turn
from evalsuite.scoring import score_record
from evalsuite.tasks import registry as tasks
from evalsuite.tasks.registry import Task, register_task


def test_statistics_follow_the_kind_unless_declared():
    binary, continuous, count = (MetricSpec(n, n, k, lambda x: 0.0) for n, k in
                                 (("b", "binary"), ("c", "continuous"), ("k", "count")))
    assert (binary.interval, binary.test, binary.percent) == ("wilson", "mcnemar", True)
    assert (continuous.interval, continuous.test, continuous.percent) == ("bootstrap", "randomization", True)
    assert (count.interval, count.test, count.percent) == ("bootstrap", "randomization", False)
    assert MetricSpec("b", "b", "binary", lambda x: 0.0, test="bootstrap").test == "bootstrap"


def test_the_standard_metrics_are_what_runs_were_always_scored_with():
    # every default metric; the termination and cost metrics (not default) are scored on run records only
    assert list(default_metrics()) == list(LEGACY_METRICS)
    assert [m.name for m in list_metrics()][: len(LEGACY_METRICS)] == list(LEGACY_METRICS)
    assert get_metric("f1").kind == "continuous" and get_metric("em").kind == "binary" and get_metric("n_searches").kind == "count"


def test_names_are_unique_and_mistyped_ones_are_suggested():
    with pytest.raises(ValueError, match="already registered"):
        register_metric(MetricSpec("em", "EM", "continuous", lambda x: 0.0))
    with pytest.raises(EvalsuiteError) as err:
        get_metric("cover-em")
    assert "cover_em" in err.value.hint


def test_a_scratch_registry_forgets_what_it_registered():
    with scratch_registry():
        register_metric(MetricSpec("tmp", "tmp", "binary", lambda x: 1.0))
        registry.register_normalizer("upper", str.upper)
        assert get_metric("tmp").name == "tmp"
    assert not registry.is_registered("tmp")
    with pytest.raises(EvalsuiteError):
        registry.get_normalizer("upper")


def test_the_scorer_uses_the_tasks_metrics_and_normalization():
    record = ExampleRecord(id="1", task="casey", question="q?", golden_answers=["The Beatles"], prediction="the beatles",
                           turns=[Turn(text="", query="beatles"), Turn(text="", sub_queries=["a", "b"])])
    with scratch_registry(), tasks.scratch_registry():
        register_metric(MetricSpec("answer_chars", "chars", "count", lambda x: float(len(x.answer)), default=False))
        register_task(Task("casey", "Casey", "general", "test", hub_path=None, metrics=("em", "n_searches", "answer_chars"),
                           replaces_default_metrics=True, normalization="whitespace"))
        # white space only: case and the article count, so this is not an exact match (it is under SQuAD's rule)
        assert score_record(record) == {"em": 0.0, "n_searches": 3.0, "answer_chars": 11.0}
        assert score_record(record.model_copy(update={"task": "nq"}))["em"] == 1.0
        assert "answer_chars" not in score_record(record.model_copy(update={"task": "nq"}))


def test_a_tasks_own_metric_is_added_to_the_defaults_unless_it_says_it_replaces_them():
    """The defect of #31: naming one metric of its own silently dropped precision, recall and the other defaults."""
    with scratch_registry(), tasks.scratch_registry():
        register_metric(MetricSpec("answer_chars", "chars", "count", lambda x: float(len(x.answer)), default=False))
        added = register_task(Task("adds", "Adds", "general", "test", hub_path=None, metrics=("answer_chars",)))
        replaced = register_task(Task("replaces", "Replaces", "general", "test", hub_path=None, metrics=("em", "answer_chars"),
                                      replaces_default_metrics=True))
        assert added.scored_metrics() == (*default_metrics(), "answer_chars")
        assert {"precision", "recall"} <= set(added.scored_metrics())
        assert replaced.scored_metrics() == ("em", "answer_chars")
        with pytest.raises(ValueError, match="replaces the default metrics with none"):
            Task("none", "None", "general", "test", replaces_default_metrics=True)
