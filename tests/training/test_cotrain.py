"""OASES co-training of the state evaluator: group-relative advantages of the evaluation answers and their loss."""

from __future__ import annotations

import math

import pytest

from evalsuite.methods.oases.cotrain import STD_EPS, EvalSample, chunks, evaluation_loss, group_advantages

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def sample(question: str, score: float, prompt=(1, 2, 3), completion=(4, 5)) -> EvalSample:
    return EvalSample(question, list(prompt), list(completion), score)


def test_advantages_are_relative_to_the_same_questions_answers():
    samples = [sample("a", 1.0), sample("a", 0.0), sample("a", 0.5), sample("b", 0.2)]
    std = math.sqrt((0.25 + 0.25 + 0.0) / 3)
    assert group_advantages(samples, scale=False) == pytest.approx([0.5, -0.5, 0.0, 0.0])
    assert group_advantages(samples) == pytest.approx([0.5 / (std + STD_EPS), -0.5 / (std + STD_EPS), 0.0, 0.0])


def test_equal_scores_give_zero_advantage_and_no_division_by_zero():
    assert group_advantages([sample("a", 0.4), sample("a", 0.4)]) == [0.0, 0.0]
    assert group_advantages([]) == []


def test_chunks_split_contiguously_and_keep_everything():
    assert chunks([1, 2, 3, 4, 5], 2) == [[1, 2, 3], [4, 5]]
    assert chunks([1], 3) == [[1], [], []]


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
    return transformers.LlamaForCausalLM(config)


def completion_logprob(model, sample: EvalSample):
    ids = torch.tensor([sample.prompt_ids + sample.completion_ids])
    logps = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), dim=-1)
    targets = ids[0, 1:]
    start = len(sample.prompt_ids) - 1
    return sum(logps[p, targets[p]] for p in range(start, ids.shape[1] - 1))


def test_loss_is_the_advantage_weighted_token_mean_of_answer_logprobs(model):
    samples = [sample("a", 1.0, (1, 2, 3), (4, 5)), sample("a", 0.0, (6,), (7, 8, 9)), sample("b", 0.3, (10, 11), (12,))]
    advantages = [1.0, -0.5, 2.0]
    loss = evaluation_loss(model, samples, advantages, pad_id=0)
    expected = -sum(a * completion_logprob(model, s) for a, s in zip(advantages, samples)) / 6  # 2 + 3 + 1 answer tokens
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)


def test_zero_advantages_give_no_gradient(model):
    model.zero_grad()
    evaluation_loss(model, [sample("a", 0.5), sample("a", 0.5, completion=(6,))], [0.0, 0.0], pad_id=0).backward()
    assert all(p.grad is None or torch.count_nonzero(p.grad) == 0 for p in model.parameters())


def test_a_step_on_a_positive_advantage_makes_that_answer_likelier(model):
    import copy

    local = copy.deepcopy(model)
    good = sample("a", 1.0, (1, 2, 3), (4, 5))
    before = completion_logprob(local, good).item()
    optimizer = torch.optim.SGD(local.parameters(), lr=0.5)
    evaluation_loss(local, [good], [1.0], pad_id=0).backward()
    optimizer.step()
    assert completion_logprob(local, good).item() > before
