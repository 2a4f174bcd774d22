"""Pairing two or more systems' per-example scores by example id."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from evalsuite.errors import EvalsuiteError

_SHOWN_IDS = 5


def _preview(ids: set[str]) -> str:
    shown = sorted(ids)[:_SHOWN_IDS]
    more = f" and {len(ids) - len(shown)} more" if len(ids) > len(shown) else ""
    return ", ".join(shown) + more


def align_by_id(
    a: Mapping[str, float], b: Mapping[str, float], names: tuple[str, str] = ("A", "B"), where: str = ""
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Two systems' scores as arrays in one id order; different id sets are an error listing the difference."""
    ids, matrix = aligned_matrix({names[0]: a, names[1]: b}, reference=names[0], where=where)
    return ids, matrix[0], matrix[1]


def aligned_matrix(
    systems: Mapping[str, Mapping[str, float]], reference: str | None = None, where: str = "", sort_ids: bool = False
) -> tuple[list[str], np.ndarray]:
    """Scores of several systems as a (systems × examples) matrix in the reference system's id order (or sorted ids).

    Every system must hold exactly the reference's ids: an unpaired test on partly different examples is
    how a gain gets invented, so the mismatch is an error that names the missing and extra ids.
    """
    names: Sequence[str] = list(systems)
    if not names:
        raise EvalsuiteError("no systems to pair")
    reference = names[0] if reference is None else reference
    ids = sorted(systems[reference]) if sort_ids else list(systems[reference])
    id_set = set(ids)
    for name in names:
        other = systems[name]
        if name == reference or (len(other) == len(ids) and id_set.issuperset(other)):
            continue
        missing, extra = id_set - set(other), set(other) - id_set
        context = f"{where}: " if where else ""
        parts = []
        if missing:
            parts.append(f"{len(missing)} id(s) of {reference!r} missing from {name!r}: {_preview(missing)}")
        if extra:
            parts.append(f"{len(extra)} id(s) of {name!r} not in {reference!r}: {_preview(extra)}")
        raise EvalsuiteError(
            f"{context}cannot pair {name!r} with {reference!r} by example id; " + "; ".join(parts),
            hint=(
                "compare runs over the same examples (same task, split and subset), or rescore them on a common subset"
            ),
        )
    matrix = np.array([[systems[name][i] for i in ids] for name in names], dtype=float).reshape(len(names), len(ids))
    return ids, matrix
