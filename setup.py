"""The wheel's package list, found instead of kept by hand: every package under evalsuite/ (so a new method package
ships without editing any list) and the two top-level folders that install inside the evalsuite namespace
(pyproject.toml's [tool.setuptools.package-dir]). Everything else about the build is in pyproject.toml."""

import tomllib
from pathlib import Path

from setuptools import find_packages, setup


def packages() -> list[str]:
    mapped = tomllib.loads((Path(__file__).parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return find_packages(include=["evalsuite", "evalsuite.*"]) + sorted(mapped["package-dir"])


if __name__ == "__main__":
    setup(packages=packages())
