"""Leaderboard fixtures: real Search-R1 trajectories rescored into run directories, packed into submissions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from evalsuite.leaderboard import pack_submission
from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1, REPO, XSS_NAME, cli, info
from tests.conftest import skip_without_extra


@pytest.fixture(scope="session")
def scored_runs(tmp_path_factory, trajectories_dir: Path) -> Path:
    """The two seed-1 Bamboogle trajectory files rescored into run directories by `evalsuite score`."""
    out = tmp_path_factory.mktemp("scored")
    result = cli("score", trajectories_dir / f"{BASE_SEED1}.json", trajectories_dir / f"{INSTRUCT_SEED1}.json", "-o", out)
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def packed(tmp_path_factory, scored_runs: Path) -> Path:
    """A valid submission of the base seed-1 Bamboogle run (copy it before tampering)."""
    return pack_submission([scored_runs / BASE_SEED1], tmp_path_factory.mktemp("packed") / "submission", info())


@pytest.fixture
def submission(packed: Path, tmp_path: Path) -> Path:
    target = tmp_path / "submission"
    shutil.copytree(packed, target)
    return target


@pytest.fixture(scope="session")
def site_results(tmp_path_factory, scored_runs: Path, benchmarks_dir: Path) -> Path:
    """The repository's leaderboard/ (seeded entries) plus an entry whose name is a script tag."""
    from evalsuite.leaderboard import add_submission

    results = tmp_path_factory.mktemp("leaderboard")
    shutil.copytree(REPO / "leaderboard" / "entries", results / "entries")
    xss = pack_submission(
        [scored_runs / INSTRUCT_SEED1], tmp_path_factory.mktemp("xss") / "sub",
        info(XSS_NAME, description='"><img src=x onerror=alert(2)>', contact="<b onmouseover=alert(3)>me</b>"),
    )
    add_submission(xss, results, data_dir=benchmarks_dir)
    return results


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, site_results: Path, benchmarks_dir: Path) -> Path:
    """The static site built from `site_results` by `evalsuite leaderboard build`."""
    skip_without_extra("site", "jinja2")  # the site's templates
    out = tmp_path_factory.mktemp("site") / "site"
    result = cli("leaderboard", "build", "--leaderboard", site_results, "-o", out, "--data-dir", benchmarks_dir)
    assert result.exit_code == 0, result.output
    return out
