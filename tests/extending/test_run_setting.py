"""A new run setting is one field of `RunConfig` (issue #41). A copy of the package gets one line in
`evalsuite/agent/config.py` and nothing else; in a fresh process that imports the copy the setting is an
`evalsuite run` option whose help is the field's description, a config-file key, refused in one line naming its type
when ill-typed, recorded in the manifest and read back from it, and carried by the run on the synchronous and
asynchronous schedules and to Ray's actors (whose settings the driver checks against its own before anything runs:
`distributed.actor_refusal`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite import SOURCE_FOLDERS
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]
ANCHOR = "    batch_size: int = Field("
NEW_FIELD = '    reruns: int = Field(0, description="Times a failed trajectory is tried again (a new setting).")\n'
RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


@pytest.fixture(scope="module")
def extended(tmp_path_factory) -> Path:
    """A copy of the source tree whose RunConfig has one field more: the whole edit a new setting takes."""
    root = tmp_path_factory.mktemp("extended")
    for folder in ("evalsuite", *SOURCE_FOLDERS.values()):  # the package and the top-level folders it maps
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    config = root / "evalsuite" / "agent" / "config.py"
    text = config.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1
    config.write_text(text.replace(ANCHOR, NEW_FIELD + ANCHOR), encoding="utf-8")
    return root


def in_copy(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`python ARGS` with the copy first on the path (Ray's local actors inherit it)."""
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200", "RAY_AUTH_MODE": "disabled"}
    return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=900)


def test_the_new_field_is_an_option_with_its_description_and_its_type(extended, tmp_path):
    shown = in_copy(extended, "-m", "evalsuite", "run", "--help")
    assert shown.returncode == 0, shown.stderr
    (line,) = [line for line in shown.stdout.splitlines() if "--reruns" in line]
    assert "<int>" in line and "Times a failed trajectory is tried again" in line and "[default: 0]" in line
    refused = in_copy(extended, "-m", "evalsuite", "run", "--tasks", "nq", "--reruns", "many", "-o", str(tmp_path / "r"))
    assert refused.returncode == 2 and "error: --reruns 'many': expected an integer" in refused.stderr.splitlines()
    assert not (tmp_path / "r").exists()
    python = in_copy(extended, "-c", "from evalsuite.agent.config import RunConfig; RunConfig(reruns='x')")
    assert "evalsuite.errors.EvalsuiteError: --reruns 'x': expected an integer" in python.stderr


@pytest.mark.parametrize("path", [
    "sync",
    "async",
    pytest.param("ray", marks=[requires_extra("ray", "ray"), pytest.mark.slow]),
])
def test_the_new_setting_is_recorded_and_carried_on_every_path(extended, tmp_path, trajectories_dir, benchmarks_dir, path):
    settings = tmp_path / "run.yaml"
    settings.write_text("reruns: 2\n", encoding="utf-8")  # a config-file key like any other option
    out = tmp_path / "run"
    where = ["--ray", "local", "--ray-actors", "1"] if path == "ray" else ["--schedule", path]
    ran = in_copy(extended, "-m", "evalsuite", "run", "-c", str(settings), "--backend", "replay", "--model", str(trajectories_dir / RECORDING),
                  "--retriever", "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--limit", "3",
                  "--batch-size", "2", *where, "-o", str(out))
    assert ran.returncode == 0, ran.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["run_config"]["reruns"] == 2 and manifest["finished_at"]
    assert len((out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()) == 3
    read_back = in_copy(extended, "-c", "import sys; from evalsuite.agent.config import RunConfig; from evalsuite.runs import RunDirectory; "
                        "print(RunConfig.from_manifest(RunDirectory(sys.argv[1]).read_manifest()).reruns)", str(out))
    assert read_back.stdout.strip() == "2", read_back.stderr
