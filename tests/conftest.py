"""Shared test fixtures: where the real benchmark data lives (../shared/data, never copied into the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs property tests with a fixed derandomized seed so a green run is reproducible; locally they explore freely.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("EVALSUITE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
BENCHMARKS = SHARED_DATA / "benchmarks"
CORPUS = SHARED_DATA / "corpus"
TRAJECTORIES = SHARED_DATA / "trajectories"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.fail(f"the shared data directory {SHARED_DATA} is missing; set EVALSUITE_SHARED_DATA")
    return SHARED_DATA


@pytest.fixture(scope="session")
def benchmarks_dir(shared_data: Path) -> Path:
    return shared_data / "benchmarks"


@pytest.fixture(scope="session")
def trajectories_dir(shared_data: Path) -> Path:
    return shared_data / "trajectories"
