"""Shared helpers of the leaderboard tests (plain functions and constants; fixtures live in conftest.py)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.leaderboard import SubmissionInfo
from evalsuite.leaderboard.submission import Setting

REPO = Path(__file__).resolve().parents[2]
BASE_SEED1 = "bamboogle_2026_04_28_16_36_search_r1_base_seed1"
INSTRUCT_SEED1 = "bamboogle_2026_04_29_06_48_search_r1_instruct_seed1"
XSS_NAME = "<script>alert(1)</script>"


def cli(*args):
    """Run the real `evalsuite` CLI in-process."""
    return CliRunner().invoke(app, [str(a) for a in args])


def info(name: str = "Search-R1 base (test)", **extra) -> SubmissionInfo:
    return SubmissionInfo(name=name, method="Search-R1", model={"name": "Qwen2.5-3B base"},
                          setting=Setting(corpus="wiki-18", retriever="e5", topk=3), **extra)
