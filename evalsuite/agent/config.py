"""`RunConfig`: the settings of an evaluation run that have defaults, typed, with their validation, in one place.

The library owns them, not the command line (TRL's config classes are the model): `evalsuite run`'s options take
their defaults from here (`RunConfig.default`; tests/agent/test_run_config.py checks every one), and `RunSpec` (the
library's description of a run) is validated through here when it is made and again by `execute`, so
`execute(RunSpec(batch_size=0))` is refused with the same one-line error as `evalsuite run --batch-size 0`.

Each error names the setting as its command-line option (`--batch-size`), the spelling a config file and the
manifest's `run_config` use too. The rollout's own limits and decoding live in `agent.engine.RolloutConfig`, whose
defaults (Search-R1's evaluation: 4 turns, top-3, greedy, 500/500) are the ones given here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evalsuite.agent.engine import RolloutConfig
from evalsuite.errors import DataError, EvalsuiteError

_ROLLOUT = RolloutConfig()
Schedule = Literal["async", "sync"]
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
ROLLOUT_FIELDS = (
    "max_turns",
    "max_tokens",
    "max_obs_tokens",
    "max_context_tokens",
    "topk",
    "temperature",
    "seed",
    "top_p",
)


def option(name: str) -> str:
    """A setting's command-line spelling: batch_size -> --batch-size."""
    return "--" + name.replace("_", "-")


class RunConfig(BaseModel):
    """What a run does besides which model, tasks and retriever it uses: the rollout's limits and decoding, the
    sampling, the batch and the schedule, the prompt style and the subset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_style: str = "auto"
    subset: str = "full"
    topk: int = _ROLLOUT.topk
    max_turns: int = _ROLLOUT.max_turns
    max_tokens: int = _ROLLOUT.max_tokens
    max_obs_tokens: int = _ROLLOUT.max_obs_tokens
    max_context_tokens: int = _ROLLOUT.max_context_tokens
    temperature: float = _ROLLOUT.temperature
    seed: int = _ROLLOUT.seed
    top_p: float | None = _ROLLOUT.top_p
    # K sampled trajectories per question (sample j drawn with seed + j, or with seeds[j]); 1: one record per question
    samples: int = 1
    seeds: tuple[int, ...] | None = None
    # examples per batch (async: trajectories in flight); a kill loses at most those
    batch_size: int = 16
    # "sync" (turn-synchronous batches), "async" (each trajectory on its own); None: async where the backend supports it
    schedule: Schedule | None = None

    @model_validator(mode="before")
    @classmethod
    def _samples_from_seeds(cls, data: Any) -> Any:
        """`seeds` sets the number of samples (`samples` may be left at 1, or say the same number)."""
        if isinstance(data, dict):
            check_schedule(data.get("schedule"))
        if isinstance(data, dict) and data.get("seeds") and data.get("samples", 1) == 1:
            data = {**data, "samples": len(data["seeds"])}
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
    def make(cls, **settings: Any) -> RunConfig:
        """A RunConfig from keyword settings; a value of the wrong type is one line naming its option."""
        try:
            return cls(**settings)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first["loc"][0]) if first["loc"] else "?"
            if first["type"] == "extra_forbidden":
                raise EvalsuiteError(
                    f"unknown run setting {name!r}", hint=f"settings: {', '.join(cls.model_fields)}"
                ) from None
            raise EvalsuiteError(
                f"{option(name)} {first.get('input')!r}: {first['msg']}",
                hint=f"see `evalsuite run --help` for {option(name)}",
            ) from None

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of one setting (what `evalsuite run` shows and uses)."""
        return cls.model_fields[name].default

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
        return cls.make(**{str(k).replace("-", "_"): v for k, v in data.items()})

    @classmethod
    def from_manifest(cls, manifest: Any) -> RunConfig:
        """The settings a run recorded (a `runs.schema.Manifest`): its `run_config` where it has one, else what its
        decoding, limits, schedule and subset say (read through `runs.setting.RunSetting`)."""
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
                )
                if v is not None
            }
        )
        recorded = getattr(manifest, "run_config", None) or {}
        values.update({k: v for k, v in recorded.items() if k in cls.model_fields and v is not None})
        return cls.make(**values)

    @classmethod
    def from_spec(cls, spec: Any) -> RunConfig:
        """The settings of a `runner.RunSpec` (validated: a RunSpec the CLI would refuse is refused here)."""
        rollout = spec.rollout
        return cls.make(
            prompt_style=spec.prompt_style,
            subset=spec.subset,
            batch_size=spec.batch_size,
            samples=spec.samples,
            seeds=spec.seeds,
            schedule=spec.schedule,
            **{name: getattr(rollout, name) for name in ROLLOUT_FIELDS},
        )

    # ------------------------------------------------------------------ using one

    def rollout(self) -> RolloutConfig:
        return RolloutConfig(**{name: getattr(self, name) for name in ROLLOUT_FIELDS})

    def spec_fields(self) -> dict[str, Any]:
        """The keyword arguments of `runner.RunSpec` this config fills."""
        return {
            "prompt_style": self.prompt_style,
            "subset": self.subset,
            "rollout": self.rollout(),
            "batch_size": self.batch_size,
            "samples": self.samples,
            "seeds": self.seeds,
            "schedule": self.schedule,
        }

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


def check_schedule(requested: str | None) -> None:
    """Refuse a schedule name that is not one (the CLI's --schedule)."""
    if requested is not None and requested not in SCHEDULES:
        raise EvalsuiteError(f"unknown schedule {requested!r}", hint="use --schedule async or --schedule sync")
