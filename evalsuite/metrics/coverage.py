"""Coverage of teacher "essential" queries by policy queries (Progress eq. 3-4) and where teacher queries come from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

_HOP_REF = re.compile(r"#(\d+)")


class Coverage(BaseModel):
    """Precision = |I|/|Q^P|, recall = |I|/|Q^T|, F1 = their harmonic mean (0 when both are 0)."""

    matched: int
    n_policy: int
    n_teacher: int
    precision: float
    recall: float
    f1: float


def matched_pairs(match: Sequence[Sequence[bool]] | np.ndarray) -> int:
    """|I|: the size of a maximum one-to-one matching of policy queries (rows) to teacher queries (columns).

    One-to-one, so that repeating one good query does not count as covering several teacher queries.
    """
    matrix = np.asarray(match, dtype=bool)
    if matrix.size == 0:
        return 0
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    assignment = maximum_bipartite_matching(csr_matrix(matrix.astype(np.int8)), perm_type="column")
    return int((assignment >= 0).sum())


def coverage(match: Sequence[Sequence[bool]], n_policy: int, n_teacher: int) -> Coverage:
    """Progress eq. 3-4 from a policy-by-teacher match matrix."""
    if n_teacher <= 0:
        raise ValueError("coverage needs at least one teacher query")
    matrix = (
        np.asarray(match, dtype=bool).reshape(n_policy, n_teacher) if n_policy else np.zeros((0, n_teacher), dtype=bool)
    )
    matched = matched_pairs(matrix)
    precision = matched / n_policy if n_policy else 0.0
    recall = matched / n_teacher
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return Coverage(matched=matched, n_policy=n_policy, n_teacher=n_teacher, precision=precision, recall=recall, f1=f1)


def musique_teacher_queries(decomposition: Sequence[dict[str, Any]]) -> list[str]:
    """MuSiQue `question_decomposition` steps as standalone queries: `#k` is replaced by step k's gold answer."""
    answers = [str(step.get("answer", "")) for step in decomposition]
    queries = []
    for step in decomposition:
        text = _HOP_REF.sub(
            lambda m: answers[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(answers) else m.group(0),
            str(step["question"]),
        )
        queries.append(" ".join(text.split()))
    return queries


def teacher_queries_from_metadata(metadata: dict[str, Any]) -> tuple[list[str], str] | None:
    """Gold teacher queries of a task row, with their source name, or None if the row has none.

    Reads MuSiQue `question_decomposition` and the AD-QA generator's `decomposition` (steps with a `question`).
    """
    steps = metadata.get("question_decomposition")
    if isinstance(steps, list) and steps and all(isinstance(s, dict) and "question" in s for s in steps):
        return musique_teacher_queries(steps), "question_decomposition"
    steps = metadata.get("decomposition")
    if isinstance(steps, list) and steps and all(isinstance(s, dict) and "question" in s for s in steps):
        return [str(s["question"]) for s in steps], "decomposition"
    return None
