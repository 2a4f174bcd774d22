"""Tasks are data: a benchmark is a YAML declaration (its data source, splits, default method, and metrics *added
to* or *replacing* the defaults, said explicitly), and every task list elsewhere comes from the registry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalsuite.errors import DataError
from evalsuite.leaderboard.standings import columns, task_columns
from evalsuite.lmeval_export import fallback_metrics
from evalsuite.metrics.registry import MetricSpec, default_metrics, get_metric, register_metric, scratch_registry
from evalsuite.tasks import registry as tasks
from evalsuite.tasks.registry import get_task, parse_task_list, task_names, tasks_from_yaml

REPO = Path(__file__).resolve().parents[2]

TOY = """
name: toyqa
display_name: ToyQA
category: multi-hop
data: {hub: someone/toy-datasets, config: toy}
splits: {eval: dev, extra: [train]}
method: direct
metrics: {add: [year_match]}
normalization: whitespace
"""


def test_a_declaration_becomes_a_task():
    (task,) = tasks_from_yaml(TOY, "toy.yaml")
    assert (task.name, task.display_name, task.category, task.eval_split, task.extra_splits) == ("toyqa", "ToyQA", "multi-hop", "dev", ("train",))
    assert (task.hub_path, task.hub_config, task.packaged_data, task.method, task.normalization) == ("someone/toy-datasets", "toy", None, "direct", "whitespace")
    assert task.metrics == ("year_match",) and not task.replaces_default_metrics
    (replacing,) = tasks_from_yaml(TOY.replace("add: [year_match]", "replace: [em, year_match]"), "toy.yaml")
    assert replacing.replaces_default_metrics and replacing.scored_metrics() == ("em", "year_match")


@pytest.mark.parametrize(("change", "message"), [
    (("metrics: {add: [year_match]}", "metrics: [year_match]"), "metrics is a bare list: say whether it adds to the default metrics"),
    (("metrics: {add: [year_match]}", "metrics: {add: [a], replace: [b]}"), "metrics needs exactly one of add"),
    (("category: multi-hop", "category: hard"), "category: Input should be 'general' or 'multi-hop'"),
    (("data: {hub: someone/toy-datasets, config: toy}", "data: {hub: a/b, packaged: toy/v1}"), "give data.hub or data.packaged, not both"),
    (("normalization: whitespace", "normalisation: whitespace"), "normalisation: Extra inputs are not permitted"),
])
def test_a_bad_declaration_is_one_line_naming_the_field(change, message):
    with pytest.raises(DataError) as err:
        tasks_from_yaml(TOY.replace(*change), "toy.yaml")
    assert err.value.message.startswith("toy.yaml: ") and message in err.value.message, err.value.message


def test_a_task_file_on_the_command_line_is_registered_and_taken(tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(TOY)
    with tasks.scratch_registry():
        chosen = parse_task_list(f"nq,{path}")
        assert [t.name for t in chosen] == ["nq", "toyqa"] and get_task("toyqa").method == "direct"
        parse_task_list(str(path))  # the same declaration twice is harmless
        assert tasks.resolve_task(str(path)).name == "toyqa" and tasks.resolve_task("nq").name == "nq"  # score --task
    with pytest.raises(DataError, match="no such task declaration"):
        parse_task_list(str(tmp_path / "missing.yaml"))


def test_the_shipped_benchmarks_are_the_yaml_file_in_the_papers_order():
    assert task_names()[:8] == ("nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle", "adqa")
    assert get_task("adqa").packaged_data == "adqa/v1" and get_task("adqa").hub_path is None
    assert get_task("hotpotqa").eval_split == "dev" and get_task("nq").hub_config == "nq"


def test_task_lists_elsewhere_come_from_the_registry(tmp_path):
    (toy,) = tasks_from_yaml(TOY, "toy.yaml")
    with tasks.scratch_registry():
        tasks.register_task(toy)
        assert task_columns()[-1] == "toyqa" and [c.key for c in columns()][-1] == "toyqa"
        import inspect

        from evalsuite.lmeval_export import export_tasks

        assert inspect.signature(export_tasks).parameters["tasks"].default is None  # None: task_names()
    # the README names every shipped benchmark `evalsuite tasks` lists
    readme = (REPO / "README.md").read_text()
    listed = re.search(r"`evalsuite tasks` lists the registered tasks \(([^)]*)\)", readme.replace("\n", " "))
    assert listed is not None
    for name in task_names():
        task = get_task(name)
        assert task.display_name.split(" (")[0] in listed.group(1) or f"`{name}`" in listed.group(1), name


def test_the_lm_eval_fallback_leaves_out_metrics_that_are_not_default():
    with scratch_registry():
        register_metric(MetricSpec("year_match", "Year match", "binary", lambda x: 0.0, default=False))
        assert "year_match" not in fallback_metrics()
        assert fallback_metrics() == [m for m in default_metrics() if get_metric(m).average == "macro"]
