"""One registry for every kind of named part: tasks, metrics, answer normalizations, methods, backends, rewards and
recipes. Each kind is a `Registry[T]` with the same behaviour, so a contributor learns one set of rules:

- **Lazy targets.** A name may be registered as a `"module:object"` string; the module is imported the first time
  the name is looked up, so a registry imports none of the (possibly heavy) things it lists.
- **One conflict policy.** Registering a different object under a taken name raises `RegistryConflict` (an
  `EvalsuiteError` and a `ValueError`); registering the same object (or an equal one, or the same target string)
  again does nothing, so importing a module twice is harmless; `replace=True` replaces on purpose.
- **One spelling per name.** Names are compared in their canonical form (`canonical_name`: case folded, NFKC, runs
  of spaces, `_` and `-` made one `-`), so a plugin cannot register `search_r1` or `Search-R1` beside `search-r1`:
  a name that canonicalises onto another registered name is a `RegistryConflict`.
- **Did-you-mean.** An unknown name raises `evalsuite.errors.unknown_name`'s error, or the registry's own hint for
  names known not to exist (`hints`, e.g. a paper that needs no method of its own).
- **Plugins.** Installed distributions add parts through the entry-point group `evalsuite.<kind>s` (e.g.
  `[project.entry-points."evalsuite.tasks"] toyqa = "toyqa_plugin:TASK"`); the group is read on the first lookup or
  listing, never at import, and each plugin's module is imported only when its name is looked up. A plugin cannot
  silently shadow a built-in: a clash is a `RegistryConflict` naming the distribution.
- **Method packages.** A registry made with `packaged="<kind>"` also holds the parts the packages of
  `evalsuite.methods` name in their `PARTS` (one package per method: its method, reward, recipe, paper setting and
  layout), read on the first lookup or listing like the plugins and before them, each imported only when looked up.
- **Scratch registries.** `with registry.scratch():` forgets whatever the block registered (tests trying a part out).

lm-evaluation-harness's `Registry` and Inspect's registry are the models; this one is deliberately small.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import sys
import unicodedata
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

from evalsuite.errors import EvalsuiteError, unknown_name

T = TypeVar("T")

ENTRY_POINT_PREFIX = "evalsuite."
METHOD_PACKAGES = "evalsuite.methods"


@functools.lru_cache(maxsize=1)
def _installed_entry_points() -> Any:
    """Every installed distribution's entry points, read once per process (one scan of the installed metadata, not
    one per registry: about 30-60 ms each on a machine with a few hundred distributions)."""
    from importlib.metadata import entry_points

    return entry_points()


def method_packages(root: str = METHOD_PACKAGES) -> list[ModuleType]:
    """The method packages under `root` (`evalsuite.methods.<name>`, and those `extra_method_packages` adds), in name
    order; importing one runs only its `__init__`, which holds names and strings."""
    package = importlib.import_module(root)
    infos = sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)
    return [importlib.import_module(f"{root}.{i.name}") for i in infos if i.ispkg and not i.name.startswith("_")]


def packaged_papers(root: str = METHOD_PACKAGES) -> dict[str, dict[str, str]]:
    """Every method package's `PAPER` (its paper's display name and, where the paper is one of the seed texts, the
    seed file: `{"name": "OASES", "seed": "003_….txt"}`), by the package's registered name."""
    return {m.NAME: m.PAPER for m in method_packages(root) if isinstance(getattr(m, "PAPER", None), Mapping)}


@functools.lru_cache(maxsize=None)
def packaged_parts(kind: str, root: str = METHOD_PACKAGES) -> tuple[tuple[str, str], ...]:
    """(name, `module:object`) of every part of `kind` that the packages of `root` name in their `PARTS`.

    The packages are found by name and imported like entry points are (their `__init__` holds names and strings
    only), so the layers below `evalsuite.methods` never import it. A package's `PARTS[kind]` is a target relative to
    the package (`.method:Oases`), registered under the package's `NAME`, or a mapping name -> target (a paper with
    two layouts)."""
    found: list[tuple[str, str]] = []
    for module in method_packages(root):
        part = getattr(module, "PARTS", {}).get(kind)
        if part is None:
            continue
        if not isinstance(part, Mapping) and not isinstance(getattr(module, "NAME", None), str):
            raise EvalsuiteError(
                f"the method package {module.__name__} names its {kind} in PARTS but has no NAME",
                hint=f'add NAME = "<name>" to {module.__name__}/__init__.py, the name its parts are registered under',
            )
        named = part if isinstance(part, Mapping) else {module.NAME: part}
        for name, target in named.items():
            found.append((name, f"{module.__name__}{target}" if target.startswith(".") else target))
    return tuple(found)


# every registry that reads the method packages, so that `extra_method_packages` can have them read again
_PACKAGED_REGISTRIES: weakref.WeakSet[Registry[Any]] = weakref.WeakSet()


@contextmanager
def extra_method_packages(folder: str | Path) -> Iterator[None]:
    """Inside the block, the packages in `folder` are method packages too (importable as `evalsuite.methods.<name>`),
    as if they were in evalsuite/methods/: every registry reads their parts on its next lookup. After the block the
    registries are as they were and the packages are forgotten. For trying a new method out, and for the test that
    adds one without touching evalsuite's files."""
    package = importlib.import_module(METHOD_PACKAGES)
    entry = str(folder)
    added = sorted(p.name for p in Path(folder).iterdir() if (p / "__init__.py").is_file())
    # A package named like one already there would be shadowed by it, and forgetting it afterwards would unload
    # the built-in's modules: every registry would then see new classes under the old names for the rest of the
    # process. Refused before anything changes.
    present = {canonical_name(m.name): m.name for m in pkgutil.iter_modules(package.__path__)}
    clashes = [f"{name} (as {present[canonical_name(name)]})" for name in added if canonical_name(name) in present]
    if clashes:
        raise RegistryConflict(
            f"{folder}: method package {', '.join(clashes)} is already a method package",
            hint="rename the package folder (and its NAME); a method package cannot replace another",
        )
    with ExitStack() as stack:
        for registry in list(_PACKAGED_REGISTRIES):
            stack.enter_context(registry.scratch())
            registry._plugins_loaded = False
        package.__path__.append(entry)
        packaged_parts.cache_clear()
        try:
            yield
        finally:
            package.__path__.remove(entry)
            packaged_parts.cache_clear()
            for name in list(sys.modules):
                if any(name == f"{METHOD_PACKAGES}.{a}" or name.startswith(f"{METHOD_PACKAGES}.{a}.") for a in added):
                    del sys.modules[name]


def canonical_name(name: str) -> str:
    """The form registered names are compared in: `Search-R1`, `search_r1` and `search r1` are all `search-r1`."""
    return re.sub(r"[\s_\-]+", "-", unicodedata.normalize("NFKC", name).casefold().strip())


class RegistryConflict(EvalsuiteError, ValueError):
    """A name already registered with a different object (a ValueError too, for callers that caught the old one)."""


def is_target(value: object) -> bool:
    """Whether `value` is a lazy `module:object` target."""
    return isinstance(value, str) and ":" in value


def load_target(target: str) -> Any:
    """Import `module:attr.path` and return the object it names."""
    module, _, attribute = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def named_instance(kind: str, cls: type, convert: Callable[[Any], Any] | None = None) -> Callable[[str, Any], Any]:
    """A `check` for registries of objects that carry their own `name` (tasks, metrics, recipes): an instance of
    `cls` (after `convert`, e.g. a declaration to its task) registered under its own name."""

    def check(name: str, value: Any) -> Any:
        if convert is not None:
            value = convert(value)
        if not isinstance(value, cls):
            raise EvalsuiteError(
                f"{kind} {name!r} is a {type(value).__name__}, not a {cls.__module__}.{cls.__qualname__}",
                hint=f"point the entry point at a {cls.__qualname__}",
            )
        if getattr(value, "name", None) != name:
            raise EvalsuiteError(
                f"{kind} registered as {name!r} calls itself {getattr(value, 'name', None)!r}",
                hint="register it under its own name",
            )
        return value

    return check


class Registry(Generic[T]):
    """Parts of one kind by stable name. `kind` is the singular word used in messages ("task"); `group` the
    entry-point group plugins use (default `evalsuite.<kind>s`); `check(name, obj)` validates an object when it is
    resolved (a lazy target or a plugin may name anything) and returns it, possibly converted."""

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        check: Callable[[str, Any], T] | None = None,
        hints: Mapping[str, str] | None = None,
        plural: str | None = None,
        packaged: str | None = None,
    ) -> None:
        self.kind = kind
        self.plural = plural or f"{kind}s"
        self.group = group if group is not None else f"{ENTRY_POINT_PREFIX}{self.plural.replace(' ', '_')}"
        self._check = check
        self._hints = dict(hints or {})
        self._entries: dict[str, T | str] = {}
        self._origins: dict[str, str] = {}  # name -> the distribution that added it through an entry point
        self._plugins_loaded = False
        self._packaged = packaged  # the kind of part this registry takes from the method packages (None: none)
        if packaged is not None:
            _PACKAGED_REGISTRIES.add(self)

    # ------------------------------------------------------------------ registering

    def register(self, name: str, value: T | str, *, replace: bool = False, origin: str | None = None) -> T | str:
        """Register `value` (an object, or a lazy `module:object` target) under `name`; returns `value`.

        A taken name is refused unless the value is the same one (nothing changes) or `replace=True`."""
        if not isinstance(name, str) or not name:
            raise EvalsuiteError(f"a {self.kind} needs a non-empty string name, not {name!r}")
        if name in self._entries and not replace and not self._same(name, value):
            known = self._describe(self._entries[name]) + (
                f" from the installed package {self._origins[name]}" if name in self._origins else ""
            )
            new = self._describe(value) + (f" from the installed package {origin}" if origin else "")
            raise RegistryConflict(
                f"{self.kind} {name!r} is already registered as {known}, not {new}",
                hint=f"choose another name, or register with replace=True to replace the {self.kind} on purpose",
            )
        if name not in self._entries:
            self._refuse_lookalike(name, value, origin)
        self._entries[name] = value
        if origin:
            self._origins[name] = origin
        else:
            self._origins.pop(name, None)
        return value

    def _refuse_lookalike(self, name: str, value: Any, origin: str | None) -> None:
        """A new name that is another registered name in another spelling is refused: runs, tables and the
        leaderboard would show the one while the other's object ran."""
        key = canonical_name(name)
        taken = next((known for known in self._entries if canonical_name(known) == key), None)
        if taken is None:
            return
        known = self._describe(self._entries[taken]) + (
            f" from the installed package {self._origins[taken]}" if taken in self._origins else ""
        )
        new = self._describe(value) + (f" from the installed package {origin}" if origin else "")
        raise RegistryConflict(
            f"{self.kind} {name!r} ({new}) is another spelling of the registered {self.kind} {taken!r} ({known})",
            hint="names are compared case-insensitively with '_', '-' and spaces alike; choose another name",
        )

    def decorator(self, name: str, *, replace: bool = False) -> Callable[[T], T]:
        """`@registry.decorator("name")` registers the decorated object."""

        def register(value: T) -> T:
            self.register(name, value, replace=replace)
            return value

        return register

    def unregister(self, name: str) -> None:
        """Forget `name` (no error when it is not registered)."""
        self._entries.pop(name, None)
        self._origins.pop(name, None)

    def _same(self, name: str, value: Any) -> bool:
        known = self._entries[name]
        if known is value or known == value:
            return True
        # a lazy target and the object it names are the same registration
        try:
            if is_target(known) and not is_target(value):
                return self.get(name) is value
            if is_target(value) and not is_target(known):
                return load_target(value) is known
        except Exception:  # noqa: BLE001 - a target that does not import is simply not the same
            return False
        return False

    @staticmethod
    def _describe(value: Any) -> str:
        if isinstance(value, str):
            return value
        qualified = getattr(value, "__qualname__", None)
        if qualified is not None:  # a class or a function
            return f"{getattr(value, '__module__', '?')}:{qualified}"
        shown = repr(value)
        return shown if len(shown) <= 80 else shown[:77] + "..."

    # ------------------------------------------------------------------ looking up

    def get(self, name: str) -> T:
        """The object registered under `name` (a lazy target is imported now); unknown names get a did-you-mean."""
        if name not in self._entries:
            self.load_plugins()
        if name not in self._entries:
            raise self.unknown(name)
        value = self._entries[name]
        if is_target(value):
            value = self._resolve(name, value)  # type: ignore[arg-type]
        return value  # type: ignore[return-value]

    def _resolve(self, name: str, target: str) -> T:
        try:
            value = load_target(target)
        except (ImportError, AttributeError) as exc:
            origin = f" (installed package {self._origins[name]})" if name in self._origins else ""
            raise EvalsuiteError(
                f"{self.kind} {name!r} points at {target}{origin}, which cannot be loaded: {exc}",
                hint=f"reinstall the package that provides it, or fix the target of {name!r}",
            ) from exc
        if self._check is not None:
            value = self._check(name, value)
        self._entries[name] = value
        return value

    def unknown(self, name: str) -> EvalsuiteError:
        """The error for an unknown name: the registry's own hint for it, else the closest known names."""
        error = unknown_name(self.kind, name, self.names())
        hint = self._hints.get(str(name).lower())
        if hint is not None:
            error = EvalsuiteError(error.message, hint=hint)
        if self.plural != f"{self.kind}s" and error.hint and error.hint.startswith(f"known {self.kind}s:"):
            error = EvalsuiteError(
                error.message, hint=error.hint.replace(f"known {self.kind}s:", f"known {self.plural}:", 1)
            )
        return error

    def check(self, name: str) -> None:
        """Refuse an unknown name without loading anything."""
        if name not in self:
            raise self.unknown(name)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self.load_plugins()
        return name in self._entries

    def names(self) -> list[str]:
        """Every registered name, in registration order (plugins after the built-ins)."""
        self.load_plugins()
        return list(self._entries)

    def values(self) -> list[T]:
        """Every registered object, in registration order (lazy targets are imported)."""
        return [self.get(name) for name in self.names()]

    def items(self) -> list[tuple[str, T]]:
        return [(name, self.get(name)) for name in self.names()]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def origin(self, name: str) -> str | None:
        """The installed distribution that added `name` through an entry point, None for the rest."""
        self.load_plugins()
        return self._origins.get(name)

    # ------------------------------------------------------------------ plugins

    def load_plugins(self) -> None:
        """Read the method packages' parts of this kind, then the entry-point group, once: each is registered as a
        lazy target under its name."""
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        conflicts: list[str] = []
        if self._packaged is not None:
            # every part is tried: one clashing package must not leave the others unregistered
            for name, target in packaged_parts(self._packaged):
                try:
                    self.register(name, target)
                except RegistryConflict as exc:
                    conflicts.append(exc.message)
        for point in _installed_entry_points().select(group=self.group) if self.group else ():
            distribution = point.dist.name if point.dist is not None else "an unnamed distribution"
            if not is_target(point.value):
                conflicts.append(
                    f"{distribution}'s {self.kind} {point.name!r} = {point.value!r} is not a module:object target"
                )
                continue
            try:
                self.register(point.name, point.value, origin=distribution)
            except RegistryConflict as exc:
                conflicts.append(exc.message)
        if conflicts:  # the other parts stay registered; the clash is reported once, when first read
            raise RegistryConflict(
                "; ".join(conflicts),
                hint=f"rename the method package's NAME, or uninstall or fix the plugin (group {self.group})",
            )

    # ------------------------------------------------------------------ tests

    @contextmanager
    def scratch(self) -> Iterator[Registry[T]]:
        """Whatever is registered (or replaced, or forgotten) inside the block is undone after it."""
        saved = dict(self._entries), dict(self._origins), self._plugins_loaded
        try:
            yield self
        finally:
            self._entries.clear()
            self._entries.update(saved[0])
            self._origins.clear()
            self._origins.update(saved[1])
            self._plugins_loaded = saved[2]
