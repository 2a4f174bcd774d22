"""OASES's step-level credit: each turn's process reward goes to that turn's tokens (seeds/003, Figure 2).

OASES scores the search states s_0..s_T of a trajectory (γ_t, `methods.oases.method`) and rewards step t with
γ_t − γ_{t−1} ("process rewards from state-score differences", 003:21), next to the outcome score γ_out. Summing the
step rewards into one scalar per completion telescopes to γ_T − γ_0: a good first search followed by a bad second one
earns the same as doing nothing. So each model turn k gets its own return and advantage:

    R_k = γ_out + λ · Δ_k,       Δ_k = γ_t − γ_{t−1} when turn k's search produced state s_t (else no step reward)
    A_k = A_out + λ · (Δ_k − mean Δ) / (std Δ + ε)

A_out is TRL's GRPO advantage of the outcome score (the reward's total); mean and std run over every step reward of the
completions of the same question in the generation batch (GRPO's group; `scale_rewards` off: no division), as
DeepSeekMath's process supervision normalises step rewards. Each turn keeps only its own Δ_k: the undiscounted
return-to-go Σ_{j≥k} Δ_j would telescope back to γ_T − γ_{k−1} and give a good first step no credit when a bad step
follows. A_k is applied to the tokens the model wrote in turn k (TRL's GRPO loss accepts (B, T) advantages);
retrieved tokens are masked out of the loss anyway.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

STD_EPS = 1e-4  # TRL's epsilon when scaling advantages by the group std (the co-training trainer uses it too)


@dataclass
class CompletionTurns:
    """One completion as the credit needs it: its question (the group), γ_0..γ_T, whether each model turn produced a
    new search state, and the model turn of every completion token (−1: environment text)."""

    question: str
    gammas: list[float]
    produced_state: list[bool]
    token_turns: list[int]


def step_rewards(completion: CompletionTurns) -> list[float | None]:
    """Per model turn: Δ = γ_t − γ_{t−1} for the turn that produced state s_t; None for a turn that produced none."""
    out: list[float | None] = []
    state = 0
    for produced in completion.produced_state:
        if produced and state + 1 < len(completion.gammas):
            state += 1
            out.append(completion.gammas[state] - completion.gammas[state - 1])
        else:
            out.append(None)
    return out


def turn_advantages(completions: Sequence[CompletionTurns], weight: float, scale: bool = True) -> list[list[float]]:
    """Per completion, per model turn: λ · (Δ − mean Δ) / (std Δ + ε) over the question's step rewards; 0 without Δ."""
    rewards = [step_rewards(c) for c in completions]
    pools: dict[str, list[float]] = {}
    for completion, steps in zip(completions, rewards):
        pools.setdefault(completion.question, []).extend(r for r in steps if r is not None)
    out = []
    for completion, steps in zip(completions, rewards):
        pool = pools[completion.question]
        mean = statistics.fmean(pool) if pool else 0.0
        spread = statistics.pstdev(pool) + STD_EPS if scale and len(pool) > 1 else 1.0
        out.append([0.0 if r is None else weight * (r - mean) / spread for r in steps])
    return out


def token_advantages(
    sequence: Any, completions: Sequence[CompletionTurns], per_turn: Sequence[Sequence[float]], width: int
) -> Any:
    """(B, width) advantages: each row's sequence advantage plus, on each token, its model turn's advantage."""
    import torch

    out = sequence.detach().float().unsqueeze(1).repeat(1, width)
    for row, (completion, turns) in enumerate(zip(completions, per_turn)):
        extra = [turns[k] if 0 <= k < len(turns) else 0.0 for k in completion.token_turns[:width]]
        out[row, : len(extra)] += torch.tensor(extra, dtype=out.dtype, device=out.device)
    return out.to(sequence.dtype)
