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
    # an older run recorded no run_config and its number of samples in decoding (and seeds): read from there
    older = manifest.model_copy(update={"run_config": None, "decoding": manifest.decoding.model_copy(update={"samples": 2}),
                                        "seeds": {"seed": 5, "samples": 2}})
    assert RunConfig.from_manifest(older).samples == 2


# ---- a wrong setting is the same one line wherever it comes from (issue #41) ----

@pytest.mark.parametrize(("key", "value", "message"), [
    ("topk", "many", "--topk 'many': expected an integer"),
    ("temperature", "hot", "--temperature 'hot': expected a number"),
    ("top_p", "most", "--top-p 'most': expected a number or null"),
    ("seeds", "1,x", "--seeds '1,x' is not a comma-separated list of integers"),
    ("schedule", "later", "unknown schedule 'later'"),
])
def test_an_ill_typed_setting_is_one_line_from_python_the_cli_a_file_and_a_manifest(tmp_path, key, value, message):
    from typer.testing import CliRunner

    def refused(call) -> EvalsuiteError:
        with pytest.raises(EvalsuiteError) as err:
            call()
        return err.value

    assert refused(lambda: RunConfig(**{key: value})).message == message  # Python
    assert refused(lambda: RunConfig.setting(key, value)).message == message  # one option's conversion
    flag = option(key)
    result = CliRunner().invoke(app, ["run", "--tasks", "nq", flag, value, "-o", str(tmp_path / "cli")])
    assert isinstance(result.exception, EvalsuiteError) and result.exception.message == message  # the command line
    path = tmp_path / "run.yaml"
    path.write_text(f"tasks: nq\n{key}: {value}\n", encoding="utf-8")
    assert refused(lambda: RunConfig.from_yaml(path)).message == message  # a settings file
    result = CliRunner().invoke(app, ["run", "--config", str(path), "-o", str(tmp_path / "file")])
    assert result.exception.message == f"{path}:2: {message}"  # `run --config FILE`: the line named first
    manifest = Manifest(evalsuite_version="0", created_at="2026-01-01T00:00:00Z", kind="run", tasks=["nq"],
                        run_config={"model": "m", "tasks": "nq", key: value})
    assert refused(lambda: RunConfig.from_manifest(manifest)).message == message  # a manifest
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--config", str(tmp_path / "old"), "-o", str(tmp_path / "again")])
    assert result.exception.message.startswith(f"{tmp_path / 'old' / 'manifest.json'}:")
    assert result.exception.message.endswith(f": {message}")  # `run --config RUN`
    assert not any((tmp_path / name).exists() for name in ("cli", "file", "again"))


def test_an_unknown_setting_is_one_line_naming_it_and_the_closest(tmp_path):
    from typer.testing import CliRunner

    with pytest.raises(EvalsuiteError) as err:
        RunConfig(max_turn=3)
    assert err.value.message == "unknown run setting 'max_turn'" and err.value.hint.startswith("did you mean max_turns?")
    path = tmp_path / "run.yaml"
    path.write_text("max_turn: 3\n", encoding="utf-8")
    with pytest.raises(EvalsuiteError) as err:
        RunConfig.from_yaml(path)
    assert err.value.message == "unknown run setting 'max_turn'" and err.value.hint.startswith("did you mean max_turns?")
    # `run --config`: the command's own keys are more than the settings (model, tasks, ...): its line, the same hint
    result = CliRunner().invoke(app, ["run", "--config", str(path)])
    assert result.exception.message == f"{path}:1: unknown option 'max_turn' in the config file"
    assert result.exception.hint.startswith("did you mean max_turns?")


def test_a_run_made_from_python_records_its_settings_but_does_not_repeat_as_a_command(tmp_path):
    """Its manifest's run_config holds every setting (read back by RunConfig.from_manifest) but no command: `run
    --config RUN` would run the embedded demo with them, so it is refused as before, in one line."""
    from typer.testing import CliRunner

    settings = RunConfig(topk=5, samples=2, temperature=0.5)
    manifest = Manifest(evalsuite_version="0", created_at="2026-01-01T00:00:00Z", kind="run", tasks=["nq"],
                        run_config=settings.model_dump(mode="json"))
    assert RunConfig.from_manifest(manifest) == settings
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text(manifest.model_dump_json(), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--config", str(tmp_path / "run"), "-o", str(tmp_path / "again")])
    assert result.exception.message.startswith(f"{tmp_path / 'run' / 'manifest.json'}: this run manifest records no run config")
    assert not (tmp_path / "again").exists()
