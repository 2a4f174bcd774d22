"""The settings that make runs comparable, declared once: what each is called, how it is read from a run's setting
(`runs.run_setting.RunSetting`) and which checks and views it takes part in.

Every reader selects from `COMPARABLE_SETTINGS` by its use, never by a list of its own: `--resume` and
`evalsuite merge` refuse a run whose values differ (`agent/resume_check.py`), `evalsuite table` marks a row whose
values differ from the baseline's (`tables/sources.py`), leaderboard verification holds a submission's declared
setting to every run manifest (`leaderboard/verification/`) and the site's run card shows the manifest's values
(`leaderboard/site.py`). The readers legitimately take different subsets: a resume compares everything that can
change a record, a merge all of that but the shard, a table what a reader needs to judge two rows.

A setting may be read three ways, each reader taking the one its question needs: `identity`, what must be equal for
two runs to hold the same records (the retriever's index hash); `shown`, how a table prints it (the retriever's kind
and known encoder); `recorded`, what a manifest says of a setting a submission declares (the names the retriever goes
by). `shown` and `recorded` default to `identity`.

Backend options are classified by the ones each backend class declares as only changing how a run goes (speed,
timeouts, credentials), never what it generates (`Backend.operational_options`); every other option, including ones
its backend does not declare, counts as changing the results, so a resume with a different or an added unknown
option is refused rather than mixed.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalsuite.runs.run_setting import RunSetting

Reader = Callable[[RunSetting], Any]


class Use(enum.Enum):
    """A check or view that compares or shows runs' settings."""

    RESUME = "resume"  # `evalsuite run --resume` refuses a run directory whose value differs
    MERGE = "merge"  # `evalsuite merge` refuses shards (or seeds) whose values differ
    TABLE = "table"  # `evalsuite table` marks a row whose value differs from the baseline's, and prints each
    LEADERBOARD = "leaderboard"  # a submission declares it; verification holds it to every run manifest
    # the paper check counts it as a difference when a submission does not declare it: a paper states it as a number
    PAPER_LIMIT = "paper limit"
    SITE = "site"  # the leaderboard site's run card shows it (its name is the Manifest field)


@dataclass(frozen=True)
class ComparableSetting:
    """One setting: its name in messages and records, its label for people, how each reader reads it, its uses."""

    name: str
    label: str
    uses: frozenset[Use]
    identity: Reader
    shown: Reader | None = None
    recorded: Reader | None = None
    # The label a paper table's footnote gives it where that differs ("max turns" there, "turn limit" on the site).
    table_label: str | None = None

    def shown_value(self, setting: RunSetting) -> Any:
        return (self.shown or self.identity)(setting)

    def recorded_value(self, setting: RunSetting) -> Any:
        return (self.recorded or self.identity)(setting)

    def label_in(self, use: Use) -> str:
        return self.table_label if use is Use.TABLE and self.table_label is not None else self.label


# The backend-info key every run has that changes its speed, never its text: the rollout schedule (turn-synchronous
# or asynchronous) sends the same requests either way. The rest are declared by each backend class
# (`Backend.operational_options`); anything not declared (top_p, repeat_penalty, model_name, n_ctx, seed, dtype, an
# option a future backend adds, ...) must match.
RUN_OPERATIONAL = frozenset({"schedule"})
# Backend-info keys compared under "model" (the model's identity) rather than "backend", or pure bookkeeping (why
# `evalsuite run` chose the backend: the backend itself is compared).
_NOT_BACKEND_SETTINGS = frozenset({"model", "base_url", "examples", "chosen_by"})


def operational_options(backend: str | None) -> frozenset[str]:
    """The options and backend-info keys of `backend` that may differ on resume and merge: the run's own and those
    its class declares. A backend that is not registered (a plugin no longer installed) declares none."""
    from evalsuite.models.registry import BACKENDS

    if backend is None or backend not in BACKENDS:
        return RUN_OPERATIONAL
    return RUN_OPERATIONAL | BACKENDS.get(backend).operational_options


def generation_options(options: dict[str, Any], backend: str | None) -> dict[str, Any]:
    """The options of `backend` that can change what it generates (all it does not declare operational)."""
    operational = operational_options(backend)
    return {key: value for key, value in sorted(options.items()) if key not in operational}


def backend_identity(setting: RunSetting) -> dict[str, Any]:
    """The backend's name, version and every setting it reports or was given that can change a generation."""
    backend = setting.backend.model_dump(exclude_none=True)
    options = backend.pop("options", None) or {}
    operational = operational_options(setting.backend.backend)
    settings = {
        key: value for key, value in backend.items() if key not in operational and key not in _NOT_BACKEND_SETTINGS
    }
    generation = generation_options(options, setting.backend.backend)
    return {**settings, **{f"option {key}": value for key, value in generation.items()}}


_COMPARED = frozenset({Use.RESUME, Use.MERGE})

# The one declaration, in the order every reader lists them.
COMPARABLE_SETTINGS: tuple[ComparableSetting, ...] = (
    # A model file's or directory's hash; for a name (hub model, endpoint) the name plus the hub commit it resolved
    # to, or the model the backend resolved it to (an endpoint URL plus the model name that server reports).
    ComparableSetting("model", "model", _COMPARED | {Use.SITE}, lambda s: s.model.identity(served=s.backend.model)),
    ComparableSetting("backend", "backend", _COMPARED | {Use.SITE}, backend_identity),
    ComparableSetting("method", "method", _COMPARED | {Use.LEADERBOARD, Use.SITE}, lambda s: s.method),
    ComparableSetting("prompt_template_hash", "prompt template hash", _COMPARED, lambda s: s.prompt_template_hash),
    ComparableSetting("decoding", "decoding", _COMPARED | {Use.SITE}, lambda s: s.decoding),
    # Not compared on resume and merge: the retriever's index hash already identifies the corpus it was built from.
    # Tables and the leaderboard identify it by content (a known corpus's name only when passages and hash match).
    ComparableSetting(
        "corpus",
        "corpus",
        frozenset({Use.TABLE, Use.LEADERBOARD, Use.SITE}),
        lambda s: s.corpus,
        shown=lambda s: s.corpus_label(),
    ),
    # Compared by the index searched; shown by its kind and known encoder; a submission declares it by a name it goes
    # by (its kind, "dense", or its known encoder, "e5").
    ComparableSetting(
        "retriever",
        "retriever",
        _COMPARED | {Use.TABLE, Use.LEADERBOARD, Use.SITE},
        lambda s: s.retriever.index_hash or s.retriever.spec,
        shown=lambda s: s.retriever.label(),
        recorded=lambda s: s.retriever.keys(),
    ),
    ComparableSetting(
        "topk", "top-k", _COMPARED | {Use.TABLE, Use.LEADERBOARD, Use.PAPER_LIMIT, Use.SITE}, lambda s: s.topk
    ),
    ComparableSetting(
        "max_turns",
        "turn limit",
        _COMPARED | {Use.TABLE, Use.LEADERBOARD, Use.PAPER_LIMIT, Use.SITE},
        lambda s: s.max_turns,
        table_label="max turns",
    ),
    ComparableSetting("tasks", "tasks", _COMPARED, lambda s: s.tasks),
    ComparableSetting("splits", "splits", _COMPARED | {Use.SITE}, lambda s: s.splits),
    ComparableSetting("subset", "subset", _COMPARED | {Use.TABLE, Use.SITE}, lambda s: s.subset),
    ComparableSetting("subset_ids_hash", "subset ids hash", _COMPARED, lambda s: s.subset_ids_hash),
    # a hash of the rows each task evaluates, so an edited question or gold answer is caught, not just a new file
    ComparableSetting("task rows", "task rows", _COMPARED, lambda s: s.task_rows),
    # a resume continues one shard; a merge combines different ones
    ComparableSetting("shard", "shard", frozenset({Use.RESUME}), lambda s: s.shard),
)
_BY_NAME = {setting.name: setting for setting in COMPARABLE_SETTINGS}


def settings_for(use: Use) -> tuple[ComparableSetting, ...]:
    """The settings `use` takes part in, in the declaration's order."""
    return tuple(setting for setting in COMPARABLE_SETTINGS if use in setting.uses)


def names_for(use: Use) -> tuple[str, ...]:
    """The names of the settings `use` takes part in, in the declaration's order."""
    return tuple(setting.name for setting in settings_for(use))


def comparable_setting(name: str) -> ComparableSetting:
    """The declared setting called `name` (a `KeyError` for an undeclared one: a programming error)."""
    return _BY_NAME[name]


def recorded_values(setting: RunSetting) -> dict[str, Any]:
    """What a run records of each setting a submission declares: method, corpus (identified by content), retriever
    (its names and known encoder), top-k and turns. An evalsuite run records them all (None or no retriever: not
    used); an import leaves out what the imported file does not say."""
    values = {field.name: field.recorded_value(setting) for field in settings_for(Use.LEADERBOARD)}
    if setting.kind == "import":
        values = {k: v for k, v in values.items() if v not in (None, set())}
    return values
