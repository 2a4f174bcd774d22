"""The task registry: benchmarks by stable name, with their hub location, eval split and category, and the
choices a task makes for itself (as lm-evaluation-harness task configs do): its default method, the metrics its
examples are scored with and its answer normalization. A task with its own metric registers the metric
(evalsuite.metrics.registry) and names it here; the scorer is never edited."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from evalsuite.errors import EvalsuiteError, unknown_name

Category = Literal["general", "multi-hop"]

FLASHRAG_HUB = "RUC-NLPIR/FlashRAG_datasets"
# Search-R1 trains on the NQ + HotpotQA mix: these are in-domain (†), the rest out-of-domain (⋆).
DEFAULT_IN_DOMAIN = frozenset({"nq", "hotpotqa"})


@dataclass(frozen=True)
class Task:
    """A benchmark: where its rows live and how the Search-R1 protocol evaluates it."""

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
    metrics: tuple[str, ...] | None = None  # registered metric names; None: every default metric
    normalization: str = "squad"  # a registered answer normalization (evalsuite.metrics.registry)

    @property
    def in_domain(self) -> bool:
        return self.name in DEFAULT_IN_DOMAIN


_REGISTRY: dict[str, Task] = {}


def register_task(task: Task) -> Task:
    """Add a task to the registry; names are unique, stable strings."""
    if task.name in _REGISTRY and _REGISTRY[task.name] != task:
        raise ValueError(f"task {task.name!r} is already registered with different settings")
    _REGISTRY[task.name] = task
    return task


def get_task(name: str) -> Task:
    """Look a task up by name; an unknown name gets an error suggesting the closest registered names."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise unknown_name("task", name, sorted(_REGISTRY)) from None


def list_tasks() -> list[Task]:
    """All registered tasks, in registration order."""
    return list(_REGISTRY.values())


def default_method(tasks: Sequence[Task], fallback: str) -> str:
    """The method the tasks declare (they must agree), else `fallback`."""
    declared = {t.method for t in tasks if t.method is not None}
    if len(declared) > 1:
        listed = ", ".join(f"{t.name}: {t.method}" for t in tasks if t.method is not None)
        raise EvalsuiteError(f"the tasks declare different default methods ({listed})",
                             hint="pass --method, or run the tasks separately")
    return declared.pop() if declared else fallback


@contextmanager
def scratch_registry() -> Iterator[None]:
    """Tasks registered inside the block are forgotten after it (tests trying a task out)."""
    saved = dict(_REGISTRY)
    try:
        yield
    finally:
        _REGISTRY.clear()
        _REGISTRY.update(saved)


def parse_task_list(spec: str) -> list[Task]:
    """Parse a comma-separated task list such as 'nq,hotpotqa'."""
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise EvalsuiteError("no task given", hint="pass --tasks nq,hotpotqa (see `evalsuite tasks`)")
    return [get_task(name) for name in names]


for _task in (
    Task("nq", "NQ", "general", "test", hub_config="nq", description="Natural Questions (open)"),
    Task("triviaqa", "TriviaQA", "general", "test", hub_config="triviaqa"),
    Task("popqa", "PopQA", "general", "test", hub_config="popqa"),
    Task("hotpotqa", "HotpotQA", "multi-hop", "dev", hub_config="hotpotqa"),
    Task("2wikimultihopqa", "2Wiki", "multi-hop", "dev", hub_config="2wikimultihopqa"),
    Task("musique", "MuSiQue", "multi-hop", "dev", hub_config="musique"),
    Task("bamboogle", "Bamboogle", "multi-hop", "test", hub_config="bamboogle"),
    Task(
        "adqa",
        "AD-QA (open)",
        "multi-hop",
        "test",
        hub_path=None,
        domain="enterprise",
        description="Open, generated AD-QA-style ad-platform multi-hop QA with its own corpus (docs/adqa.md)",
        packaged_data="adqa/v1",
        extra_splits=("train",),
    ),
):
    register_task(_task)
