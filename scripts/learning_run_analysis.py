"""The pre-registered analysis of a learning run: a base and a trained run directory on the same examples, compared
as docs/recipes/runs/qwen-singlehop-learn/preregistration.md fixes it ("Evaluation" and "Analysis plan"), printed as
Markdown.

- EM and cover-EM: exact McNemar, one-sided (b = wrong → right, c = right → wrong, p = P(X ≥ b), X ~ Bin(b + c, ½)),
  beside the two-sided p that `evalsuite table` prints;
- token F1: paired approximate randomization of the mean difference, one-sided, 10,000 sign flips, seed 12345;
- every EM flip classed as answer style (the other answer already contained a gold: cover-EM 1, EM 0), within it
  set-valued questions and verbosity (that answer 3 or more tokens longer than the gold), or entity (it did not);
- the mean answer length in tokens and the collapse check (the share of questions given the single most frequent
  answer).

    python scripts/learning_run_analysis.py BASE_RUN TRAINED_RUN
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from evalsuite.metrics.answer import normalize_answer
from evalsuite.runs.schema import ExampleRecord
from evalsuite.runs.store import read_predictions
from evalsuite.stats.resample import DEFAULT_SEED
from evalsuite.stats.significance import approximate_randomization, mcnemar_exact

VERBOSE_EXTRA_TOKENS = 3
FLIP_CLASSES = ("answer style: set-valued", "answer style: verbosity", "answer style: other", "entity")
N_PERMUTATIONS = 10_000


@dataclass(frozen=True)
class Paired:
    """The two runs' records of the same examples, in one order."""

    base: list[ExampleRecord]
    trained: list[ExampleRecord]

    def metric(self, which: str, name: str) -> np.ndarray:
        records = self.base if which == "base" else self.trained
        return np.array([r.metrics[name] for r in records], dtype=float)


def pair_runs(base_dir: Path, trained_dir: Path) -> Paired:
    """Both runs' finished records, matched by example id; every id must be in both (nothing is dropped)."""
    base = {r.id: r for r in read_predictions(base_dir / "predictions.jsonl") if r.status == "ok"}
    trained = {r.id: r for r in read_predictions(trained_dir / "predictions.jsonl") if r.status == "ok"}
    if base.keys() != trained.keys():
        missing = sorted(base.keys() ^ trained.keys())
        raise SystemExit(f"the runs are not on the same examples: {len(missing)} ids in one only, e.g. {missing[:3]}")
    ids = sorted(base)
    return Paired([base[i] for i in ids], [trained[i] for i in ids])


def one_sided_mcnemar(base: np.ndarray, trained: np.ndarray) -> tuple[int, int, float, float]:
    """(b wrong → right, c right → wrong, one-sided p, two-sided p)."""
    result = mcnemar_exact(trained, base)
    b, c = result.only_a, result.only_b
    p_one = binomtest(b, b + c, 0.5, alternative="greater").pvalue if b + c else 1.0
    return b, c, float(p_one), result.p_value


def one_sided_randomization(base: np.ndarray, trained: np.ndarray) -> tuple[float, float]:
    """(mean difference trained − base, one-sided p = (#{d_r ≥ d} + 1) / (R + 1))."""
    result = approximate_randomization(trained, base, N_PERMUTATIONS, DEFAULT_SEED, key="f1", alternative="greater")
    return result.difference, result.p_value


def n_tokens(text: str | None) -> int:
    return len((text or "").split())


def flip_class(answer: ExampleRecord) -> str:
    """The class of the answer that was wrong in a flip: answer style if it already contained a gold answer."""
    if answer.metrics["cover_em"] != 1.0:
        return "entity"
    golds = answer.golden_answers
    shortest_gold = min(n_tokens(g) for g in golds) if golds else 0
    if answer.metadata.get("set_valued"):
        return "answer style: set-valued"
    if n_tokens(answer.prediction) >= shortest_gold + VERBOSE_EXTRA_TOKENS:
        return "answer style: verbosity"
    return "answer style: other"


def flips(paired: Paired) -> dict[str, Counter[str]]:
    """Flip classes in each direction; the class is that of the wrong answer of the pair."""
    out: dict[str, Counter[str]] = {"wrong → right": Counter(), "right → wrong": Counter()}
    for base, trained in zip(paired.base, paired.trained, strict=True):
        if base.metrics["em"] == 0.0 and trained.metrics["em"] == 1.0:
            out["wrong → right"][flip_class(base)] += 1
        elif base.metrics["em"] == 1.0 and trained.metrics["em"] == 0.0:
            out["right → wrong"][flip_class(trained)] += 1
    return out


def most_frequent_share(records: Sequence[ExampleRecord]) -> tuple[str, float]:
    answers = Counter(normalize_answer(r.prediction or "") for r in records)
    answer, count = answers.most_common(1)[0]
    return answer, count / len(records)


def report(paired: Paired) -> str:
    n = len(paired.base)
    lines = [f"n = {n} examples, paired by id.", ""]
    lines += ["| metric | base | checkpoint | Δ | b (w → r) | c (r → w) | p one-sided | p two-sided |"]
    lines += ["| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, label in (("em", "EM"), ("cover_em", "cover-EM")):
        base, trained = paired.metric("base", name), paired.metric("trained", name)
        b, c, p_one, p_two = one_sided_mcnemar(base, trained)
        delta = trained.mean() - base.mean()
        lines.append(
            f"| {label} | {100 * base.mean():.2f} | {100 * trained.mean():.2f} | {100 * delta:+.2f}"
            f" | {b} | {c} | {p_one:.2g} (exact McNemar) | {p_two:.2g} |"
        )
    base_f1, trained_f1 = paired.metric("base", "f1"), paired.metric("trained", "f1")
    difference, p_f1 = one_sided_randomization(base_f1, trained_f1)
    lines.append(
        f"| F1 | {100 * base_f1.mean():.2f} | {100 * trained_f1.mean():.2f} | {100 * difference:+.2f} | | |"
        f" {p_f1:.2g} (randomization, {N_PERMUTATIONS:,} flips, seed {DEFAULT_SEED}) | |"
    )
    lines += ["", "EM flips by the class of the wrong answer of each pair:", ""]
    lines += ["| class | wrong → right | right → wrong |", "| --- | --- | --- |"]
    by_direction = flips(paired)
    for name in FLIP_CLASSES:
        lines.append(f"| {name} | {by_direction['wrong → right'][name]} | {by_direction['right → wrong'][name]} |")
    lines.append(
        f"| all | {sum(by_direction['wrong → right'].values())} | {sum(by_direction['right → wrong'].values())} |"
    )
    lines += ["", "| | base | checkpoint |", "| --- | --- | --- |"]
    lengths = [np.mean([n_tokens(r.prediction) for r in records]) for records in (paired.base, paired.trained)]
    lines.append(f"| mean answer length (whitespace tokens) | {lengths[0]:.2f} | {lengths[1]:.2f} |")
    (base_answer, base_share), (trained_answer, trained_share) = (
        most_frequent_share(paired.base),
        most_frequent_share(paired.trained),
    )
    lines.append(
        f"| most frequent answer, its share | {base_answer!r}, {100 * base_share:.1f}% "
        f"| {trained_answer!r}, {100 * trained_share:.1f}% |"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the base model's run directory")
    parser.add_argument("trained", type=Path, help="the checkpoint's run directory")
    args = parser.parse_args(argv)
    print(report(pair_runs(args.base, args.trained)))


if __name__ == "__main__":
    main()
