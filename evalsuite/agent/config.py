"""`RunConfig`: the settings of an evaluation run, typed, validated once, in one place.

The library owns them, not the command line (TRL's config classes are the model): `RunSpec` (the library's
description of a run) holds one, the engine's `RolloutConfig` is derived from it (`rollout()`), the manifest records
it whole (`run_config`), and `evalsuite run` makes one option per field, its help the field's description
(`cli.run.with_setting_options`). So a new setting is one field here: with no other edit it is an option, a
config-file key, recorded, read back from a manifest and carried on every path, Ray's actors included
(tests/extending/test_run_setting.py); only the code that acts on it reads `spec.config.<name>`.

A wrong value is one line naming the setting as its command-line option (`--batch-size`, the spelling a config file
and the manifest use too) and what it takes, from the same validation whether it came from the command line, a
file, a manifest or Python (`RunConfig(topk="many")`). The rollout's own limits and decoding live in
`agent.engine.RolloutConfig`, whose defaults (Search-R1's evaluation: 4 turns, top-3, greedy, 500/500) are the ones
given here.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from evalsuite.agent.engine import RolloutConfig
from evalsuite.errors import DataError, EvalsuiteError, did_you_mean

_ROLLOUT = RolloutConfig()
SCHEDULES: tuple[str, ...] = ("async", "sync")

# setting -> the least value it may take (checked in this order, the order `evalsuite run --help` lists them)
_LEAST: dict[str, int] = {
    "batch_size": 1,
    "topk": 1,
    "max_turns": 0,
    "max_tokens": 1,
    "max_obs_tokens": 0,
    "max_context_tokens": 1,
}
# RunConfig's fields that are RolloutConfig's (the engine's view of the run)
ROLLOUT_FIELDS = tuple(RolloutConfig.__dataclass_fields__)


def option(name: str) -> str:
    """A setting's command-line spelling: batch_size -> --batch-size."""
    return "--" + name.replace("_", "-")


def check_schedule(requested: Any) -> Any:
    """Refuse a schedule name that is not one (before the type check, so the message names the choices)."""
    if requested is not None and requested not in SCHEDULES:
        raise EvalsuiteError(f"unknown schedule {requested!r}", hint="use --schedule async or --schedule sync")
    return requested


def parse_seeds(seeds: Any) -> Any:
    """`--seeds 1,2,3` (a command line's or a file's string) as a tuple of integers; a list passes as it is."""
    if not isinstance(seeds, str):
        return seeds
    try:
        return tuple(int(part) for part in seeds.split(",") if part.strip())
    except ValueError:
        raise EvalsuiteError(
            f"--seeds {seeds!r} is not a comma-separated list of integers", hint="e.g. --seeds 1,2,3"
        ) from None


Schedule = Annotated[Literal["async", "sync"] | None, BeforeValidator(check_schedule)]
Seeds = Annotated[tuple[int, ...] | None, BeforeValidator(parse_seeds)]


class RunConfig(BaseModel):
    """What a run does besides which model, tasks and retriever it uses: the rollout's limits and decoding, the
    sampling, the batch and the schedule, the prompt style and the subset. Each field's description is its
    `evalsuite run --help` text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_style: str = Field(
        "auto", description="auto (chat template if the model has one) | base | instruct | base-1shot | base-fewshot."
    )
    subset: str = Field("full", description="full | first:N | sample:N:SEED.")
    topk: int = Field(_ROLLOUT.topk, description="Passages per search.")
    max_turns: int = Field(
        _ROLLOUT.max_turns, description="Turns with search enabled; one final turn without search follows."
    )
    max_tokens: int = Field(_ROLLOUT.max_tokens, description="Generated tokens per turn.")
    max_obs_tokens: int = Field(_ROLLOUT.max_obs_tokens, description="Tokens of retrieved text per observation.")
    max_context_tokens: int = Field(_ROLLOUT.max_context_tokens, description="Total budget: prompt plus response.")
    temperature: float = Field(_ROLLOUT.temperature, description="0 = greedy (Search-R1 evaluation).")
    seed: int = Field(
        _ROLLOUT.seed,
        description="Seed of sampling (with --temperature above 0); with --samples K, sample j uses seed + j.",
    )
    samples: int = Field(
        1,
        description=(
            "K sampled trajectories per question (needs --temperature "
            "above 0): avg@K, pass@k and maj@K are reported per question."
        ),
    )
    seeds: Seeds = Field(
        None,
        description=(
            "Comma-separated seeds, one sampled trajectory per question each (e.g. 1,2,3: like "
            "--samples 3 with those seeds); the run reports the mean and the spread over seeds."
        ),
    )
    top_p: float | None = Field(
        _ROLLOUT.top_p,
        description=(
            "Nucleus sampling threshold in (0, 1], for the backends that pass it on (a backend "
            "that does not refuses it, naming those that do); default: the backend's."
        ),
    )
    batch_size: int = Field(
        16, description="Examples per batch (async: trajectories in flight); a kill loses at most those."
    )
    schedule: Schedule = Field(
        None,
        description=(
            "async (each trajectory on its own; servers, vllm-async) | sync (turn "
            "by turn in batches). Default: async where the backend supports it."
        ),
    )

    def __init__(self, **settings: Any) -> None:
        # a wrong or unknown setting is one line naming it, however the config is made (Python, file, manifest, CLI)
        try:
            super().__init__(**settings)
        except ValidationError as exc:
            raise setting_error(type(self), exc, settings) from None

    @model_validator(mode="before")
    @classmethod
    def _samples_from_seeds(cls, data: Any) -> Any:
        """`seeds` sets the number of samples (`samples` may be left at 1, or say the same number)."""
        if isinstance(data, dict) and data.get("seeds") and data.get("samples", 1) == 1:
            seeds = parse_seeds(data["seeds"])
            if isinstance(seeds, (list, tuple)):
                data = {**data, "seeds": seeds, "samples": len(seeds)}
        return data

    @model_validator(mode="after")
    def _check(self) -> RunConfig:
        for name, least in _LEAST.items():
            value = getattr(self, name)
            if value < least:
                raise EvalsuiteError(
                    f"{option(name)} {value} is out of range", hint=f"give {option(name)} a value of at least {least}"
                )
        if self.seeds is not None:
            if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
                shown = ",".join(map(str, self.seeds))
                raise EvalsuiteError(
                    f"--seeds {shown!r} needs two or more distinct seeds", hint="e.g. --seeds 1,2,3 (one seed: --seed)"
                )
            if self.samples != len(self.seeds):
                raise EvalsuiteError(
                    f"--samples {self.samples} disagrees with the {len(self.seeds)} --seeds",
                    hint="drop --samples: --seeds sets it",
                )
        if self.samples < 1:
            raise EvalsuiteError(
                f"--samples {self.samples} is out of range",
                hint="give --samples a value of at least 1 (1: one trajectory per question)",
            )
        if not self.temperature >= 0:  # (nan, too: it compares false with everything, and no backend samples at it)
            raise EvalsuiteError(
                f"--temperature {self.temperature:g} is out of range", hint="give --temperature 0 (greedy) or more"
            )
        if self.samples > 1 and self.temperature <= 0:
            raise EvalsuiteError(
                f"--samples {self.samples} with --temperature {self.temperature:g}: "
                f"greedy decoding makes the {self.samples} samples identical",
                hint="set --temperature above 0 (e.g. 0.7) to sample, or drop --samples",
            )
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise EvalsuiteError(f"--top-p {self.top_p:g} is out of range", hint="give --top-p a value in (0, 1]")
        return self

    # ------------------------------------------------------------------ making one

    @classmethod
    def setting(cls, name: str, value: Any) -> Any:
        """One setting's value as its field takes it (the command line's conversion of an option): the type check
        of `RunConfig(**{name: value})`, with its error, without the checks that need the other settings."""
        field = cls.model_fields[name]
        # the field's type with its validators (`Seeds` parses "1,2,3"); Annotated needs at least one of those
        annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        try:
            return TypeAdapter(annotation).validate_python(value)
        except ValidationError as exc:
            raise setting_error(cls, exc, {name: value}) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> RunConfig:
        """The settings of a YAML file whose keys are setting names (dashes or underscores); other keys are refused."""
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise DataError(f"{path}: no such run config file") from None
        except yaml.YAMLError as exc:
            raise DataError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise DataError(f"{path}: a run config is a mapping of settings", hint="e.g. topk: 5")
        return cls(**{str(k).replace("-", "_"): v for k, v in data.items()})

    @classmethod
    def from_manifest(cls, manifest: Any) -> RunConfig:
        """The settings a run recorded (a `runs.schema.Manifest`): its `run_config` where it has one, else what its
        decoding, limits, schedule and subset say (read through `runs.run_setting.RunSetting`; an older run's)."""
        from evalsuite.runs.run_setting import RunSetting

        setting = RunSetting.from_manifest(manifest)
        values: dict[str, Any] = {name: setting.decoding[name] for name in ROLLOUT_FIELDS if name in setting.decoding}
        values.update(
            {
                k: v
                for k, v in (
                    ("topk", setting.topk),
                    ("max_turns", setting.max_turns),
                    ("subset", setting.subset),
                    ("schedule", setting.backend.schedule),
                    ("samples", setting.decoding.get("samples")),  # older runs recorded it in decoding only
                )
                if v is not None
            }
        )
        recorded = getattr(manifest, "run_config", None) or {}
        values.update({k: v for k, v in recorded.items() if k in cls.model_fields and v is not None})
        return cls(**values)

    def replace(self, **changes: Any) -> RunConfig:
        """These settings with `changes`, validated again (pydantic's `model_copy(update=...)` checks nothing)."""
        return type(self)(**{**self.model_dump(), **changes})

    # ------------------------------------------------------------------ using one

    def rollout(self) -> RolloutConfig:
        """The engine's view: the rollout's limits and decoding."""
        return RolloutConfig(**{name: getattr(self, name) for name in ROLLOUT_FIELDS})

    def sample_indices(self) -> list[int | None]:
        """The sample index of each trajectory a question gets: [None] for a one-trajectory run, else 0..K−1."""
        return [None] if self.samples == 1 else list(range(self.samples))

    def sample_seed(self, sample: int | None) -> int:
        """The seed sample j is drawn with: --seeds' j-th, else the run's --seed plus j (the run's seed itself for a
        one-trajectory run)."""
        if self.seeds is not None and sample is not None:
            return self.seeds[sample]
        return self.seed + (sample or 0)

    def check_backend(self, backend: str | None) -> None:
        """Refuse what the backend cannot do with these settings (before it is loaded)."""
        from evalsuite.models.registry import backend_class, top_p_backends

        if self.top_p is not None and backend is not None and not backend_class(backend).supports_top_p:
            raise EvalsuiteError(
                f"--top-p is not passed on by the {backend} backend",
                hint=f"use one of {', '.join(top_p_backends())}, or drop --top-p",
            )

    def resolve_schedule(self, supports_async: bool, backend: str) -> str:
        """The schedule the run uses, decided here only: the one asked for, else async where the backend batches
        continuously; async on a backend that generates whole batches is refused."""
        from evalsuite.models.base import ScheduleUnsupported

        if self.schedule is None:
            return "async" if supports_async else "sync"
        if self.schedule == "async" and not supports_async:
            raise ScheduleUnsupported(backend)
        return self.schedule


def setting_error(config: type[RunConfig], exc: ValidationError, given: dict[str, Any]) -> EvalsuiteError:
    """pydantic's error about the settings `given` as one line: an unknown setting (with the closest known one), or
    the value naming the setting's option and the type it takes."""
    first = exc.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else next(iter(given), "?")
    if first["type"] == "extra_forbidden":
        close = did_you_mean(name, config.model_fields, "", n=1, cutoff=0.6)
        return EvalsuiteError(
            f"unknown run setting {name!r}",
            hint=(f"{close} " if close else "") + f"settings: {', '.join(config.model_fields)}",
        )
    expected = expected_type(config.model_fields[name].annotation) if name in config.model_fields else first["msg"]
    return EvalsuiteError(
        f"{option(name)} {given.get(name, first.get('input'))!r}: expected {expected}",
        hint=f"see `evalsuite run --help` for {option(name)}",
    )


def expected_type(annotation: Any) -> str:
    """What a setting's type takes, in words: int -> an integer, float | None -> a number or null."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return expected_type(args[0])
    if origin in (Union, types.UnionType):
        return " or ".join(expected_type(arg) for arg in args)
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin is tuple:
        return f"a list of {expected_type(args[0]).removeprefix('an ').removeprefix('a ')}s (e.g. 1,2,3)"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )
