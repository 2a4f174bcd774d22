"""Which scoring convention explains a recorded prediction or score that differs from ours.

Search-R1, FlashRAG and their reproductions agree on the metric definitions (docs/metrics.md) but record predictions
and scores with small variations: the first instead of the last `<answer>`, FlashRAG's reasoning pipelines recording the
last turn's text when it has no answer tag, extraction over prompt plus response, an unnormalized comparison, cover-EM
where EM was meant. Each variant here is tried on the one item; the first that reproduces the recorded value is named.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalsuite.protocol.trajectory import ParsedTrajectory
from evalsuite.metrics.answer import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    cover_exact_match,
    exact_match,
    extract_answer,
    normalize_answer,
    token_scores,
)

# FlashRAG's reasoning pipelines record this when the turn limit is reached or a query cannot be parsed.
FLASHRAG_NO_ANSWER = "No valid answer found"


@dataclass(frozen=True)
class PredictionContext:
    """What a recorded prediction may have been extracted from."""

    response: str
    prompt: str | None
    parsed: ParsedTrajectory


def _answer_blocks(text: str) -> list[str]:
    """Raw contents of the `<answer>` blocks, as `re.findall(r"<answer>(.*?)</answer>")` finds them (linear time)."""
    blocks, position = [], 0
    while (start := text.find(ANSWER_OPEN, position)) != -1:
        close = text.find(ANSWER_CLOSE, start + len(ANSWER_OPEN))
        if close == -1:
            break
        blocks.append(text[start + len(ANSWER_OPEN) : close])
        position = close + len(ANSWER_CLOSE)
    return blocks


def _first_answer(context: PredictionContext) -> str | None:
    blocks = _answer_blocks(context.response)
    return blocks[0].strip() if blocks else None


def _unstripped_last_answer(context: PredictionContext) -> str | None:
    blocks = _answer_blocks(context.response)
    return blocks[-1] if blocks else None


def _with_prompt(context: PredictionContext) -> str | None:
    # Search-R1's `extract_solution` reads prompt + response and needs two blocks (the prompt's example is one).
    if context.prompt is None:
        return None
    blocks = _answer_blocks(context.prompt + context.response)
    return blocks[-1].strip() if len(blocks) >= 2 else ""


def _last_turn_text(context: PredictionContext) -> str | None:
    if context.parsed.answer is not None or not context.parsed.turns:
        return None
    return context.parsed.turns[-1].text.strip()


PREDICTION_CONVENTIONS: list[tuple[str, Callable[[PredictionContext], str | None]]] = [
    (
        "FlashRAG reasoning pipeline: a last turn without <answer> is recorded as that turn's whole text",
        _last_turn_text,
    ),
    (
        "FlashRAG reasoning pipeline: turn limit reached or query not parsed, recorded as 'No valid answer found'",
        lambda c: FLASHRAG_NO_ANSWER,
    ),
    ("the first <answer> block instead of the last", _first_answer),
    ("the last <answer> block without stripping white space", _unstripped_last_answer),
    (
        "the answer read from the model's own text only (observations left out)",
        lambda c: extract_answer(c.parsed.model_text) or "",
    ),
    (
        "Search-R1 extract_solution over prompt + response (the prompt's example answer counts; one block gives None)",
        _with_prompt,
    ),
    (
        "the whole response recorded when it has no <answer> block",
        lambda c: c.response.strip() if c.parsed.answer is None else None,
    ),
    ("a missing answer written as the string 'None'", lambda c: "None" if c.parsed.answer is None else None),
]


def explain_prediction(recorded: str | None, context: PredictionContext) -> str | None:
    """The convention under which the recorded prediction is what the pipeline extracted; None if none explains it."""
    recorded = recorded or ""
    for name, variant in PREDICTION_CONVENTIONS:
        if variant(context) == recorded:
            return name
    ours = context.parsed.answer
    if recorded is not None and ours is not None and normalize_answer(recorded) == normalize_answer(ours):
        return "the same answer after normalization (case, punctuation, articles, white space): every metric agrees"
    return None


def _no_normalization(text: str) -> str:
    return " ".join(text.split())


def _lower_only(text: str) -> str:
    return " ".join(text.lower().split())


def _articles_kept(text: str) -> str:
    return " ".join("".join(ch for ch in text.lower() if ch not in string.punctuation).split())


def _unicode_punctuation(text: str) -> str:
    return normalize_answer("".join(ch for ch in text if not unicodedata.category(ch).startswith("P")))


# R1-Searcher's rule-based metric (evaluation/metric_calc_rule.py, RUCAIBox/R1-Searcher@631167c): its own
# normalization (underscores and punctuation, ASCII plus ‘ ’ ´ `, become spaces rather than vanishing; then articles
# and white space as SQuAD), "True"/"False" read as yes/no, F1 with HotpotQA's yes/no/noanswer rule whose precision
# and recall are those of the best-F1 gold, and cover-EM as "every gold token appears among the prediction's tokens,
# in any order" (cover_exact_match_score_1, the Cover-EM it reports).
_R1_SEARCHER_PUNCTUATION = frozenset(string.punctuation + "‘’´`")


def r1_searcher_normalize(text: str) -> str:
    text = text.replace("_", " ").lower()
    text = "".join(" " if ch in _R1_SEARCHER_PUNCTUATION else ch for ch in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _r1_searcher_tokens(text: str) -> list[str]:
    # split(" ") as the script does: an empty normalized text is the one token "".
    return r1_searcher_normalize({"True": "yes", "False": "no"}.get(text, text)).split(" ")


def r1_searcher_em(prediction: str, golds: Sequence[str]) -> float:
    return float(any(_r1_searcher_tokens(prediction) == _r1_searcher_tokens(g) for g in golds))


def r1_searcher_cover_em(prediction: str, golds: Sequence[str]) -> float:
    tokens = _r1_searcher_tokens(prediction)
    return float(any(all(token in tokens for token in _r1_searcher_tokens(g)) for g in golds))


def r1_searcher_token_scores(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    """(f1, precision, recall) of the gold with the highest F1 (the first on a tie), as the script's max(key=f1)."""
    scores = []
    pred = " ".join(_r1_searcher_tokens(prediction))
    for gold in golds:
        ref = " ".join(_r1_searcher_tokens(gold))
        if (pred in _SPECIAL or ref in _SPECIAL) and pred != ref:
            scores.append((0.0, 0.0, 0.0))
            continue
        same = sum((Counter(pred.split()) & Counter(ref.split())).values())
        if not same:
            scores.append((0.0, 0.0, 0.0))
            continue
        precision, recall = same / len(pred.split()), same / len(ref.split())
        scores.append((2 * precision * recall / (precision + recall), precision, recall))
    f1, precision, recall = max(scores, key=lambda s: s[0]) if scores else (0.0, 0.0, 0.0)
    return {"f1": f1, "precision": precision, "recall": recall}


_SPECIAL = frozenset({"yes", "no", "noanswer"})
R1_SEARCHER_METRIC = "R1-Searcher's rule-based metric (metric_calc_rule.py: punctuation replaced by spaces"
R1_SEARCHER_CONVENTIONS: dict[str, tuple[str, Callable[[str, Sequence[str]], float]]] = {
    "em": (f"{R1_SEARCHER_METRIC})", r1_searcher_em),
    "acc": (f"{R1_SEARCHER_METRIC}; cover-EM = every gold token appears, in any order)", r1_searcher_cover_em),
    "f1": (f"{R1_SEARCHER_METRIC}; F1 of the best-F1 gold)", lambda p, gs: r1_searcher_token_scores(p, gs)["f1"]),
    "precision": (
        f"{R1_SEARCHER_METRIC}; precision of the best-F1 gold)",
        lambda p, gs: r1_searcher_token_scores(p, gs)["precision"],
    ),
    "recall": (
        f"{R1_SEARCHER_METRIC}; recall of the best-F1 gold)",
        lambda p, gs: r1_searcher_token_scores(p, gs)["recall"],
    ),
}


def _em_with(normalize: Callable[[str], str]) -> Callable[[str, Sequence[str]], float]:
    return lambda pred, golds: float(any(normalize(g) == normalize(pred) for g in golds))


def _cover_with(normalize: Callable[[str], str]) -> Callable[[str, Sequence[str]], float]:
    return lambda pred, golds: float(any(normalize(g) in normalize(pred) for g in golds))


def _f1_without_yes_no_rule(pred: str, golds: Sequence[str]) -> float:
    best = 0.0
    for gold in golds:
        p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
        same = sum(min(p.count(t), g.count(t)) for t in set(p))
        if same:
            precision, recall = same / len(p), same / len(g)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


_NORMALIZATIONS = [
    ("no normalization (raw strings, white space collapsed)", _no_normalization),
    ("lower-casing only (punctuation and articles kept)", _lower_only),
    ("articles kept (SQuAD normalization without removing a/an/the)", _articles_kept),
    ("Unicode punctuation removed too (not only ASCII string.punctuation)", _unicode_punctuation),
]
# Per recorded metric: the alternative definitions that could have produced it.
METRIC_CONVENTIONS: dict[str, list[tuple[str, Callable[[str, Sequence[str]], float]]]] = {
    "em": [
        ("cover-EM (gold contained in the prediction: FlashRAG acc, Search-R1 subem) recorded as em", cover_exact_match)
    ]
    + [(f"exact match with {name}", _em_with(fn)) for name, fn in _NORMALIZATIONS],
    "acc": [("exact match recorded as acc (cover-EM)", exact_match)]
    + [(f"cover-EM with {name}", _cover_with(fn)) for name, fn in _NORMALIZATIONS]
    + [
        (
            "prediction contained in a gold (the reverse containment)",
            lambda p, gs: float(any(normalize_answer(p) in normalize_answer(g) for g in gs)),
        )
    ],
    "f1": [
        ("F1 without HotpotQA's yes/no/noanswer rule", _f1_without_yes_no_rule),
        ("F1 against the first gold answer only", lambda p, gs: token_scores(p, list(gs)[:1])["f1"]),
        ("precision recorded as f1", lambda p, gs: token_scores(p, gs)["precision"]),
        ("recall recorded as f1", lambda p, gs: token_scores(p, gs)["recall"]),
    ],
    "precision": [("F1 recorded as precision", lambda p, gs: token_scores(p, gs)["f1"])],
    "recall": [("F1 recorded as recall", lambda p, gs: token_scores(p, gs)["f1"])],
}
for _metric, _convention in R1_SEARCHER_CONVENTIONS.items():
    METRIC_CONVENTIONS[_metric].append(_convention)
METRIC_FUNCTIONS: dict[str, Callable[[str, Sequence[str]], float]] = {
    "em": exact_match,
    "acc": cover_exact_match,
    "f1": lambda p, gs: token_scores(p, gs)["f1"],
    "precision": lambda p, gs: token_scores(p, gs)["precision"],
    "recall": lambda p, gs: token_scores(p, gs)["recall"],
}
# Recorded per-item names that mean one of FlashRAG's metrics above: R1-Searcher's metric script (update_answer returns
# em, prec, recall, f1, cover_em_1, cover_em_2), AutoRefine's training log (scores.answer_em / answer_f1 / answer_cem,
# verl/trainer/main_ppo.py LOG_FUNCS, qa_em.em_check / compute_f1_scores / cover_em_check on the last <answer>).
RECORDED_ALIASES: dict[str, str] = {
    "cover_em": "acc",
    "cover_em_1": "acc",
    "prec": "precision",
    "answer_em": "em",
    "answer_f1": "f1",
    "answer_cem": "acc",
}


def explain_metric(
    metric: str,
    recorded: float,
    ours_prediction: str,
    recorded_prediction: str | None,
    golds: Sequence[str],
    tolerance: float = 1e-9,
) -> str | None:
    """The convention under which `recorded` is this item's score; None if none explains it."""

    def same(value: float) -> bool:
        return abs(value - recorded) <= tolerance

    scorer = METRIC_FUNCTIONS.get(metric)
    if (
        scorer is not None
        and recorded_prediction is not None
        and recorded_prediction != ours_prediction
        and same(scorer(recorded_prediction, golds))
    ):
        return "scored on the recorded prediction, which differs from ours (see its line)"
    if scorer is not None and (same(100 * scorer(ours_prediction, golds)) and recorded != 0):
        return "the same score on a 0-100 scale"
    for prediction in dict.fromkeys([ours_prediction, recorded_prediction or ours_prediction]):
        for name, variant in METRIC_CONVENTIONS.get(metric, []):
            if same(variant(prediction, golds)):
                return name
    if scorer is not None and any(
        abs(round(scorer(ours_prediction, golds), digits) - recorded) <= tolerance for digits in (2, 3, 4)
    ):
        return "the same score rounded"
    return None
