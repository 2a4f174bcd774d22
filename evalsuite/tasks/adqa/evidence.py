"""Lexical evidence over the corpus: which passages mention a set of names and an answer (the single-passage test)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import re
import string

_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def fast_normalize(text: str) -> str:
    """The same result as `normalize_answer` (SQuAD), through str.translate: the corpus is normalized whole."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_DROP_PUNCTUATION)).split())


def _padded(text: str) -> str:
    return f" {fast_normalize(text)} "


class PassageLexicon:
    """Normalized passages with a token index, for whole-word phrase look-ups."""

    def __init__(self, rows: Iterable[dict]):
        self.text: dict[str, str] = {}
        self.postings: dict[str, list[str]] = {}
        for row in rows:
            pid = str(row["id"])
            padded = _padded(row["contents"])
            self.text[pid] = padded
            seen: dict[str, None] = {}
            for token in padded.split():
                if token not in seen:
                    seen[token] = None
                    self.postings.setdefault(token, []).append(pid)

    def containing_all(self, phrases: Sequence[str]) -> list[str]:
        """Ids of passages in which every phrase occurs as whole words (after SQuAD normalization)."""
        needles = [_padded(p) for p in phrases]
        tokens = [t for n in needles for t in n.split()]
        if not tokens:
            return []
        rarest = min(tokens, key=lambda t: len(self.postings.get(t, ())))
        return [pid for pid in self.postings.get(rarest, []) if all(n in self.text[pid] for n in needles)]

    def single_passage_evidence(self, entities: Sequence[str], answers: Sequence[str]) -> list[str]:
        """Passages naming every question entity and also containing a gold answer: one passage would suffice."""
        found: list[str] = []
        for pid in self.containing_all(entities):
            if any(_padded(a) in self.text[pid] for a in answers if fast_normalize(a)):
                found.append(pid)
        return found
