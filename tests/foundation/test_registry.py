"""The one `Registry[T]` every kind of named part sits behind: lazy targets, one conflict policy, did-you-mean,
scratch registries, entry-point plugins read on first lookup, and every kind of part actually behind it."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.registry import Registry, RegistryConflict

REPO = Path(__file__).resolve().parents[2]


def test_a_lazy_target_is_imported_on_lookup_and_kept():
    registry: Registry[type] = Registry("thing", group="")
    registry.register("ordered", "collections:OrderedDict")
    assert registry._entries["ordered"] == "collections:OrderedDict"  # nothing imported yet
    import collections

    assert registry.get("ordered") is collections.OrderedDict
    assert registry._entries["ordered"] is collections.OrderedDict


def test_one_conflict_policy():
    registry: Registry[object] = Registry("thing", group="")
    first, second = object(), object()
    registry.register("a", first)
    registry.register("a", first)  # the same object again: nothing happens
    with pytest.raises(RegistryConflict, match="thing 'a' is already registered") as err:
        registry.register("a", second)
    assert isinstance(err.value, ValueError) and "replace=True" in err.value.hint
    registry.register("a", second, replace=True)
    assert registry.get("a") is second
    # a lazy target and the object it names are one registration
    registry.register("od", "collections:OrderedDict")
    registry.register("od", importlib.import_module("collections").OrderedDict)


def test_unknown_names_get_the_closest_known_ones_or_the_registrys_own_hint():
    registry: Registry[int] = Registry("colour", group="", hints={"grey": "spell it gray"})
    for name, value in (("blue", 1), ("green", 2), ("violet", 3)):
        registry.register(name, value)
    with pytest.raises(EvalsuiteError) as err:
        registry.get("gren")
    assert err.value.message == "unknown colour 'gren'" and err.value.hint == "did you mean green?"
    with pytest.raises(EvalsuiteError) as err:
        registry.get("grey")
    assert err.value.hint == "spell it gray"
    with pytest.raises(EvalsuiteError) as err:
        registry.get("zzz")
    assert err.value.hint == "known colours: blue, green, violet"


def test_a_target_that_does_not_load_is_one_error_naming_it():
    registry: Registry[object] = Registry("thing", group="")
    registry.register("gone", "evalsuite.no_such_module:Thing")
    with pytest.raises(EvalsuiteError, match=r"thing 'gone' points at evalsuite.no_such_module:Thing, which cannot be loaded"):
        registry.get("gone")


def test_the_check_refuses_what_is_not_a_part_of_the_kind():
    from evalsuite.models.registry import BACKENDS

    with BACKENDS.scratch():
        BACKENDS.register("odd", "collections:OrderedDict")
        with pytest.raises(EvalsuiteError, match="not a subclass of evalsuite.models.base.Backend"):
            BACKENDS.get("odd")


def test_a_scratch_registry_undoes_additions_and_replacements():
    registry: Registry[int] = Registry("number", group="")
    registry.register("one", 1)
    with registry.scratch():
        registry.register("two", 2)
        registry.register("one", 11, replace=True)
        assert registry.names() == ["one", "two"]
    assert registry.names() == ["one"] and registry.get("one") == 1


def test_every_kind_of_part_is_behind_one_registry():
    from evalsuite.agent.method import METHODS
    from evalsuite.metrics.registry import METRICS, NORMALIZERS
    from evalsuite.models.registry import BACKENDS
    from evalsuite.rewards import REWARDS
    from evalsuite.tasks.registry import TASKS
    from evalsuite.training.recipe import default_registry

    groups = {r.group for r in (METHODS, METRICS, NORMALIZERS, BACKENDS, REWARDS, TASKS, default_registry()._registry)}
    assert groups == {"evalsuite.methods", "evalsuite.metrics", "evalsuite.normalizers", "evalsuite.backends",
                      "evalsuite.rewards", "evalsuite.tasks", "evalsuite.recipes"}
    # no hand-written did-you-mean is left: one in evalsuite.errors
    users = [p.relative_to(REPO).as_posix() for p in (REPO / "evalsuite").rglob("*.py") if "difflib" in p.read_text()]
    assert users == ["evalsuite/errors.py"]


def test_plugins_are_read_on_first_lookup_and_cannot_shadow_a_builtin(tmp_path):
    """A real distribution on sys.path (a .dist-info with entry_points.txt): its entry point is listed, imported
    only when looked up, and one that reuses a built-in name is refused naming the distribution."""
    site = tmp_path / "site"
    (site / "colour_plugin").mkdir(parents=True)
    (site / "colour_plugin" / "__init__.py").write_text("")
    (site / "colour_plugin" / "blue.py").write_text("import sys\nsys.modules['colour_plugin_loaded'] = sys\nBLUE = 4\n")
    (site / "colour_plugin" / "clash.py").write_text("RED = 5\n")
    info = site / "colour_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: colour-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evalsuite.colours]\nblue = colour_plugin.blue:BLUE\nred = colour_plugin.clash:RED\n")
    script = textwrap.dedent("""
        import sys
        from evalsuite.registry import Registry
        registry = Registry("colour")
        registry.register("red", 1)
        assert registry._plugins_loaded is False  # nothing read at construction
        try:
            registry.names()
        except Exception as exc:
            print("conflict:", exc)
        assert "colour_plugin_loaded" not in sys.modules
        print("blue:", registry.get("blue"), registry.origin("blue"), "colour_plugin_loaded" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": f"{site}:{REPO}", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "conflict: colour 'red' is already registered as 1, not colour_plugin.clash:RED from the installed package colour-plugin" in result.stdout
    assert "blue: 4 colour-plugin True" in result.stdout


# --- Issue 37: one spelling per name ------------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["search_r1", "Search-R1", "SEARCH R1", "search--r1", "Ｓearch-r1"])
def test_a_name_that_canonicalises_onto_a_registered_one_is_refused(spelling):
    registry: Registry[int] = Registry("method", group="")
    registry.register("search-r1", 1)
    with pytest.raises(RegistryConflict, match=rf"method {spelling!r} \(2\) is another spelling of the registered method 'search-r1'"):
        registry.register(spelling, 2)
    assert registry.names() == ["search-r1"]


def test_a_plugin_spelling_a_builtin_otherwise_is_refused_naming_its_distribution(tmp_path):
    """A real distribution whose entry points register `search_r1` and `Search-R1` beside the built-in `search-r1`:
    both are refused, naming the distribution; the built-in stays what runs."""
    site = tmp_path / "site"
    (site / "lookalike").mkdir(parents=True)
    (site / "lookalike" / "__init__.py").write_text("FAKE = 7\n")
    info = site / "lookalike-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lookalike\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[evalsuite.methods]\nsearch_r1 = lookalike:FAKE\nSearch-R1 = lookalike:FAKE\n")
    script = textwrap.dedent("""
        from evalsuite.agent.method import METHODS, get_method
        try:
            METHODS.names()
        except Exception as exc:
            print("conflict:", exc)
        print("names:", sorted(n for n in METHODS.names() if "r1" in n.lower()))
        print("runs:", type(get_method("search-r1")).__module__)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env={"PYTHONPATH": f"{site}:{REPO}", "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert "method 'search_r1' (lookalike:FAKE from the installed package lookalike) is another spelling" in result.stdout
    assert "method 'Search-R1' (lookalike:FAKE from the installed package lookalike) is another spelling" in result.stdout
    assert "names: ['r1-searcher', 'search-r1']" in result.stdout
    assert "runs: evalsuite.methods.search_r1.method" in result.stdout


def test_a_method_package_named_like_a_builtin_is_refused_and_leaves_the_registry_intact(tmp_path):
    """Issue 37: a folder holding a package `search_r1` shadowed nothing inside the block, but unloading it afterwards
    removed the built-in's modules, so every later lookup met new classes under the old names. Now it is refused
    before anything changes."""
    from evalsuite.agent.method import get_method
    from evalsuite.registry import extra_method_packages

    before = type(get_method("search-r1"))
    modules = {name for name in sys.modules if name.startswith("evalsuite.methods.search_r1")}
    for folder in ("search_r1", "Search_R1"):
        package = tmp_path / folder / folder
        package.mkdir(parents=True)
        (package / "__init__.py").write_text('NAME = "search-r1"\nPARTS = {"method": ".method:Fake"}\n')
        with pytest.raises(RegistryConflict, match=rf"method package {folder} \(as search_r1\) is already a method package"):
            with extra_method_packages(tmp_path / folder):
                pass
    assert type(get_method("search-r1")) is before
    assert modules <= set(sys.modules)
