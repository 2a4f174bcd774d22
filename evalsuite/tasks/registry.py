"""The task registry: benchmarks by stable name, declared as data.

A task is a YAML declaration (`TaskDeclaration`): where its rows live (a hub dataset or data shipped in the package),
its splits, and the choices it makes for itself as lm-evaluation-harness task configs do: its default method, its
metrics *added to* or *replacing* the default ones (said explicitly, so a task naming its own metric keeps
precision and recall), and its answer normalization. The shipped benchmarks are `tasks/benchmarks.yaml`, in the
papers' column order; another benchmark is a YAML file of its own (`--tasks path/to/task.yaml`,
`register_task_file`) or an `evalsuite.tasks` entry point of an installed plugin (evalsuite.registry). A task with its
own metric registers the metric (evalsuite.metrics.registry) and names it; the scorer is never edited.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.registry import Registry, named_instance

Category = Literal["general", "multi-hop"]

FLASHRAG_HUB = "RUC-NLPIR/FlashRAG_datasets"
# Search-R1 trains on the NQ + HotpotQA mix: these are in-domain (†), the rest out-of-domain (⋆).
DEFAULT_IN_DOMAIN = frozenset({"nq", "hotpotqa"})


@dataclass(frozen=True)
class Task:
    """A benchmark: where its rows live and how Search-R1's evaluation convention scores it."""

    name: str
    display_name: str
    category: Category
    eval_split: str
    hub_path: str | None = FLASHRAG_HUB
    hub_config: str | None = None
    domain: str = "open-domain"
    version: int = 1
    description: str = ""
    # Where the rows come from when the task ships inside the package (e.g. `adqa`); None for hub tasks.
    packaged_data: str | None = None
    extra_splits: tuple[str, ...] = field(default_factory=tuple)
    # The task's own choices; `evalsuite run` and `score` use them unless --method (or `score --metrics`) overrides.
    method: str | None = None  # None: the command's default method (search-r1)
    # Registered metric names scored *besides* every default metric, or *instead of* them with
    # `replaces_default_metrics=True` (never silently: a task naming one metric keeps the others).
    metrics: tuple[str, ...] = ()
    replaces_default_metrics: bool = False
    normalization: str = "squad"  # a registered answer normalization (evalsuite.metrics.registry)

    def __post_init__(self) -> None:
        if self.metrics is None:  # the old spelling of "no metrics of its own"
            object.__setattr__(self, "metrics", ())
        object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.replaces_default_metrics and not self.metrics:
            raise ValueError(
                f"task {self.name!r} replaces the default metrics with none: name the metrics it is scored with"
            )

    @property
    def in_domain(self) -> bool:
        return self.name in DEFAULT_IN_DOMAIN

    def scored_metrics(self) -> tuple[str, ...]:
        """The metrics this task's examples are scored with: the default ones (evaluated now, so a metric registered
        later reaches the task) plus its own, or its own alone when it replaces the defaults."""
        if self.replaces_default_metrics:
            return self.metrics
        from evalsuite.metrics.registry import default_metrics

        defaults = default_metrics()
        return defaults + tuple(m for m in self.metrics if m not in defaults)


# ---------------------------------------------------------------- declarations (YAML)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DataSource(_Strict):
    """Where a task's rows live: a hub dataset (`hub`, `config`: the subset, default the task's name), or data
    shipped in the package (`packaged`: NAME/VERSION under evalsuite/tasks/), or neither (local files only)."""

    hub: str | None = None
    config: str | None = None
    packaged: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> DataSource:
        if self.hub and self.packaged:
            raise ValueError("give data.hub or data.packaged, not both")
        if self.config and not self.hub:
            raise ValueError("data.config names a subset of data.hub, which is not given")
        return self


class Splits(_Strict):
    eval: str = "test"
    extra: tuple[str, ...] = ()


class MetricChoice(_Strict):
    """`{add: [...]}`: scored besides every default metric; `{replace: [...]}`: instead of them."""

    add: tuple[str, ...] | None = None
    replace: tuple[str, ...] | None = None

    @model_validator(mode="after")
    def _one_mode(self) -> MetricChoice:
        if (self.add is None) == (self.replace is None):
            raise ValueError(
                "metrics needs exactly one of add: [...] (besides the "
                "default metrics) or replace: [...] (instead of them)"
            )
        if self.replace is not None and not self.replace:
            raise ValueError("metrics.replace is empty: name the metrics the task is scored with")
        return self


class TaskDeclaration(_Strict):
    """One benchmark as declared in YAML; `to_task()` gives the registry's `Task`."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    display_name: str | None = None
    category: Category = "general"
    description: str = ""
    domain: str = "open-domain"
    version: int = Field(1, ge=1)
    data: DataSource = DataSource()
    splits: Splits = Splits()
    method: str | None = None
    metrics: MetricChoice | None = None
    normalization: str = "squad"

    @model_validator(mode="before")
    @classmethod
    def _bare_metric_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("metrics"), list):
            raise ValueError(
                "metrics is a bare list: say whether it adds to the default metrics (metrics: {add: [...]}) "
                "or replaces them (metrics: {replace: [...]})"
            )
        return data

    def to_task(self) -> Task:
        choice = self.metrics
        return Task(
            name=self.name,
            display_name=self.display_name or self.name,
            category=self.category,
            eval_split=self.splits.eval,
            hub_path=self.data.hub,
            hub_config=self.data.config,
            domain=self.domain,
            version=self.version,
            description=self.description,
            packaged_data=self.data.packaged,
            extra_splits=self.splits.extra,
            method=self.method,
            metrics=(choice.replace if choice.replace is not None else choice.add) if choice is not None else (),  # type: ignore[arg-type]
            replaces_default_metrics=choice is not None and choice.replace is not None,
            normalization=self.normalization,
        )


def tasks_from_yaml(text: str, source: str) -> list[Task]:
    """The tasks a YAML document declares (one mapping, or a list of them); `source` names it in errors."""
    import yaml

    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DataError(f"{source}: not valid YAML: {exc}", hint="fix the task declaration's syntax") from None
    items = loaded if isinstance(loaded, list) else [loaded]
    tasks = []
    for index, item in enumerate(items):
        where = source if len(items) == 1 else f"{source} (task {index + 1})"
        if not isinstance(item, dict):
            raise DataError(
                f"{where}: a task declaration is a mapping with at least a name",
                hint="see evalsuite/tasks/benchmarks.yaml",
            )
        try:
            tasks.append(TaskDeclaration.model_validate(item).to_task())
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'task'}: {e['msg'].removeprefix('Value error, ')}"
                for e in exc.errors()
            )
            raise DataError(
                f"{where}: {problems}", hint="see the fields listed at the top of evalsuite/tasks/benchmarks.yaml"
            ) from None
    return tasks


def load_task_file(path: str | Path) -> list[Task]:
    """The tasks declared in a YAML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            f"{path}: no such task declaration",
            hint="pass a registered task name (`evalsuite tasks`) or an existing .yaml file",
        ) from None
    return tasks_from_yaml(text, str(path))


def register_task_file(path: str | Path) -> list[Task]:
    """Register every task a YAML file declares (the same declaration twice is harmless); returns them."""
    return [register_task(task) for task in load_task_file(path)]


# ---------------------------------------------------------------- the registry


# A plugin's entry point may name a Task or a TaskDeclaration (e.g. one read from the YAML file it ships).
TASKS: Registry[Task] = Registry(
    "task",
    check=named_instance("task", Task, lambda value: value.to_task() if isinstance(value, TaskDeclaration) else value),
)


def register_task(task: Task, *, replace: bool = False) -> Task:
    """Add a task to the registry; names are unique, stable strings (a different task under a taken name is refused)."""
    TASKS.register(task.name, task, replace=replace)
    return task


def get_task(name: str) -> Task:
    """Look a task up by name; an unknown name gets an error suggesting the closest registered names."""
    return TASKS.get(name)


def task_label(task: str, domain_marks: bool = False) -> str:
    """A benchmark's display name, with † (in-domain) or ⋆ (out-of-domain) for the NQ+HotpotQA training mix; an
    unregistered task is shown by its name."""
    try:
        spec = get_task(task)
    except EvalsuiteError:
        return task
    return spec.display_name + (("†" if spec.in_domain else "⋆") if domain_marks else "")


def list_tasks() -> list[Task]:
    """All registered tasks, in registration order (the shipped ones in the papers' column order, then plugins)."""
    return TASKS.values()


def task_names() -> tuple[str, ...]:
    """Every registered task's name, in registration order: the one task list the export, leaderboard and docs use."""
    return tuple(TASKS.names())


def default_method(tasks: Sequence[Task], fallback: str) -> str:
    """The method the tasks declare (they must agree), else `fallback`."""
    declared = {t.method for t in tasks if t.method is not None}
    if len(declared) > 1:
        listed = ", ".join(f"{t.name}: {t.method}" for t in tasks if t.method is not None)
        raise EvalsuiteError(
            f"the tasks declare different default methods ({listed})", hint="pass --method, or run the tasks separately"
        )
    return declared.pop() if declared else fallback


@contextmanager
def scratch_registry() -> Iterator[None]:
    """Tasks registered inside the block are forgotten after it (tests trying a task out)."""
    with TASKS.scratch():
        yield


def parse_task_list(spec: str) -> list[Task]:
    """Parse a comma-separated task list such as 'nq,hotpotqa'; an item ending in .yaml/.yml is a task declaration
    file, whose tasks are registered and taken."""
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise EvalsuiteError("no task given", hint="pass --tasks nq,hotpotqa (see `evalsuite tasks`)")
    chosen: list[Task] = []
    for name in names:
        chosen.extend(register_task_file(name) if name.endswith((".yaml", ".yml")) else [get_task(name)])
    return chosen


def resolve_task(spec: str) -> Task:
    """One task by name, or the one task a YAML declaration file declares (registered)."""
    if not spec.endswith((".yaml", ".yml")):
        return get_task(spec)
    declared = register_task_file(spec)
    if len(declared) != 1:
        raise DataError(
            f"{spec} declares {len(declared)} tasks; one is needed here",
            hint="pass one task's declaration file, or its name",
        )
    return declared[0]


def _register_shipped() -> None:
    from importlib import resources

    text = resources.files("evalsuite.tasks").joinpath("benchmarks.yaml").read_text(encoding="utf-8")
    for task in tasks_from_yaml(text, "evalsuite/tasks/benchmarks.yaml"):
        register_task(task)


_register_shipped()
