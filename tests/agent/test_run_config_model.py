"""The run's configuration is the library's: `RunConfig` owns the defaults and the validation, `evalsuite run`
takes its defaults from it, and the library refuses what the command line refuses, with the same line."""

from __future__ import annotations


import pytest
import typer
from pydantic import ValidationError

from evalsuite.agent.config import RunConfig, option
from evalsuite.agent.engine import RolloutConfig
from evalsuite.agent.runner import RunSpec
from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import Manifest

# options whose CLI default is None because the embedded demo fills them before RunConfig's default applies
DEMO_FILLED = {"max_turns", "max_tokens", "subset"}


def _run_command():
    command = typer.main.get_command(app)
    return command.commands["run"]


def test_every_run_option_defaults_to_the_run_configs_default():
    params = {p.name: p for p in _run_command().params}
    checked = []
    for name, field in RunConfig.model_fields.items():
        param = params[name]
        assert option(name) in param.opts, f"{name} is --{name.replace('_', '-')} on the command line"
        if name in DEMO_FILLED or field.default is None:
            assert param.default is None, name
        else:
            assert param.default == field.default, f"--{name}: the CLI says {param.default!r}, RunConfig {field.default!r}"
        checked.append(name)
    assert len(checked) == len(RunConfig.model_fields)
    # the rollout's defaults are RolloutConfig's, which RunConfig repeats from one source
    assert RunConfig().rollout() == RolloutConfig()


@pytest.mark.parametrize(("settings", "message"), [
    ({"batch_size": 0}, "--batch-size 0 is out of range"),
    ({"topk": 0}, "--topk 0 is out of range"),
    ({"max_context_tokens": 0}, "--max-context-tokens 0 is out of range"),
    ({"samples": 3}, "--samples 3 with --temperature 0: greedy decoding makes the 3 samples identical"),
    ({"seeds": (1, 1)}, "--seeds '1,1' needs two or more distinct seeds"),
    ({"seeds": (1, 2), "samples": 3, "temperature": 0.5}, "--samples 3 disagrees with the 2 --seeds"),
    ({"top_p": 1.5}, "--top-p 1.5 is out of range"),
    ({"schedule": "later"}, "unknown schedule 'later'"),
])
def test_the_library_refuses_what_the_cli_refuses(settings, message, tmp_path):
    with pytest.raises(EvalsuiteError) as err:
        RunConfig(**settings)
    assert err.value.message == message
    # a RunSpec holds a RunConfig, so it cannot hold these settings: changing its settings validates them again
    spec = RunSpec(model="m", backend="replay", tasks="nq", out=tmp_path / "run")
    with pytest.raises(EvalsuiteError) as err:
        spec.config.replace(**settings)
    assert err.value.message == message
    with pytest.raises(ValidationError, match="frozen"):
        spec.config.batch_size = 0  # and not in place: the config is frozen
    with pytest.raises(EvalsuiteError, match="RunSpec\\(config=...\\) takes a RunConfig, not a dict"):
        RunSpec(model="m", backend="replay", tasks="nq", out=tmp_path / "run", config=settings)
    assert not (tmp_path / "run").exists()


def test_the_cli_gives_the_same_line(tmp_path):
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["run", "--model", "x.json", "--tasks", "nq", "--batch-size", "0", "-o", str(tmp_path / "r")])
    assert isinstance(result.exception, EvalsuiteError)  # (`evalsuite` prints it as error:/hint: and exits 2)
    assert result.exception.message == "--batch-size 0 is out of range"


def test_from_yaml_and_from_manifest(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("topk: 5\nmax-turns: 2\nbatch_size: 4\n")
    assert RunConfig.from_yaml(path) == RunConfig(topk=5, max_turns=2, batch_size=4)
    path.write_text("topk: 5\nbatchsize: 4\n")
    with pytest.raises(EvalsuiteError, match="unknown run setting 'batchsize'"):
        RunConfig.from_yaml(path)
    manifest = Manifest(evalsuite_version="0", created_at="2026-01-01T00:00:00Z", kind="run", method="search-r1", topk=2, max_turns=3,
                        decoding={"temperature": 0.7, "seed": 5, "max_tokens": 64, "max_obs_tokens": 100, "max_context_tokens": 2048},
                        backend={"name": "replay", "schedule": "sync"}, tasks=["nq"], subset="first:3",
                        run_config={"batch_size": 8, "samples": 2})
    config = RunConfig.from_manifest(manifest)
    assert (config.topk, config.max_turns, config.temperature, config.seed, config.max_tokens) == (2, 3, 0.7, 5, 64)
    assert (config.schedule, config.subset, config.batch_size, config.samples) == ("sync", "first:3", 8, 2)
    # a new run's manifest records the whole config, which reads back as it was
    recorded = manifest.model_copy(update={"run_config": config.replace(top_p=0.9).model_dump(mode="json")})
    assert RunConfig.from_manifest(recorded) == config.replace(top_p=0.9)
