"""OASES's step-level credit: each turn's state-score difference reaches that turn's tokens. On a hand-built two-turn
trajectory (a good first search, a bad second one) TRL's own GRPO loss, given the per-turn advantages, pushes the two
turns' tokens in opposite directions; the summed reward (γ_T − γ_0 = 0 here) gave both no gradient at all."""

from __future__ import annotations

import pytest

from evalsuite.agent.engine import Rollout
from evalsuite.runs.schema import Passage, Turn
from evalsuite.methods.oases.rollout import completion_turns
from evalsuite.training.rollout import tokenize_rollout
from evalsuite.methods.oases.turn_credit import (
    STD_EPS,
    CompletionTurns,
    step_rewards,
    token_advantages,
    turn_advantages,
)
from tests.training.grpo_loss import loss_with_captured_logps

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def test_step_rewards_follow_the_states_each_turn_produced():
    # turn 0 searched (s_1), turn 1 was invalid (no state), turn 2 searched (s_2), turn 3 answered
    completion = CompletionTurns("q", [0.2, 0.9, 0.4], [True, False, True, False], [])
    assert step_rewards(completion) == pytest.approx([0.7, None, -0.5, None])


def test_turn_advantages_are_normalised_over_the_questions_steps():
    a = CompletionTurns("q", [0.0, 1.0, 0.0], [True, True, False], [])
    b = CompletionTurns("q", [0.0, 0.5], [True, False], [])
    c = CompletionTurns("other", [0.3, 0.3], [True, False], [])
    steps = [1.0, -1.0, 0.5]  # every step reward of question q
    mean = sum(steps) / 3
    std = (sum((s - mean) ** 2 for s in steps) / 3) ** 0.5
    out = turn_advantages([a, b, c], weight=2.0)
    assert out[0] == pytest.approx([2 * (1 - mean) / (std + STD_EPS), 2 * (-1 - mean) / (std + STD_EPS), 0.0])
    assert out[1] == pytest.approx([2 * (0.5 - mean) / (std + STD_EPS), 0.0])
    assert out[2] == [0.0, 0.0]  # a lone step is its own mean
    assert turn_advantages([a], weight=1.0, scale=False)[0] == pytest.approx([1.0, -1.0, 0.0])


def test_token_advantages_add_each_tokens_turn_to_the_sequence_advantage():
    completion = CompletionTurns("q", [0.0, 1.0], [True, False], [0, 0, -1, -1, 1, 1])
    out = token_advantages(torch.tensor([0.5]), [completion], [[2.0, -1.0]], width=8)
    assert out.tolist() == [[2.5, 2.5, 0.5, 0.5, -0.5, -0.5, 0.5, 0.5]]


@pytest.fixture(scope="module")
def tokenizer():
    from evalsuite.models.packaged import packaged_model

    gguf = packaged_model("smollm2-135m").gguf()  # the real SmolLM2 tokenizer from the packaged GGUF
    return transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def two_turn_rollout() -> Rollout:
    """Turn 0 finds the director (γ 0 → 1), turn 1 searches off-topic and the state loses it (γ 1 → 0), turn 2 answers."""
    rollout = Rollout(key="k", question="When is the director of The Opposite of Sex's birthday?", prompt="Question: When is the director of The Opposite of Sex's birthday?\n")
    pieces = [
        ("<think>find the director</think>\n<search>director of The Opposite of Sex</search>", True,
         Turn(text="", query="director of The Opposite of Sex", passages=[Passage(title="The Opposite of Sex", text="written and directed by Don Roos")])),
        ("\n\n<result>Doc 1 (The Opposite of Sex) written and directed by Don Roos</result>\n\n", False, None),
        ("<think>check the cast</think>\n<search>Christina Ricci films</search>", True,
         Turn(text="", query="Christina Ricci films", passages=[Passage(title="Christina Ricci", text="an American actress")])),
        ("\n\n<result>Doc 1 (Christina Ricci) an American actress</result>\n\n", False, None),
        ("<think>answer</think>\n<answer>April 14, 1955</answer>", True, Turn(text="", answer="April 14, 1955")),
    ]
    for text, by_model, turn in pieces:
        rollout.response += text
        rollout.segments.append((text, by_model))
        if turn is not None:
            rollout.turns.append(turn.model_copy(update={"text": text}))
    rollout.stop_reason = "answer"
    return rollout


def test_rollout_maps_every_model_token_to_its_turn(tokenizer):
    rollout = two_turn_rollout()
    tokens = tokenize_rollout(tokenizer, rollout, append_eos=True)
    [credit] = completion_turns([rollout], [[0.0, 1.0, 0.0]], [tokens])
    lengths = [len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text, _ in rollout.segments]
    expected = [0] * lengths[0] + [-1] * lengths[1] + [1] * lengths[2] + [-1] * lengths[3] + [2] * (lengths[4] + 1)  # EOS: last turn
    assert credit.token_turns == expected
    assert [t == -1 for t in expected] == [m == 0 for m in tokens.env_mask]
    assert credit.produced_state == [True, True, False] and step_rewards(credit) == [1.0, -1.0, None]


@pytest.fixture(scope="module")
def trainer(tokenizer, tmp_path_factory):
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
    args = trl.GRPOConfig(output_dir=str(tmp_path_factory.mktemp("grpo")), report_to="none", use_cpu=True, bf16=False, beta=0.0,
                          per_device_train_batch_size=2, num_generations=2, max_steps=1)
    out = trl.GRPOTrainer(model=transformers.LlamaForCausalLM(config), reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
                          args=args, train_dataset=datasets.Dataset.from_list([{"prompt": "q"}] * 2), processing_class=tokenizer)
    out.model.train()
    out.current_gradient_accumulation_steps = 1  # set by the training loop, which this test does not enter
    return out


def loss_gradient_per_token(trainer, inputs):
    """d(TRL's GRPO loss)/d(log π of each completion token)."""
    return loss_with_captured_logps(trainer, inputs)[1].grad[0]


def test_good_first_step_and_bad_second_step_get_gradients_of_opposite_sign(tokenizer, trainer):
    rollout = two_turn_rollout()
    tokens = tokenize_rollout(tokenizer, rollout, append_eos=True)
    [credit] = completion_turns([rollout], [[0.0, 1.0, 0.0]], [tokens])
    n = len(tokens.completion_ids)
    inputs = {
        "prompt_ids": torch.tensor([tokens.prompt_ids]), "prompt_mask": torch.ones(1, len(tokens.prompt_ids), dtype=torch.long),
        "completion_ids": torch.tensor([tokens.completion_ids]), "completion_mask": torch.ones(1, n, dtype=torch.long),
        "tool_mask": torch.tensor([tokens.env_mask]), "num_items_in_batch": torch.tensor(float(sum(tokens.env_mask))),
    }
    outcome_advantage = torch.tensor([0.0])  # a lone completion: GRPO's outcome advantage is 0
    per_turn = turn_advantages([credit], weight=1.0)
    grad = loss_gradient_per_token(trainer, {**inputs, "advantages": token_advantages(outcome_advantage, [credit], per_turn, n)})
    turn_of = torch.tensor(credit.token_turns)
    first, second, answer, retrieved = grad[turn_of == 0], grad[turn_of == 1], grad[turn_of == 2], grad[turn_of == -1]
    # descending the loss raises the good step's tokens and lowers the bad step's
    assert (first < 0).all() and (second > 0).all()
    assert torch.count_nonzero(answer) == 0 and torch.count_nonzero(retrieved) == 0
    # the old credit: one scalar per completion, γ_out + Σ Δ = γ_out + (γ_2 − γ_0); relative to the group it is 0 here
    summed = loss_gradient_per_token(trainer, {**inputs, "advantages": outcome_advantage})
    assert torch.count_nonzero(summed) == 0
