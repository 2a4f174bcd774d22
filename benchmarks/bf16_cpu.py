"""bf16 against fp32 on this CPU, side by side, for the packaged Qwen2.5-Coder-0.5B (`--model qwen2.5-coder-0.5b`).

    python benchmarks/bf16_cpu.py [--n 4] [--max-tokens 32] [--threads 2] [--seq 256]

Evaluation: the same single-hop AD-QA questions (naive prompt, chat template, greedy) through the hf backend with
dtype float32 and with dtype bfloat16 (bf16 weights), and through the trainer's rollout backend on the fp32 weights
under bf16 autocast (what a `bf16: true` GRPO run samples from). Prints seconds per generated token for each and,
per question, whether the greedy text is identical to fp32's and where it first differs.
Training: one forward and backward pass of a micro-batch (`--batch` sequences of `--seq` tokens) in fp32 and under
bf16 autocast, seconds each. Refuses in one line on a CPU without native bf16 (evalsuite.models.precision).
"""

from __future__ import annotations

import argparse
import os
import time

MODEL = "qwen2.5-coder-0.5b"
QUESTIONS = [
    "What is the capital of France?",
    "Who wrote the novel Pride and Prejudice?",
    "In which year did the Berlin Wall fall?",
    "What is the chemical symbol for gold?",
    "Which planet is known as the Red Planet?",
    "Who painted the Mona Lisa?",
]


def prompts(backend, n: int) -> list[str]:
    return [
        backend.chat_template([{"role": "user", "content": f"Answer in a few words. Question: {q}"}])
        for q in QUESTIONS[:n]
    ]


def timed_generate(backend, texts: list[str], max_tokens: int) -> tuple[list[str], float, int]:
    from evalsuite.models.base import GenerationRequest

    start = time.perf_counter()
    out = backend.generate([GenerationRequest(p, max_tokens=max_tokens) for p in texts])
    seconds = time.perf_counter() - start
    return [g.text for g in out], seconds, sum(g.completion_tokens for g in out)


def first_difference(a: str, b: str) -> str:
    if a == b:
        return "identical"
    index = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"differs at character {index}: {a[index:index + 30]!r} vs {b[index:index + 30]!r}"


def train_step_seconds(model, torch, batch: int, seq: int, bf16: bool) -> float:
    ids = torch.randint(100, 20000, (batch, seq), generator=torch.Generator().manual_seed(0))
    model.train()
    start = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    args = parser.parse_args()
    import torch

    from evalsuite.models.hf import HFBackend
    from evalsuite.models.packaged import resolve_model
    from evalsuite.models.precision import require_cpu_bf16
    from evalsuite.training.backend import TrainerBackend

    flag = require_cpu_bf16("benchmarks/bf16_cpu.py")
    torch.set_num_threads(args.threads)
    directory = resolve_model(MODEL, "hf")
    print(f"CPU native bf16: {flag}; torch {torch.__version__}, {args.threads} threads, load {os.getloadavg()[0]:.2f}")
    fp32 = HFBackend(directory, dtype="float32", batch_size=args.n)
    texts = prompts(fp32, args.n)
    rows = [("hf float32", *timed_generate(fp32, texts, args.max_tokens))]
    reference = rows[0][1]
    autocast = TrainerBackend(fp32.model, fp32.tokenizer, batch_size=args.n, bf16=True)
    rows.append(("trainer fp32 weights, bf16 autocast", *timed_generate(autocast, texts, args.max_tokens)))
    fp32_train = [train_step_seconds(fp32.model, torch, args.batch, args.seq, bf16) for bf16 in (False, True)]
    del fp32, autocast
    bf16 = HFBackend(directory, dtype="bfloat16", batch_size=args.n)
    rows.append(("hf bfloat16 weights", *timed_generate(bf16, texts, args.max_tokens)))
    del bf16
    print(f"\nevaluation: {args.n} questions, greedy, {args.max_tokens} tokens at most, one batch")
    for name, outputs, seconds, tokens in rows:
        same = sum(a == b for a, b in zip(outputs, reference))
        print(f"  {name:38s} {seconds:6.1f} s  {tokens:4d} tokens  {seconds / max(tokens, 1):.3f} s/token  "
              f"identical to fp32: {same}/{len(reference)}")
        for question, text, ref in zip(QUESTIONS, outputs, reference):
            print(f"      {question[:40]:40s} {text[:50]!r}  [{first_difference(ref, text)}]")
    print(f"\ntraining: forward+backward, {args.batch} x {args.seq} tokens")
    print(f"  fp32 {fp32_train[0]:.1f} s; bf16 autocast {fp32_train[1]:.1f} s ({fp32_train[0] / fp32_train[1]:.2f}x)")


if __name__ == "__main__":
    main()
