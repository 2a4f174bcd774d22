"""With the real SmolLM2, real BM25 retrieval over AD-QA and TRL's own GRPO loss: retrieved tokens get zero gradient,
and the policy term is exactly the model tokens' own log-probabilities (retrieved text only conditions them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.agent.method import Action
from evalsuite.methods.search_r1.method import SearchR1
from tests.training.grpo_loss import loss_with_captured_logps

pytestmark = pytest.mark.slow
torch = pytest.importorskip("torch")
pytest.importorskip("trl")


class AlwaysSearch(SearchR1):
    """Search-R1's protocol, except that any turn without a tag searches its own text, so every rollout retrieves."""

    name = "always-search"

    def parse_action(self, text: str) -> Action:
        action = super().parse_action(text)
        if action.kind == "invalid":
            return Action("search", queries=[" ".join(text.split()[:12]) or "campaign budget"])
        return action


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    from evalsuite.training.config import TrainConfig
    from evalsuite.training.data import training_rows
    from evalsuite.training.model import resolve_model
    from evalsuite.training.trainer import build_grpo, build_reward

    config = TrainConfig(
        method="search-r1", subset="first:2", rollout={"max_turns": 1, "max_tokens": 12, "max_obs_tokens": 48, "topk": 1},
        grpo={"max_steps": 1, "per_device_train_batch_size": 2, "num_generations": 2, "use_cpu": True, "bf16": False, "beta": 0.0},
    )
    out = tmp_path_factory.mktemp("mask")
    rows = training_rows(config)
    trainer, rollout = build_grpo(config, resolve_model(config.model), Path(out), rows, build_reward(config))
    rollout.method = AlwaysSearch()
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which this test does not enter
    inputs = trainer._generate_and_score_completions([rows[0], rows[0]])
    # forced, non-zero advantages so that every trained token gets a gradient
    inputs["advantages"] = torch.tensor([1.0, -0.5])
    return trainer, rollout, inputs


def test_rollouts_retrieved_and_mask_matches_completions(scored):
    _, rollout, inputs = scored
    assert all(any(t.passages for t in r.turns) for r in rollout.last)  # every rollout retrieved real passages
    env = inputs["tool_mask"] * inputs["completion_mask"]
    retrieved = (inputs["completion_mask"] - env).sum().item()
    assert retrieved > 0 and env.sum().item() > 0
    assert inputs["tool_mask"].shape == inputs["completion_ids"].shape


def test_gradient_is_zero_at_retrieved_positions_and_not_at_model_positions(scored):
    trainer, _, inputs = scored
    _, logps = loss_with_captured_logps(trainer, inputs)
    grad = logps.grad
    model_positions = (inputs["tool_mask"] * inputs["completion_mask"]).bool()
    retrieved_positions = ((1 - inputs["tool_mask"]) * inputs["completion_mask"]).bool()
    assert torch.count_nonzero(grad[retrieved_positions]).item() == 0
    assert torch.count_nonzero(grad[model_positions]).item() == int(model_positions.sum().item())


def test_retrieved_logprobs_do_not_enter_the_loss(scored):
    trainer, _, inputs = scored
    base, _ = loss_with_captured_logps(trainer, inputs)
    base_grad = trainer.model.model.norm.weight.grad.clone()
    shifted, _ = loss_with_captured_logps(trainer, inputs, shift_env=5.0)
    assert shifted.item() == base.item()
    assert torch.equal(trainer.model.model.norm.weight.grad, base_grad)


def test_changed_retrieved_text_changes_only_the_conditioning(scored):
    trainer, _, inputs = scored
    changed = dict(inputs)
    env = ((1 - inputs["tool_mask"]) * inputs["completion_mask"]).bool()
    other = trainer.processing_class("Weather report: sunny skies over the harbour all week long. " * 20, add_special_tokens=False)["input_ids"]
    ids = inputs["completion_ids"].clone()
    ids[env] = torch.tensor(other[: int(env.sum().item())])
    changed["completion_ids"] = ids
    _, _ = loss_with_captured_logps(trainer, changed)
    trl_grad = trainer.model.model.norm.weight.grad.clone()
    # the policy term by hand: −Σ A_i · log π(y_t | context) over model tokens only, normalised as TRL does (per token)
    model = trainer.model
    model.zero_grad()
    sequence = torch.cat([changed["prompt_ids"], ids], dim=1)
    attention = torch.cat([changed["prompt_mask"], changed["completion_mask"]], dim=1)
    logits = model(input_ids=sequence, attention_mask=attention).logits[:, changed["prompt_ids"].shape[1] - 1 : -1]
    logps = torch.log_softmax(logits / trainer.temperature, dim=-1).gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    mask = (changed["tool_mask"] * changed["completion_mask"]).to(logps.dtype)
    manual = -(changed["advantages"].unsqueeze(1) * logps * mask).sum() / mask.sum()
    manual.backward()
    assert torch.allclose(model.model.norm.weight.grad, trl_grad, rtol=1e-3, atol=1e-6)
