"""`report_to` in a recipe config reaches TRL's stage configs; a destination whose client is missing is refused at load."""

from __future__ import annotations

import importlib.util

import pytest

from evalsuite.errors import DataError, MissingExtraError
from evalsuite.training.config import TrainConfig, load_config, stage_arguments

trl = pytest.importorskip("trl", reason="the train extra (trl) is not installed")
CPU = {"use_cpu": True, "bf16": False}


def test_report_to_reaches_grpo_and_sft_configs(tmp_path):
    logged = TrainConfig(method="search-r1", report_to=["tensorboard", "wandb"])
    grpo = trl.GRPOConfig(**stage_arguments(logged, {"num_generations": 2, "per_device_train_batch_size": 2, **CPU}, tmp_path))
    assert grpo.report_to == ["tensorboard", "wandb"]
    # default: no integration at all (TRL's own default would be every installed one)
    sft = trl.SFTConfig(**stage_arguments(TrainConfig(method="smartsearch"), CPU, tmp_path / "sft"))
    assert sft.report_to == [] and sft.output_dir == str(tmp_path / "sft")
    # a stage's own setting wins over the recipe-wide one
    assert stage_arguments(logged, {"report_to": "none"}, tmp_path)["report_to"] == "none"


@pytest.mark.parametrize("destination", ["tensorboard", "wandb"])
def test_a_destination_without_its_client_names_the_extra(tmp_path, destination):
    if importlib.util.find_spec(destination) is not None:
        pytest.skip(f"{destination} is installed here")
    path = tmp_path / "recipe.yaml"
    path.write_text(f"method: search-r1\nreport_to: {destination}\n")
    with pytest.raises(MissingExtraError) as err:
        load_config(path)
    assert err.value.hint == f'pip install "evalsuite[{destination}]"'


def test_an_unknown_destination_is_refused(tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("method: search-r1\nreport_to: [none, mlfow]\n")
    with pytest.raises(DataError, match="report_to 'mlfow' is not one of none, tensorboard, wandb"):
        load_config(path)


def test_shipped_configs_load_by_name():
    config = load_config("cpu_smoke", "search-r1")
    assert config.method == "search-r1" and config.report_to == "none"
    assert load_config("progress/gpu", "progress").method == "progress"
    with pytest.raises(DataError, match="no such config file") as refused:
        load_config("cpu_smok", "search-r1")
    assert "search-r1's shipped configs: cpu_learn, cpu_smoke, cpu_vllm, gpu" in refused.value.hint  # every one, by name
