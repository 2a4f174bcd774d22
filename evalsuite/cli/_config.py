"""`evalsuite run --config FILE`: every option from a YAML or JSON file whose keys are the long option names
(`max_turns` or `max-turns`); flags on the command line override the file. The resolved options are recorded in the
run's manifest.json (`run_config`), and `--config RUN/manifest.json` (or the run directory) reads them back, so a run
repeats from its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from evalsuite.cli._options import DEPRECATED_OPTIONS
from evalsuite.errors import EvalsuiteError, did_you_mean

if TYPE_CHECKING:
    # a command's options, as `ctx.command.params` types them: typer bundles its own click and exports only the
    # CallbackParam subclass its callbacks receive
    from typer._click.core import Parameter

MANIFEST_CONFIG_FIELD = "run_config"
# Where a run is written and how it is printed, not what it computes: a repeated run goes to a new directory.
NOT_RECORDED = frozenset({"config", "out", "resume", "as_json"})
# What a manifest (possibly someone else's run) may never decide, even when its run_config holds it: where to write,
# whether to continue or overwrite a directory, and whether a model's own code runs (issue 26).
FROM_MANIFEST_REFUSED = frozenset({*NOT_RECORDED, "overwrite", "force"})
REFUSED_BACKEND_OPTIONS = frozenset({"trust_remote_code"})


def config_key(param: Parameter) -> str:
    """An option's key in a config file: its first long name without dashes, `-` as `_` (`--max-turns`: max_turns)."""
    long_names = [opt for opt in param.opts if opt.startswith("--")]
    return (long_names[0] if long_names else param.opts[0]).lstrip("-").replace("-", "_")


def resolved_config(ctx: typer.Context) -> dict[str, Any]:
    """The value of every recorded option of the running command (command line, config file or default), as JSON."""
    return {
        config_key(param): _jsonable(ctx.params[param.name])
        for param in ctx.command.params
        if _is_option(param) and param.name in ctx.params and param.name not in NOT_RECORDED
    }


def command_line_first(ctx: typer.Context, *names: str) -> tuple[Any, ...]:
    """The values of options that say one thing two ways (--subset, --limit): when one of them is on the command line,
    the others' values from the --config file give way to it, as any flag overrides the file (and the recorded config
    keeps only what was used)."""
    sources = {name: getattr(ctx.get_parameter_source(name), "name", None) for name in names}
    if "COMMANDLINE" in sources.values():
        for name, source in sources.items():
            if source == "DEFAULT_MAP":
                ctx.params[name] = None
    return tuple(ctx.params[name] for name in names)


def fill_from_config(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """Eager callback of --config: the file's values become the defaults of the command's other options."""
    if value is None or ctx.resilient_parsing:
        return value
    ctx.default_map = {**(ctx.default_map or {}), **read_config(Path(value), ctx)}
    return value


def read_config(path: Path, ctx: typer.Context) -> dict[str, Any]:
    """{parameter name: value} from a config file or a run manifest; an unknown key is an error naming it."""
    from evalsuite.runs.schema import MANIFEST_FILE

    if path.is_dir():
        path = path / MANIFEST_FILE
    data, lines = _load_mapping(path)
    where: tuple[str, ...] = ()
    if MANIFEST_CONFIG_FIELD in data or {"schema_version", "kind"} <= data.keys():
        run_config = data.get(MANIFEST_CONFIG_FIELD)
        # a run made from Python records its settings there too, but not the command (no `model`, not even null)
        if not isinstance(run_config, dict) or "model" not in run_config:
            raise EvalsuiteError(
                f"{path}: this run manifest records no run config (the run was imported, scored or made from "
                f"Python, or written by an older evalsuite)",
                hint="pass the run's options as flags, or in a YAML file",
            )
        data, where = run_config, (MANIFEST_CONFIG_FIELD,)
    params = _params_by_key(ctx.command)
    if where:
        _refuse_operational(path, data, lines, params)
    values: dict[str, Any] = {}
    for key, value in data.items():
        param = params.get(str(key).replace("-", "_"))
        line = lines.get((*where, str(key)))
        at = f"{path}:{line}" if line else str(path)
        if param is None:
            close = did_you_mean(str(key).replace("-", "_"), params, "", n=1, cutoff=0.6)
            raise EvalsuiteError(
                f"{at}: unknown option {key!r} in the config file",
                hint=(f"{close} " if close else "")
                + f"keys are the long options of `evalsuite {ctx.command.name} --help` without their dashes",
            )
        if value is not None:  # null: not given, the option keeps its default
            values[param.name] = _checked(ctx, param, _click_value(param, value), at)
    return values


def _refuse_operational(
    path: Path, config: dict, lines: dict[tuple[str, ...], int], params: dict[str, Parameter]
) -> None:
    """A manifest's run_config may repeat what a run computed, never where it writes, whether it resumes or whether
    remote code runs: one line naming the file, the field and what to do. A key is read as the option it spells (any
    long name of it: `output` is -o's parameter `out`), so no spelling gets past."""
    for key, value in config.items():
        spelled = str(key).replace("-", "_")
        name = params[spelled].name if spelled in params else spelled
        line = lines.get((MANIFEST_CONFIG_FIELD, str(key)))
        at = f"{path}:{line}" if line else str(path)
        if name in FROM_MANIFEST_REFUSED and value not in (None, False):
            raise EvalsuiteError(
                f"{at}: run_config.{key}: a manifest may not say where to write or whether to resume",
                hint="give -o/--resume on the command line; the manifest only repeats what the run computed",
            )
        if name in ("backend_option", "backend_options"):
            options = value.keys() if isinstance(value, dict) else [str(v).split("=", 1)[0] for v in (value or [])]
            refused = sorted(REFUSED_BACKEND_OPTIONS & {str(o).strip() for o in options})
            if refused:
                raise EvalsuiteError(
                    f"{at}: run_config.{key}: {refused[0]} may not come from a manifest",
                    hint=f"pass --backend-option {refused[0]}=true on the command line if you trust the model's code",
                )


def _params_by_key(command) -> dict[str, Parameter]:
    """Every long name of every option (and each retired name), `-` as `_`, to its parameter; not --config itself."""
    keys: dict[str, Parameter] = {}
    for param in command.params:
        if not _is_option(param) or param.name == "config":
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                keys[opt[2:].replace("-", "_")] = param
    for old, new in DEPRECATED_OPTIONS.items():
        if new.replace("-", "_") in keys:
            keys[old.replace("-", "_")] = keys[new.replace("-", "_")]
    return keys


def _checked(ctx: typer.Context, param: Parameter, value: Any, where: str) -> Any:
    """The value, if the option accepts it; else an error naming the file and line (not only the option)."""
    if param.callback is None:  # a callback may act (as --config's does); it runs once, when the command parses
        try:
            param.process_value(ctx, value)
        except typer.BadParameter as exc:
            raise EvalsuiteError(
                f"{where}: {exc.format_message()}",
                hint=f"fix the value in the config file, or give {param.opts[0]} on the command line",
            ) from None
        except EvalsuiteError as exc:  # a run setting's own validation (`RunConfig.setting`): its line, placed
            raise EvalsuiteError(f"{where}: {exc.message}", hint=exc.hint) from None
    return value


def _is_option(param: Parameter) -> bool:
    return param.param_type_name == "option"  # typer bundles its own click: no isinstance against click.Option


def _click_value(param: Parameter, value: Any) -> Any:
    """A file value as click takes it: a list for a comma-separated option joins, a mapping for a repeatable KEY=VALUE
    option (--backend-option) becomes its pairs."""
    if param.multiple:
        if isinstance(value, dict):
            return [f"{k}={v}" for k, v in value.items()]
        return list(value) if isinstance(value, (list, tuple)) else [value]
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _load_mapping(path: Path) -> tuple[dict, dict[tuple[str, ...], int]]:
    """The file's top-level mapping (YAML; JSON is read as the YAML it is) and the line of each key, top level and one
    level down (a manifest's run_config)."""
    import yaml

    from evalsuite.files import MAX_CONFIG_BYTES, load_untrusted_yaml, read_untrusted_bytes

    try:
        text = read_untrusted_bytes(path, MAX_CONFIG_BYTES, "config file").decode("utf-8")
    except FileNotFoundError:
        raise EvalsuiteError(
            f"{path}: no such config file",
            hint="give --config a YAML/JSON file, a run's manifest.json or a run directory",
        ) from None
    except UnicodeDecodeError as exc:
        raise EvalsuiteError(f"{path}: cannot read the config file ({exc})") from None
    try:
        data = load_untrusted_yaml(text, path)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise EvalsuiteError(
            f"{path}{where}: not valid YAML or JSON ({getattr(exc, 'problem', None) or exc})",
            hint="write one `option: value` per line, e.g. tasks: nq,hotpotqa",
        ) from None
    if not isinstance(data, dict):
        raise EvalsuiteError(
            f"{path}: expected a mapping of option names to values",
            hint="e.g. tasks: nq and max_turns: 4, one per line",
        )
    return data, _key_lines(node)


def _key_lines(node, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], int]:
    import yaml

    lines: dict[tuple[str, ...], int] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = (*prefix, str(key.value))
            lines[path] = key.start_mark.line + 1
            if not prefix:
                lines.update(_key_lines(value, path))
    return lines
