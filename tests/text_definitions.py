"""The plain definitions that the fast text routines of the rollout loop's per-turn path must equal: the approximate
token count as the list of its regex's matches, SQuAD's answer normalization as three regex passes. The tests compare
the package's routines with them; `benchmarks/agent_loop.py --only overhead` measures them as the "before"."""

from __future__ import annotations

import re
import string

from evalsuite.models.base import _PIECES


def approx_token_count_by_definition(text: str) -> int:
    return len(_PIECES.findall(text))


def normalize_answer_by_definition(text: str) -> str:
    text = re.sub("[" + re.escape(string.punctuation) + "]", "", text.lower())
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())
