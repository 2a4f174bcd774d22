"""The environment mask: retrieved tokens are context, never trained (Search-R1's info_mask, TRL's env_mask)."""

from __future__ import annotations


import pytest

from evalsuite.agent.engine import Rollout
from evalsuite.errors import EvalsuiteError
from evalsuite.training.rollout import check_mask, prompt_question, tokenize_rollout

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def tokenizer():
    from evalsuite.models.packaged import packaged_model

    gguf = packaged_model("smollm2-135m").gguf()  # the real SmolLM2 tokenizer, read straight from the packaged GGUF (no dequantizing)
    return transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def test_segments_tokenize_to_a_mask_of_the_completion_length(tokenizer):
    rollout = Rollout(key="k", question="q", prompt="Question: who?\n")
    pieces = [("<think>look</think>\n<search>capital of France</search>", True),
              ("\n\n<information>Doc 1(Title: France) Paris is the capital.</information>\n\n", False),
              ("<think>so</think>\n<answer>Paris</answer>", True)]
    for text, by_model in pieces:
        rollout.response += text
        rollout.segments.append((text, by_model))
    tokens = tokenize_rollout(tokenizer, rollout, append_eos=True)
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t, _ in pieces]
    assert len(tokens.completion_ids) == len(tokens.env_mask) == sum(lengths) + 1
    assert tokens.env_mask == [1] * lengths[0] + [0] * lengths[1] + [1] * lengths[2] + [1]
    assert tokens.completion_ids[-1] == tokenizer.eos_token_id
    # the masked stretch decodes to exactly the retrieved block
    start = lengths[0]
    assert tokenizer.decode(tokens.completion_ids[start : start + lengths[1]]) == pieces[1][0]


def test_mask_length_mismatch_is_refused():
    with pytest.raises(EvalsuiteError, match="3 entries for 2"):
        check_mask([5, 6], [1, 0, 1])
    with pytest.raises(EvalsuiteError, match="0 or 1"):
        check_mask([5], [2])


def test_prompt_question_accepts_strings_and_messages():
    assert prompt_question("Who?") == "Who?"
    assert prompt_question([{"role": "system", "content": "s"}, {"role": "user", "content": "Who?"}]) == "Who?"
    with pytest.raises(EvalsuiteError):
        prompt_question(42)


def test_sft_rows_train_only_the_models_own_tokens(tokenizer, tmp_path):
    """SmartSearch stage 1: retrieved text in a screened trajectory is context, as in GRPO (TRL keeps our labels)."""
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from evalsuite.methods.smartsearch.curriculum import sft_example

    segments = [("<search> campaign budget </search>", True), ("\n\n<information>Doc 1(Title: A) text</information>\n\n", False), ("<answer> 5 </answer>", True)]
    row = sft_example(tokenizer, "Question: how much?\n", segments)
    prompt_len = len(tokenizer("Question: how much?\n")["input_ids"])
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t, _ in segments]
    assert len(row["input_ids"]) == len(row["labels"]) == prompt_len + sum(lengths) + 1  # + EOS
    trained = [i for i, label in enumerate(row["labels"]) if label != -100]
    first, second = prompt_len, prompt_len + lengths[0] + lengths[1]
    assert trained == [*range(first, first + lengths[0]), *range(second, second + lengths[2] + 1)]
    assert all(row["labels"][i] == row["input_ids"][i] for i in trained)
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1)
    trainer = trl.SFTTrainer(
        model=transformers.LlamaForCausalLM(config), processing_class=tokenizer, train_dataset=datasets.Dataset.from_list([row]),
        args=trl.SFTConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True, max_steps=1),
    )
    assert trainer.train_dataset[0]["labels"] == row["labels"]
    batch = trainer.data_collator([trainer.train_dataset[0]])
    assert batch["labels"][0].tolist() == row["labels"]
