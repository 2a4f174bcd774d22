"""The training log (one JSON object per logging step: TRL's
metrics, rewards per component, KL, lengths, turns) and its plot."""

from __future__ import annotations

import json
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from evalsuite.errors import require

LOG_FILE = "training_log.jsonl"
PLOT_FILE = "training_curves.png"


def make_callback(path: Path, stage: str):
    """A transformers TrainerCallback appending each `on_log`
    to `path`, with the stage and seconds since the last log."""
    # Any: the base class comes from transformers, imported only when training runs (the [train] extra)
    trainer_callback: Any = require("transformers", "train", "training").TrainerCallback

    class JsonlLog(trainer_callback):
        def __init__(self) -> None:
            self.last = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            now = time.perf_counter()
            record = {"stage": stage, "step": state.global_step, "seconds": now - self.last, **(logs or {})}
            self.last = now
            with path.open("a") as handle:
                handle.write(json.dumps(record) + "\n")

    return JsonlLog()


def read_log(path: Path) -> list[dict[str, Any]]:
    """The log's records."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def curve_groups(
    records: list[dict[str, Any]], statistics: Sequence[str] = ("n_turns", "n_searches")
) -> dict[str, list[str]]:
    """The panels of the training plot and the logged keys each draws; a panel nothing was logged for is left out."""
    steps = [r for r in records if r.get("stage") == "grpo" and "reward" in r]
    logged = sorted({k for r in steps for k in r})
    statistic_keys = [f"rewards/{name}/mean" for name in statistics]
    groups = {
        "rewards": [k for k in logged if k.startswith("rewards/") and k.endswith("/mean") and k not in statistic_keys],
        "loss": ["loss", *(k for k in logged if k.endswith("_loss"))],  # e.g. a recipe's co-training loss
        "kl": ["kl"],
        "grad norm": ["grad_norm"],
        "entropy": ["entropy"],
        "length": ["completions/mean_length"],
        "turns": statistic_keys,
    }
    return {title: keys for title, keys in groups.items() if title == "rewards" or any(k in logged for k in keys)}


def plot_log(records: list[dict[str, Any]], out: Path, statistics: Sequence[str] = ("n_turns", "n_searches")) -> Path:
    """Curves of every reward component, the losses (a co-training term too), KL, gradient norm, entropy, completion
    length and the rollout `statistics` (columns logged as zero-weight rewards) against the step, one panel each group
    that was logged (no KL panel for a run without a reference model)."""
    require("matplotlib", "train", "the training plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r for r in records if r.get("stage") == "grpo" and "reward" in r]
    groups = curve_groups(records, statistics)
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.6), squeeze=False)
    for ax, (title, keys) in zip(axes[0], groups.items()):
        for key in keys:
            xs = [r["step"] for r in steps if key in r]
            if xs:
                ax.plot(
                    xs,
                    [r[key] for r in steps if key in r],
                    marker="o",
                    label=key.removeprefix("rewards/").removesuffix("/mean"),
                )
        if title == "loss":  # the stages before GRPO's steps (a recipe's curriculum)
            for stage in dict.fromkeys(r.get("stage") for r in records if r.get("stage") not in ("grpo", None)):
                points = [(r["step"], r["loss"]) for r in records if r.get("stage") == stage and "loss" in r]
                if points:
                    ax.plot(*zip(*points), marker="s", linestyle="--", label=f"{stage} loss")
        ax.set_title(title)
        ax.set_xlabel("step")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
