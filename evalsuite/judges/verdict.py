"""Parse a judge's reply into a boolean verdict, or record why it could not be parsed (never guess)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

VERDICT_KEYS = ("verdict", "answer", "judgment", "judgement", "result", "match", "value")
_TRUE = {"true", "yes", "1", "correct", "y"}
_FALSE = {"false", "no", "0", "incorrect", "n"}
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
# A JSON key followed by a boolean-like scalar, also inside a reply cut off by max_tokens.
_KEY_VALUE = re.compile(r'"(%s)"\s*:\s*"?(true|false|yes|no|1|0)\b' % "|".join(VERDICT_KEYS), re.I)
_RATIONALE = re.compile(r'"(?:rationale|reason|explanation)"\s*:\s*"((?:[^"\\]|\\.)*)', re.S)
# "Verdict: yes" on its own line, as models without JSON mode often write.
_LABELLED = re.compile(r"^\s*\**(?:verdict|answer|judg(?:e)?ment)\**\s*[:=]\s*\**\s*(true|false|yes|no)\b", re.I | re.M)
# A reply that opens with a bare yes/no ("No, the query bundles two questions ...").
_LEADING = re.compile(r"^\W*(true|false|yes|no)\b", re.I)


@dataclass(frozen=True)
class Verdict:
    """A judge's boolean (None when unparseable), its rationale and, if unparseable, why."""

    value: bool | None
    rationale: str = ""
    error: str | None = None


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().strip(".").lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    return None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object found in the text: the whole reply, fenced blocks, then each balanced {...} span."""
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            obj, _ = decoder.raw_decode(text[start:])
        except ValueError:
            continue
        candidates.append(obj)
    found = []
    for candidate in candidates:
        if isinstance(candidate, str):
            try:
                candidate = json.loads(candidate)
            except ValueError:
                continue
        if isinstance(candidate, dict):
            found.append(candidate)
    return found


def parse_verdict(text: str | None) -> Verdict:
    """A boolean verdict from JSON (strict, fenced or embedded), a truncated JSON prefix, or a `Verdict: yes` line."""
    if text is None or not text.strip():
        return Verdict(None, error="empty reply")
    for obj in _json_objects(text):
        for key in VERDICT_KEYS:
            if key in obj:
                value = _as_bool(obj[key])
                rationale = str(obj.get("rationale") or obj.get("reason") or obj.get("explanation") or "")
                if value is None:
                    return Verdict(None, rationale, error=f"{key!r} is {obj[key]!r}, not a boolean")
                return Verdict(value, rationale)
    values = {_as_bool(m.group(2)) for m in _KEY_VALUE.finditer(text)} | {
        _as_bool(m.group(1)) for m in _LABELLED.finditer(text)
    }
    if len(values) == 1:
        found = _RATIONALE.search(text)
        return Verdict(values.pop(), found.group(1) if found else "")
    leading = _LEADING.match(text)
    if not values and leading:
        return Verdict(_as_bool(leading.group(1)), text[leading.end() :].strip(" ,.:;-\n"))
    if len(values) > 1:
        return Verdict(None, error="contradictory verdicts in the reply")
    return Verdict(None, error="no verdict found in the reply")


def parse_query_list(text: str | None) -> tuple[list[str], str | None]:
    """Teacher queries from `{"queries": [...]}` or a bare JSON list; ([], reason) when unparseable."""
    if text is None or not text.strip():
        return [], "empty reply"
    for obj in _json_objects(text):
        queries = obj.get("queries")
        if isinstance(queries, list) and queries and all(isinstance(q, str) and q.strip() for q in queries):
            return [q.strip() for q in queries], None
    start = text.find("[")
    if start >= 0:
        try:
            items, _ = json.JSONDecoder().raw_decode(text[start:])
        except ValueError:
            items = None
        if isinstance(items, list) and items and all(isinstance(q, str) and q.strip() for q in items):
            return [q.strip() for q in items], None
    return [], "no JSON list of queries found in the reply"
