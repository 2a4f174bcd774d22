"""Every command speaks one option language (evalsuite/cli/_options.py). The tests walk the typer app, so a command
added later is held to the same rules without being listed here."""

from __future__ import annotations

import pytest
import typer.main
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.cli._options import DEPRECATED_OPTIONS, subset_with_limit
from evalsuite.errors import EvalsuiteError

# Each short flag stands for one long option, in every command that has it.
SHORT_FLAGS = {"-o": "--output", "-t": "--tasks", "-c": "--config", "-m": "--model", "-b": "--backend",
               "-r": "--retriever", "-k": "--topk", "-f": "--format"}
# Commands that read benchmark rows without naming tasks in an option; those that do (--tasks, --task, --subset) are
# found by walking.
READS_TASK_DATA = {"judge", "tasks", "data status", "leaderboard verify", "leaderboard add", "leaderboard build"}
# The same name for another kind of value, each for a reason.
OTHER_VALUE_KINDS = {
    ("submit", "--corpus"), ("submit", "--retriever"),  # metadata labels of a submission, not a corpus file or an index
    ("submit", "--split"),  # TASK=SPLIT pairs: the splits of several tasks at once
    ("index build", "--faiss"),  # the faiss index type to build; `index import --faiss` is the prebuilt file
}


def _walk(command, path: tuple[str, ...] = ()):
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _walk(sub, (*path, name))
    else:
        yield " ".join(path), command


COMMANDS = dict(_walk(typer.main.get_command(app)))


def _options(command):
    return [p for p in command.params if p.param_type_name == "option"]


def _long_names(command) -> set[str]:
    return {opt for p in _options(command) for opt in p.opts if opt.startswith("--")}


def _option(command, name: str):
    return next(p for p in _options(command) if name in p.opts)


def test_the_walk_finds_every_command():
    assert {"run", "merge", "score", "judge", "table", "submit", "leaderboard build", "index build", "data download",
            "lmeval export", "teacher-queries", "train", "adqa generate"} <= COMMANDS.keys()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_short_flag_means_the_same_long_option_everywhere(name):
    for param in _options(COMMANDS[name]):
        longs = [opt for opt in param.opts if opt.startswith("--")]
        for short in (opt for opt in param.opts if not opt.startswith("--")):
            assert short in SHORT_FLAGS, f"`evalsuite {name}` {param.opts}: a new short flag; add it to SHORT_FLAGS if it means the same everywhere"
            assert SHORT_FLAGS[short] in longs, f"`evalsuite {name}`: {short} is {longs}, everywhere else {SHORT_FLAGS[short]}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_output_is_always_output_with_dash_o(name):
    names = _long_names(COMMANDS[name])
    if "--output" in names:
        assert "-o" in _option(COMMANDS[name], "--output").opts
    assert not names & {f"--{old}" for old in DEPRECATED_OPTIONS}, f"`evalsuite {name}` declares a retired option name"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_that_reads_task_data_takes_data_dir(name):
    names = _long_names(COMMANDS[name])
    if name in READS_TASK_DATA or names & {"--tasks", "--task", "--subset"}:
        assert "--data-dir" in names, f"`evalsuite {name}` reads task data but has no --data-dir"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_subset_comes_with_limit_and_tasks_with_dash_t(name):
    command = COMMANDS[name]
    names = _long_names(command)
    if "--subset" in names:
        assert "--limit" in names and str(_option(command, "--limit").bare_type()) == "int"
    if "--tasks" in names:
        assert "-t" in _option(command, "--tasks").opts and "--task" not in names


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_panel_file_is_always_panel_and_every_option_is_explained(name):
    for param in _options(COMMANDS[name]):
        assert param.help, f"`evalsuite {name}` {param.opts[0]} has no help text"
        if "panel yaml" in param.help.lower():
            assert "--panel" in param.opts, f"`evalsuite {name}` {param.opts[0]} takes a panel file: call it --panel"


def test_one_long_name_takes_one_kind_of_value():
    kinds: dict[str, dict[tuple[str, bool], list[str]]] = {}
    for name, command in COMMANDS.items():
        for param in _options(command):
            for opt in (o for o in param.opts if o.startswith("--")):
                if (name, opt) not in OTHER_VALUE_KINDS:
                    kinds.setdefault(opt, {}).setdefault((str(param.bare_type()), param.multiple), []).append(name)
    mixed = {opt: by_kind for opt, by_kind in kinds.items() if len(by_kind) > 1}
    assert not mixed


def test_every_retired_name_points_at_a_name_in_use():
    used = set().union(*(_long_names(c) for c in COMMANDS.values()))
    assert {f"--{new}" for new in DEPRECATED_OPTIONS.values()} <= used


def test_limit_is_the_short_form_of_subset_first():
    assert subset_with_limit(None, 5) == "first:5"
    assert subset_with_limit("sample:10:1", None) == "sample:10:1"
    assert subset_with_limit(None, None) is None
    with pytest.raises(EvalsuiteError, match="both --subset full and --limit 3"):
        subset_with_limit("full", 3)


def test_retired_names_still_work_hidden_and_with_a_warning(tmp_path):
    """lmeval export on the packaged AD-QA rows: --out and --max-gen-toks (retired) and --limit (new)."""
    out = tmp_path / "tasks"
    result = CliRunner().invoke(app, ["lmeval", "export", "--out", str(out), "--tasks", "adqa", "--settings", "direct",
                                      "--max-gen-toks", "8", "--limit", "2"])
    assert result.exit_code == 0, result.output
    assert "warning: --out is deprecated; use --output" in result.stderr
    assert "warning: --max-gen-toks is deprecated; use --max-tokens" in result.stderr
    written = sorted(out.rglob("*.yaml"))
    task_yaml = next(p for p in written if p.name.endswith("direct.yaml")).read_text()
    assert "max_gen_toks: 8" in task_yaml
    rows = [p for p in out.rglob("*.jsonl")]
    assert [len(p.read_text().splitlines()) for p in rows] == [2]
    help_text = CliRunner().invoke(app, ["lmeval", "export", "--help"]).output
    assert "--max-tokens" in help_text and "--max-gen-toks" not in help_text and "--out " not in help_text
