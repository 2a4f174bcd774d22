"""A FlashRAG run folder as FlashRAG writes one, for the tests of `evalsuite score`."""

from __future__ import annotations

import json
from pathlib import Path


def write_run_folder(root: Path, name: str, items: list[dict], config_yaml: str) -> Path:
    """`Config._prepare_dir`'s folder holding `Dataset.save`'s `intermediate_data.json` (a JSON list, indent 4),
    `Evaluator.save_metric_score`'s `metric_score.txt` (`name: value` lines, here the mean of each item's em, f1 and
    acc) and the `config.yaml` Config dumps."""
    folder = root / name
    folder.mkdir()
    (folder / "intermediate_data.json").write_text(json.dumps(items, indent=4))
    averages = {k: sum(x["output"]["metric_score"][k] for x in items) / len(items) for k in ("em", "f1", "acc")}
    (folder / "metric_score.txt").write_text("".join(f"{k}: {v}\n" for k, v in averages.items()))
    (folder / "config.yaml").write_text(config_yaml)
    return folder
