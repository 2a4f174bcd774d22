"""The package's imports: no module imports one of a higher layer, and no modules import each other in a cycle.

The layers are the table under "## Layers" in docs/architecture.md, highest first; each row lists its files and
folders (`evalsuite/cli/`, `evalsuite/scoring.py`). A module belongs to the row with the longest path that holds
it, so a file can sit in a lower layer than the rest of its folder (`evalsuite/runs/schema.py`). The package is
evalsuite/ and the folder installed inside it (`baselines/` is `evalsuite.baselines`).

Every `import` counts wherever it stands: at module level, inside a function (a lazy import is still a
dependency), under `if TYPE_CHECKING:` for the layering. A cycle is one Python would run into: imports under
`if TYPE_CHECKING:` never execute and are left out of the cycle check. `from a import b` depends on the module
`a.b` when there is one, else on `a`. Lazy registry targets (`"module:Class"` strings) are not imports: the
registries of backends and methods name their built-ins that way so that they import none of them.
"""

from __future__ import annotations

import ast
import graphlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalsuite import SOURCE_FOLDERS

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "architecture.md"


@dataclass(frozen=True)
class Layer:
    name: str
    rank: int  # 0 is the lowest
    paths: tuple[str, ...]  # repository paths: `dir/` folders or `.py` files


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module
    path: str  # importing file, repository-relative
    line: int
    type_only: bool
    named: str = ""  # the module the statement names, when no such module exists (a stale import after a move)
    in_function: bool = False  # inside a def: runs when called, not when the module is imported

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def read_layers(text: str) -> list[Layer]:
    """The rows of the first table under `## Layers`, highest first, as layers ranked from the bottom."""
    section = text.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    if len(rows) < 3:
        raise AssertionError(f"{ARCHITECTURE}: no layer table under '## Layers'")
    body = [row.split("|")[1:3] for row in rows[2:]]  # after the header and its --- line
    return [
        Layer(name.strip(), len(body) - 1 - index, tuple(re.findall(r"`([^`]+)`", paths)))
        for index, (name, paths) in enumerate(body)
    ]


def package_modules(root: Path, folders: dict[str, str]) -> dict[str, Path]:
    """Module name → file for every .py under the package folders (`folders`: folder → package name)."""
    modules: dict[str, Path] = {}
    for folder, package in folders.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _function_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def module_imports(root: Path, modules: dict[str, Path], prefix: str) -> list[Import]:
    """Every import of a package module by a package module (self-imports left out)."""
    found: list[Import] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        type_only = _type_checking_lines(tree)
        in_function = _function_lines(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
            else:
                continue
            stated = node.module if isinstance(node, ast.ImportFrom) and not node.level else None
            for name in dict.fromkeys(names):
                named = name if isinstance(node, ast.Import) else (stated or name)
                while name and name not in modules:  # a name outside the package's modules: its longest module
                    name = name.rpartition(".")[0]
                if name.split(".")[0] == prefix and name != module:
                    rel = path.relative_to(root).as_posix()
                    missing = named if named.split(".")[0] == prefix and named not in modules else ""
                    line = node.lineno
                    found.append(Import(module, name, rel, line, line in type_only, missing, line in in_function))
    return found


def layer_of(path: str, layers: list[Layer]) -> Layer | None:
    """The layer whose longest declared path holds `path`."""
    best: tuple[int, Layer] | None = None
    for layer in layers:
        for declared in layer.paths:
            if path == declared or (declared.endswith("/") and path.startswith(declared)):
                if best is None or len(declared) > best[0]:
                    best = (len(declared), layer)
    return best[1] if best else None


def back_edges(imports: list[Import], files: dict[str, str], layers: list[Layer]) -> list[str]:
    """One line per import of a module from a higher layer than the importer's."""
    problems = []
    for item in imports:
        source, target = layer_of(item.path, layers), layer_of(files[item.target], layers)
        if source and target and target.rank > source.rank:
            problems.append(f"{item.where}: {item.source} ({source.name}) imports {item.target} ({target.name}), a higher layer")
    return problems


def parent_package_edges(imports: list[Import], files: dict[str, str], layers: list[Layer]) -> list[str]:
    """One line per import that runs when a module's parent package is imported and is of a higher layer.

    Importing `a.b.c` first runs `a/__init__.py` and `a/b/__init__.py`: what they import at module level is loaded
    with `a.b.c`, so for a module in a lower layer than its folder (`runs/schema.py`) those imports count as its own.
    """
    problems = []
    for module, path in files.items():
        layer = layer_of(path, layers)
        parents = [module.rsplit(".", depth)[0] for depth in range(1, module.count(".") + 1)]
        for item in imports:
            if item.source not in parents or item.type_only or item.in_function or layer is None:
                continue
            target = layer_of(files[item.target], layers)
            if target and target.rank > layer.rank:
                problems.append(
                    f"{item.where}: importing {module} ({layer.name}) runs {item.source}, "
                    f"which imports {item.target} ({target.name}), a higher layer"
                )
    return problems


def find_cycles(imports: list[Import]) -> list[list[str]]:
    """The import lines of each cycle among the modules, one list per cycle (an edge is reported in one cycle only)."""
    graph: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], str] = {}
    for item in imports:
        if not item.type_only:
            graph.setdefault(item.source, set()).add(item.target)
            lines.setdefault((item.source, item.target), item.where)
    cycles = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
            return cycles
        except graphlib.CycleError as exc:
            cycle = exc.args[1]  # each node imports the one before it; the first repeats at the end
            edges = list(zip(cycle[1:], cycle))
            cycles.append([f"{lines[edge]}: {edge[0]} imports {edge[1]}" for edge in edges])
            for importer, imported in edges:
                graph[importer].discard(imported)


def _source_tree() -> tuple[list[Layer], dict[str, Path], list[Import]]:
    layers = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
    folders = {folder: package for package, folder in SOURCE_FOLDERS.items()}
    folders["evalsuite"] = "evalsuite"
    modules = package_modules(REPO, folders)
    return layers, modules, module_imports(REPO, modules, "evalsuite")


def test_every_declared_path_exists_and_every_module_has_a_layer():
    layers, modules, _ = _source_tree()
    missing = [f"{layer.name}: {path}" for layer in layers for path in layer.paths if not (REPO / path).exists()]
    assert not missing, f"docs/architecture.md's layer table names paths that do not exist: {missing}"
    unplaced = [path.relative_to(REPO).as_posix() for path in modules.values() if layer_of(path.relative_to(REPO).as_posix(), layers) is None]
    assert not unplaced, f"modules in no layer (add them to the layer table of docs/architecture.md): {unplaced}"


def test_every_import_names_a_module_that_exists():
    _, _, imports = _source_tree()
    stale = [f"{item.where}: {item.named} is no module of the package" for item in imports if item.named]
    assert not stale, "imports of modules that do not exist (moved or removed?):\n" + "\n".join(stale)


def test_no_module_imports_a_higher_layer():
    layers, modules, imports = _source_tree()
    files = {name: path.relative_to(REPO).as_posix() for name, path in modules.items()}
    problems = back_edges(imports, files, layers)
    assert not problems, "imports against the layers of docs/architecture.md:\n" + "\n".join(problems)


def test_no_parent_package_loads_a_higher_layer():
    layers, modules, imports = _source_tree()
    files = {name: path.relative_to(REPO).as_posix() for name, path in modules.items()}
    problems = parent_package_edges(imports, files, layers)
    assert not problems, "__init__ files loading a higher layer than a module inside them:\n" + "\n".join(problems)


RECORDS_MODULE = "evalsuite.runs.schema"


def test_importing_the_records_module_loads_nothing_above_it():
    """In a fresh interpreter, `import evalsuite.runs.schema` loads only the records module, its parent packages,
    modules of lower layers, the standard library, pydantic and what pydantic requires."""
    layers, modules, _ = _source_tree()
    files = {name: path.relative_to(REPO).as_posix() for name, path in modules.items()}
    script = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        f"import {RECORDS_MODULE}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
    loaded = json.loads(done.stdout)

    records = layer_of(files[RECORDS_MODULE], layers)
    assert records is not None and records.name == "records"
    parents = {RECORDS_MODULE.rsplit(".", depth)[0] for depth in range(1, RECORDS_MODULE.count(".") + 1)}
    above = [
        name
        for name in loaded
        if name in files and name != RECORDS_MODULE and name not in parents
        if (layer := layer_of(files[name], layers)) is None or layer.rank >= records.rank
    ]
    assert not above, f"importing {RECORDS_MODULE} loads modules of its own or a higher layer: {above}"
    assert RECORDS_MODULE in loaded and "evalsuite.runs.store" not in loaded

    # pydantic's own requirements (`annotated-types>=0.6.0` → annotated_types), its extras left out
    required = [req for req in importlib.metadata.requires("pydantic") or [] if "extra ==" not in req]
    names = {re.split(r"[\s<>=!~;\[(]", req, maxsplit=1)[0].replace("-", "_").lower() for req in required}
    allowed = {"evalsuite", "pydantic", *names}
    tops = {name.split(".")[0] for name in loaded if not name.startswith("_sysconfigdata")}  # sysconfig's data
    outside = sorted(tops - set(sys.stdlib_module_names) - allowed)
    assert not outside, f"importing {RECORDS_MODULE} loads packages besides pydantic and the stdlib: {outside}"


def test_the_lazy_names_of_evalsuite_runs_resolve():
    import evalsuite.runs

    missing = [name for name in evalsuite.runs.__all__ if getattr(evalsuite.runs, name, None) is None]
    assert not missing, f"evalsuite.runs names these in __all__ but does not give them: {missing}"
    with pytest.raises(AttributeError, match="no attribute 'RunDirectry'"):
        evalsuite.runs.RunDirectry  # noqa: B018


def test_no_import_cycle():
    _, _, imports = _source_tree()
    cycles = find_cycles(imports)
    assert not cycles, "import cycles:\n" + "\n\n".join("\n".join(cycle) for cycle in cycles)


# The checker on a small package with known faults, so the checks above can fail.
TABLE = """# Architecture

## Layers

| layer | packages | what it owns |
|---|---|---|
| top | `pkg/top/` | the upper layer |
| bottom | `pkg/low.py`, `pkg/__init__.py`, `pkg/low_pkg/` | the lower layer |

## Next section
"""


Checked = tuple[list[Layer], dict[str, str], list[Import]]


def _checked_package(root: Path, table: str, sources: dict[str, str]) -> Checked:
    """The layers, module files and imports of the package `pkg` written from `sources` (file → text) under root."""
    for name, text in sources.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    modules = package_modules(root, {"pkg": "pkg"})
    files = {name: path.relative_to(root).as_posix() for name, path in modules.items()}
    return read_layers(table), files, module_imports(root, modules, "pkg")


@pytest.fixture
def faulty_package(tmp_path: Path) -> Checked:
    return _checked_package(tmp_path, TABLE, {
        "pkg/__init__.py": "",
        "pkg/low.py": "def f():\n    from pkg.top.a import g  # a lazy import of the upper layer\n",
        "pkg/low_pkg/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.top import a\n",
        "pkg/top/__init__.py": "",
        "pkg/top/a.py": "from . import b\nfrom pkg import low_pkg\n\n\ndef g():\n    pass\n",
        "pkg/top/b.py": "def h():\n    import pkg.top.a\n\n\ndef k():\n    from pkg.gone import x\n",
    })


def test_the_checker_finds_lazy_and_type_only_back_edges(faulty_package):
    layers, files, imports = faulty_package
    assert [layer.name for layer in sorted(layers, key=lambda layer: layer.rank)] == ["bottom", "top"]
    assert back_edges(imports, files, layers) == [
        "pkg/low.py:2: pkg.low (bottom) imports pkg.top.a (top), a higher layer",
        "pkg/low_pkg/__init__.py:3: pkg.low_pkg (bottom) imports pkg.top.a (top), a higher layer",
    ]


def test_the_checker_finds_a_parent_package_that_loads_a_higher_layer(tmp_path: Path):
    table = TABLE.replace("`pkg/low_pkg/`", "`pkg/low_pkg/`, `pkg/top/records.py`")
    # pkg.top's module-level import runs with `import pkg.top.records`; its lazy and TYPE_CHECKING imports do not
    top_init = (
        "from typing import TYPE_CHECKING\nfrom pkg.top import a\nif TYPE_CHECKING:\n    from pkg.top import b\n"
        "def __getattr__(name):\n    from pkg.top import b\n    return b\n"
    )
    layers, files, imports = _checked_package(tmp_path, table, {
        "pkg/__init__.py": "",
        "pkg/low.py": "",
        "pkg/low_pkg/__init__.py": "",
        "pkg/top/__init__.py": top_init,
        "pkg/top/a.py": "",
        "pkg/top/b.py": "",
        "pkg/top/records.py": "from pkg import low\n",
    })
    assert back_edges(imports, files, layers) == []
    assert parent_package_edges(imports, files, layers) == [
        "pkg/top/__init__.py:2: importing pkg.top.records (bottom) runs pkg.top, "
        "which imports pkg.top.a (top), a higher layer"
    ]


def test_the_checker_finds_a_cycle_through_a_relative_and_a_lazy_import(faulty_package):
    _, _, imports = faulty_package
    # pkg.top.a <-> pkg.low_pkg is a cycle only through an import that never runs (TYPE_CHECKING): not reported
    [cycle] = find_cycles(imports)
    assert sorted(cycle) == ["pkg/top/a.py:1: pkg.top.a imports pkg.top.b", "pkg/top/b.py:2: pkg.top.b imports pkg.top.a"]
    assert find_cycles([i for i in imports if i.source != "pkg.top.b"]) == []


def test_the_checker_finds_an_import_of_a_module_that_is_gone(faulty_package):
    _, _, imports = faulty_package
    assert [(item.where, item.named) for item in imports if item.named] == [("pkg/top/b.py:6", "pkg.gone")]
