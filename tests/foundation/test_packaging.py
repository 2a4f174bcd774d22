"""The wheel's contents are declared in pyproject.toml; these checks keep the declaration in step with the folders.

(`.ci/run` builds the wheel, installs it in a clean virtual environment and runs the commands that read packaged
files; these fast checks catch a forgotten package or data file before that.)
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import evalsuite
from evalsuite.errors import DataError
from evalsuite.leaderboard.results import LOCK_FILE
from evalsuite.reported import reported_folders
from evalsuite.resources import method_configs_dir, packaged_path, packaged_recipe_config

REPO = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
# Files of a data folder that are deliberately not shipped (how the seeded entries were made).
NOT_SHIPPED = ("leaderboard/seed/",)


def tracked(folder: str) -> list[str]:
    """The folder's files, as a clone has them (no caches, no `leaderboard add` lock; works in a copy without .git too)."""
    files = (p for p in (REPO / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != LOCK_FILE)
    return sorted(str(p.relative_to(REPO)) for p in files)


def package_folder(package: str) -> Path:
    mapped = SETUPTOOLS["package-dir"].get(package)
    return REPO / mapped if mapped else REPO / package.replace(".", "/")


def declared_packages() -> set[str]:
    """The packages setup.py gives setuptools (found, not listed: a new method package needs no edit)."""
    spec = importlib.util.spec_from_file_location("evalsuite_setup", REPO / "setup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not as __main__: defines packages() without building anything
    return set(module.packages())


def test_every_code_folder_is_a_declared_package_and_the_mapping_matches_the_source_finder():
    code = {str(p.parent.relative_to(REPO)).replace("/", ".") for p in (REPO / "evalsuite").rglob("*.py")}
    code = {c for c in code if "__pycache__" not in c}
    declared = declared_packages()
    assert "packages" not in SETUPTOOLS, "the package list is found by setup.py, not kept in pyproject.toml"
    assert code - declared == set(), "a folder of modules without __init__.py is not found by setup.py"
    assert SETUPTOOLS["package-dir"] == evalsuite.SOURCE_FOLDERS
    assert declared == code | set(evalsuite.SOURCE_FOLDERS)
    for folder in evalsuite.SOURCE_FOLDERS.values():
        assert (REPO / folder / "__init__.py").is_file()  # setuptools' editable finder needs a regular package


def test_every_code_folder_is_a_regular_package():
    """Each folder of modules has an `__init__.py`: none is a namespace package (`agent/` and `training/` were)."""
    folders = {p.parent for p in (REPO / "evalsuite").rglob("*.py") if "__pycache__" not in p.parts}
    namespace = sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").is_file())
    assert namespace == [], "add an __init__.py to these folders"


@pytest.mark.parametrize("package", sorted(SETUPTOOLS["package-data"]))
def test_every_non_python_file_of_a_package_is_shipped(package):
    folder = package_folder(package)
    shipped = {p for pattern in SETUPTOOLS["package-data"][package] for p in folder.glob(pattern) if p.is_file()}
    wanted = {REPO / f for f in tracked(str(folder.relative_to(REPO))) if not f.endswith(".py") and not f.startswith(NOT_SHIPPED)}
    assert wanted - shipped == set()


def test_source_tree_imports_map_to_the_top_level_folders_and_install_no_top_level_module():
    import evalsuite.baselines

    assert Path(evalsuite.baselines.__file__) == REPO / "baselines" / "__init__.py"
    assert reported_folders()["search-p1"] == REPO / "evalsuite" / "methods" / "search_p1" / "reported"
    assert method_configs_dir("search-r1") == REPO / "evalsuite" / "methods" / "search_r1" / "configs"
    assert method_configs_dir("no-such-method") is None
    script = "import sys, evalsuite.agent.method as m; m.list_methods(); print('baselines' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_packaged_resources_by_name_and_a_missing_one_names_the_fix():
    assert packaged_recipe_config("search-r1", "cpu_smoke") == REPO / "evalsuite/methods/search_r1/configs/cpu_smoke.yaml"
    assert packaged_recipe_config("search-r1", "oases/gpu.yaml") == REPO / "evalsuite/methods/oases/configs/gpu.yaml"
    assert packaged_recipe_config("search-r1", "nope") is None
    with pytest.raises(DataError) as err:
        packaged_path("evalsuite.leaderboard_data", "no-such-entry")
    assert err.value.message == f"{REPO / 'leaderboard/no-such-entry'}: packaged resource is missing"
    assert "reinstall" in err.value.hint
