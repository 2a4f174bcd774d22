"""evalsuite: evaluation, comparison and reproduction of search-augmented LLM agents."""

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from importlib.machinery import ModuleSpec
from importlib.metadata import PackageNotFoundError, version
from importlib.util import spec_from_file_location
from pathlib import Path
from typing import Any

try:
    __version__ = version("evalsuite")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+source"

# Subpackages whose files live in the repository's top-level folders. pyproject.toml's package-dir installs them
# inside evalsuite (a wheel has evalsuite/baselines/...); from a source tree on PYTHONPATH, the finder below maps
# the same names to the same folders, so `import evalsuite.baselines` works both ways.
SOURCE_FOLDERS = {
    "evalsuite.baselines": "baselines",
    "evalsuite.leaderboard_data": "leaderboard",
}


class SourceTreeFinder:
    """Import hook for a source checkout: `evalsuite.<name>` -> the repository's top-level `<folder>/`."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(self, fullname: str, path=None, target=None) -> ModuleSpec | None:
        folder = SOURCE_FOLDERS.get(fullname)
        if folder is None:
            return None
        init = self.root / folder / "__init__.py"
        return spec_from_file_location(fullname, init) if init.is_file() else None


def _install_source_tree_finder() -> None:
    package = Path(__file__).resolve().parent
    installed = (package / "baselines").is_dir()  # a wheel carries the folders inside the package
    if installed or not (package.parent / "baselines" / "__init__.py").is_file():
        return
    if not any(isinstance(finder, SourceTreeFinder) for finder in sys.meta_path):
        # First, so this checkout wins over an editable install of another checkout (PYTHONPATH=worktree).
        sys.meta_path.insert(0, SourceTreeFinder(package.parent))


_install_source_tree_finder()


def lazy_attributes(package: str, defined_in: Mapping[str, Iterable[str]]) -> Callable[[str], Any]:
    """A package's module `__getattr__` (PEP 562) that re-exports names lazily: `defined_in` maps each module to
    the names it defines; a name's module is imported on the name's first use, and the name then kept in the package.
    Importing one module of the package (which runs its `__init__.py` first) then loads none of the others."""
    module_of = {name: module for module, names in defined_in.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups find it without this function
        return value

    return __getattr__


__all__ = ["__version__", "lazy_attributes"]
