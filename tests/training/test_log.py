"""The training log: one JSON record per TRL log call, read back in order, and plotted (curriculum stages included)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evalsuite.training.log import make_callback, plot_log, read_log

pytest.importorskip("transformers")
pytest.importorskip("matplotlib")


def test_callback_appends_records_that_read_back_and_plot(tmp_path):
    path = tmp_path / "training_log.jsonl"
    sft, grpo = make_callback(path, "sft"), make_callback(path, "grpo")
    sft.on_log(None, SimpleNamespace(global_step=1), None, logs={"loss": 1.4})
    for step in (1, 2):
        grpo.on_log(None, SimpleNamespace(global_step=step), None, logs={
            "loss": 0.1 * step, "reward": 0.5, "kl": 0.001 * step, "completions/mean_length": 30.0,
            "rewards/oases/total/mean": 0.2, "rewards/n_turns/mean": 2.0, "oases/eval_loss": 0.0,
        })
    records = read_log(path)
    assert [(r["stage"], r["step"]) for r in records] == [("sft", 1), ("grpo", 1), ("grpo", 2)]
    assert all(r["seconds"] >= 0 for r in records) and records[2]["kl"] == pytest.approx(0.002)
    png = plot_log(records, tmp_path / "curves.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert read_log(tmp_path / "missing.jsonl") == []


def test_plot_panels_are_the_logged_groups():
    """A run without a reference model logs no KL: no empty KL panel; gradient norm and entropy get theirs."""
    from evalsuite.training.log import curve_groups

    step = {"stage": "grpo", "step": 1, "reward": 0.5, "loss": 0.1, "grad_norm": 3.0, "entropy": 0.7,
            "completions/mean_length": 4.0, "rewards/search-r1/em/mean": 0.5, "rewards/n_turns/mean": 2.0}
    groups = curve_groups([step])
    assert list(groups) == ["rewards", "loss", "grad norm", "entropy", "length", "turns"]
    assert groups["rewards"] == ["rewards/search-r1/em/mean"]
    assert "kl" in curve_groups([{**step, "kl": 0.01}])
