"""Fixtures for the statistics tests: per-example scores from the real Search-R1 trajectories."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def recorded_scores(path: Path, metric: str = "em") -> dict[str, float]:
    """Example id → the score FlashRAG recorded in a trajectory file (output.metric_score)."""
    return {item["id"]: float(item["output"]["metric_score"][metric]) for item in json.loads(path.read_text())}


@pytest.fixture(scope="session")
def bamboogle_pair(trajectories_dir: Path) -> tuple[dict[str, float], dict[str, float]]:
    """EM of the base and the instruct Search-R1 checkpoints (seed-1 runs) on all 125 Bamboogle questions."""
    base = recorded_scores(next(trajectories_dir.glob("bamboogle_*_search_r1_base_seed1.json")))
    instruct = recorded_scores(next(trajectories_dir.glob("bamboogle_*_search_r1_instruct_seed1.json")))
    return base, instruct


@pytest.fixture(scope="session")
def bamboogle_f1(trajectories_dir: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Token F1 of the same two runs."""
    base = recorded_scores(next(trajectories_dir.glob("bamboogle_*_search_r1_base_seed1.json")), "f1")
    instruct = recorded_scores(next(trajectories_dir.glob("bamboogle_*_search_r1_instruct_seed1.json")), "f1")
    return base, instruct
