"""`freeze:` keeps parameters out of training by name (the learning run freezes Qwen2.5's embeddings and output layer,
which are one tied matrix). A real (tiny, randomly initialised) Qwen2 model and a real transformers Trainer."""

from __future__ import annotations

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.training.model import freeze_callback, freeze_parameters

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")


def tiny_qwen():
    config = transformers.Qwen2Config(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                      num_key_value_heads=1, intermediate_size=32, tie_word_embeddings=True)
    torch.manual_seed(0)
    return transformers.Qwen2ForCausalLM(config)


def test_the_tied_embedding_and_output_layer_get_no_gradient():
    model = tiny_qwen()
    assert freeze_parameters(model, ["embed_tokens", "lm_head"]) == ["model.embed_tokens.weight", "lm_head.weight"]
    assert model.lm_head.weight is model.model.embed_tokens.weight  # one tied matrix
    assert model.lm_head.weight.requires_grad is False
    ids = torch.tensor([[1, 2, 3, 4]])
    model(input_ids=ids, labels=ids).loss.backward()
    grads = {name: p.grad is not None for name, p in model.named_parameters()}
    assert grads.pop("model.embed_tokens.weight") is False and all(grads.values())


def test_a_name_that_matches_nothing_is_refused():
    with pytest.raises(EvalsuiteError, match="freeze: embeddings matches no parameter of Qwen2ForCausalLM"):
        freeze_parameters(tiny_qwen(), ["embed_tokens", "embeddings"])


def test_the_callback_freezes_before_the_trainer_builds_its_optimizer(tmp_path):
    model = tiny_qwen()
    args = transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    trainer = transformers.Trainer(model=model, args=args, callbacks=[freeze_callback(["embed_tokens"])])
    assert model.model.embed_tokens.weight.requires_grad is False
    trainer.create_optimizer()
    optimized = {id(p) for group in trainer.optimizer.param_groups for p in group["params"]}
    assert id(model.model.embed_tokens.weight) not in optimized and id(model.model.norm.weight) in optimized
