"""TRL's training stages: which config and trainer class each stage name means, and one stage before GRPO (SFT, DPO)
trained from a model directory and saved where the next stage starts (`Recipe.curriculum` chains them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalsuite.errors import require
from evalsuite.training.config import TrainConfig, stage_arguments
from evalsuite.training.log import LOG_FILE, make_callback

# stage name (`Recipe.stages`, the config section of its TRL arguments) -> TRL's config and trainer class
TRL_STAGES = {
    "grpo": ("GRPOConfig", "GRPOTrainer"),
    "sft": ("SFTConfig", "SFTTrainer"),
    "dpo": ("DPOConfig", "DPOTrainer"),
}


def stage_model(out: Path, stage: str) -> Path:
    """Where a stage before GRPO saves its model and tokenizer."""
    return out / stage / "model"


def finished_stage(out: Path, stage: str) -> str | None:
    """The model a finished stage left in `out`, else None."""
    model = stage_model(out, stage)
    return str(model) if (model / "config.json").is_file() else None


def run_stage(
    config: TrainConfig, stage: str, settings: dict[str, Any], rows: list[dict[str, Any]], model_path: str, out: Path
) -> tuple[str, int]:
    """Train `stage` (`settings`: its TRL arguments) on `rows` from `model_path`; log into the run's training log and
    save under `out/<stage>/model`. Returns that directory and the stage's optimizer steps."""
    trl = require("trl", "train", f"the {stage} stage")
    datasets = require("datasets", "train", f"the {stage} stage")
    config_class, trainer_class = (getattr(trl, name) for name in TRL_STAGES[stage])
    args = config_class(**stage_arguments(config, settings, out / stage))
    trainer = trainer_class(
        model=model_path,
        args=args,
        train_dataset=datasets.Dataset.from_list(rows),
        callbacks=[make_callback(out / LOG_FILE, stage)],
    )
    trainer.train()
    path = stage_model(out, stage)
    trainer.save_model(str(path))
    trainer.processing_class.save_pretrained(str(path))
    return str(path), trainer.state.global_step
