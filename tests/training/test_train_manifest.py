"""`train_manifest.json` carries the shared provenance fields (evalsuite.provenance) and the starting model's identity."""

from __future__ import annotations

import json
import time
from pathlib import Path

from evalsuite.provenance import Provenance
from evalsuite.training.config import load_config
from evalsuite.training.trainer import TRAINING_LIBRARIES, build_reward, write_manifest
from evalsuite.resources import method_configs_dir
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]


@requires_extra("train", "torch", "trl", "transformers", "datasets", "accelerate")
def test_the_training_manifest_records_the_shared_provenance_and_the_model(tmp_path):
    config = load_config(method_configs_dir("search-r1") / "cpu_smoke.yaml", "search-r1")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    write_manifest(tmp_path / "train_manifest.json", config, build_reward(config), str(model), {}, time.time(), "search-r1")
    manifest = json.loads((tmp_path / "train_manifest.json").read_text())
    provenance = Provenance.model_validate(manifest)
    assert set(provenance.versions) == set(TRAINING_LIBRARIES) and provenance.versions["trl"]
    assert provenance.hardware.cpu_count and manifest["kind"] == "train"
    assert manifest["model_identity"]["spec"] == str(model) and len(manifest["model_identity"]["sha256"]) == 64
    assert manifest["evaluator_method"] == "search-r1"
