"""Files that ship inside the package, found through importlib.resources.

A wheel carries them under `evalsuite/` (the repository's top-level leaderboard/ is installed as
evalsuite.leaderboard_data; a method's recipe configs and its paper's transcribed tables are folders of its method
package); a source checkout or an editable install finds the same folders through the same package names. Nothing
here reads the current directory.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from evalsuite.errors import DataError
from evalsuite.registry import canonical_name, method_packages

REINSTALL_HINT = "the installed evalsuite is incomplete; reinstall it (pip install --force-reinstall evalsuite)"


def packaged_path(package: str, *parts: str) -> Path:
    """A file or folder shipped in `package` (e.g. 'evalsuite.results', 'reported') as a real path on disk."""
    try:
        root = resources.files(package)
    except ModuleNotFoundError:
        raise DataError(f"the packaged resource {package} is missing", hint=REINSTALL_HINT) from None
    path = Path(str(root.joinpath(*parts)))
    if not path.exists():
        raise DataError(f"{path}: packaged resource is missing", hint=REINSTALL_HINT)
    return path


def method_folders(folder: str) -> dict[str, Path]:
    """The folder `folder` (`configs`, `reported`) of every method package that has one, by the package's registered
    name (its `NAME`, never the folder's spelling)."""
    found = {}
    for module in method_packages():
        path = Path(str(resources.files(module.__name__).joinpath(folder)))
        if path.is_dir():
            found[canonical_name(getattr(module, "NAME", ""))] = path
    return found


def method_configs_dir(method: str) -> Path | None:
    """A method's shipped recipe configs: the `configs/` folder of the method package whose `NAME` is `method`; None
    for a method that ships none."""
    return method_folders("configs").get(canonical_name(method))


def training_configs_dir() -> Path:
    """The training configs every recipe shares (`evalsuite/training/configs/`: accelerate's launch files)."""
    return packaged_path("evalsuite.training", "configs")


def packaged_recipe_config(method: str, name: str) -> Path | None:
    """A shipped recipe config by name: 'cpu_smoke', 'gpu' or 'search-r1/cpu_smoke' (with or without '.yaml')."""
    stem = name.removesuffix(".yaml")
    folder, _, base = stem.rpartition("/")
    configs = method_configs_dir(folder or method)
    candidate = configs / f"{base}.yaml" if configs is not None else None
    return candidate if candidate is not None and candidate.is_file() else None


def packaged_recipe_config_names(method: str) -> list[str]:
    """The names of a recipe's shipped configs ('cpu_smoke', 'gpu', ...), for a hint."""
    folder = method_configs_dir(method)
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder is not None else []


def site_dir() -> Path:
    """The leaderboard site's Jinja2 templates and static assets."""
    return packaged_path("evalsuite.leaderboard", "site")


def packaged_leaderboard_dir() -> Path:
    """The leaderboard shipped with evalsuite (`leaderboard/` in the repository: entries/ and site.yaml)."""
    return packaged_path("evalsuite.leaderboard_data")
