"""Shared test fixtures: where the real benchmark data and the seed papers' texts live (never copied into the repo).

Benchmark data: $EVALSUITE_SHARED_DATA, else ../shared/data beside the repository (benchmarks/, corpus/,
trajectories/); the benchmark files alone may also sit in the download cache of `evalsuite data download`. Seed texts:
$EVALSUITE_SHARED_SEEDS, else ../shared/seeds. A test that needs what is absent is skipped, and every such skip
carries the same reason, so the summary prints it once.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings

# CI runs property tests with a fixed derandomized seed so a green run is reproducible; locally they explore freely.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("EVALSUITE_SHARED_DATA") or REPO_ROOT.parent / "shared" / "data")
SEEDS = Path(os.environ.get("EVALSUITE_SHARED_SEEDS") or REPO_ROOT.parent / "shared" / "seeds")
BENCHMARKS = SHARED_DATA / "benchmarks"
CORPUS = SHARED_DATA / "corpus"
TRAJECTORIES = SHARED_DATA / "trajectories"

# The benchmark files the tests read: the download cache stands in for the shared benchmarks/ only when it holds them
# all (the hub serves the eval splits; the subsamples and context files are copied in by hand).
SUITE_BENCHMARKS = ("bamboogle.test.jsonl", "nq.test.jsonl", "nq.test_sub1000.jsonl", "triviaqa.test_sub1000.jsonl",
                    "hotpotqa.dev_ctx.jsonl", "musique.dev_ctx.jsonl")
NO_DATA = ("real data absent (benchmarks, corpus, trajectories): set EVALSUITE_SHARED_DATA or place it at ../shared/data;"
           " benchmark files alone may sit in the `evalsuite data download` cache")
NO_SEEDS = "seed paper texts absent: set EVALSUITE_SHARED_SEEDS or place them at ../shared/seeds"


def _skip_unless(present: bool, reason: str) -> None:
    # One call site for every skip, so `-ra` folds each reason into a single summary line.
    if not present:
        pytest.skip(reason)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing, or fails to import
        return False


def _extra_reason(extra: str, missing: list[str]) -> str:
    packages = dict.fromkeys(module.split(".")[0] for module in missing)
    return f"needs the [{extra}] extra ({', '.join(packages)} not installed)"


def _missing(modules: tuple[str, ...]) -> list[str]:
    return [module for module in modules if not _installed(module)]


def requires_extra(extra: str, *modules: str) -> pytest.MarkDecorator:
    """Skip a test (or, as `pytestmark`, a module) unless `modules` are installed, naming the optional extra of
    pyproject.toml that installs them: a test of an extra is skipped where the extra is absent, never failed."""
    missing = _missing(modules)
    return pytest.mark.skipif(bool(missing), reason=_extra_reason(extra, missing or list(modules)))


def requires_one_extra_of(modules: dict[str, str]) -> pytest.MarkDecorator:
    """Skip unless the module of one of these extras (extra → module) is installed: for what evalsuite chooses by
    what is there (a `.gguf` runs on xllamacpp, else on llama-cpp-python)."""
    extras = " or ".join(f"[{extra}]" for extra in modules)
    reason = f"needs the {extras} extra ({', '.join(modules.values())} not installed)"
    return pytest.mark.skipif(not any(_installed(module) for module in modules.values()), reason=reason)


def skip_without_extra(extra: str, *modules: str) -> None:
    """Skip here (in a fixture, a test, or at module level: the whole file) unless `modules` are installed, naming
    the extra that installs them; nothing is imported."""
    if missing := _missing(modules):
        pytest.skip(_extra_reason(extra, missing), allow_module_level=True)


def import_extra(extra: str, module: str) -> ModuleType:
    """`module`, imported, or skip naming the extra that installs it; at module level it skips the whole file (for a
    test file that imports a reference implementation, statsmodels or markupsafe, at its top)."""
    skip_without_extra(extra, module)
    return importlib.import_module(module)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Report every absent-data skip at `_skip_unless`, not at each test, so `-ra` prints each reason once."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple) and report.longrepr[2].endswith((NO_DATA, NO_SEEDS)):
        report.longrepr = (__file__, _skip_unless.__code__.co_firstlineno, report.longrepr[2])


def require_shared_data() -> Path:
    """The whole shared data folder (corpus and trajectories are only there), or skip."""
    _skip_unless(SHARED_DATA.is_dir(), NO_DATA)
    return SHARED_DATA


def require_benchmarks() -> Path:
    """A folder of `<task>.<split>.jsonl` files: the shared data's benchmarks/, else the download cache, or skip."""
    if BENCHMARKS.is_dir():
        return BENCHMARKS
    from evalsuite.tasks.download import download_cache_dir

    cache = download_cache_dir()
    _skip_unless(all((cache / name).is_file() for name in SUITE_BENCHMARKS), NO_DATA)
    return cache


def require_seeds() -> Path:
    """The seed papers' plain texts, or skip."""
    _skip_unless(SEEDS.is_dir(), NO_SEEDS)
    return SEEDS


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared_data()


@pytest.fixture(scope="session")
def benchmarks_dir() -> Path:
    return require_benchmarks()


@pytest.fixture(scope="session")
def trajectories_dir(shared_data: Path) -> Path:
    return shared_data / "trajectories"


@pytest.fixture(scope="session")
def corpus_dir(shared_data: Path) -> Path:
    return shared_data / "corpus"


@pytest.fixture(scope="session")
def seeds_dir() -> Path:
    return require_seeds()
