"""Recorded Search-R1 trajectories: per question the prompt and the model turns, with the observation after each.

A recording is a FlashRAG/Search-R1 `intermediate_data` JSON list (../shared/data/trajectories): per question the
prompt (`output.query`) and the whole response (`output.final_response`) with its `<information>` observations.
The response is split at the observations, so turn i of example X is the i-th stretch of model text. The replay
backend (`evalsuite.models.replay`) serves the turns; the replay retriever (`evalsuite.retrieval.replay`) serves
the observations' passages.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from evalsuite.errors import DataError
from evalsuite.files import read_untrusted_bytes
from evalsuite.protocol.search_r1 import INVALID_ACTION_PREFIX

# A recording of a whole benchmark's trajectories is tens of megabytes; the bound only stops what never ends.
MAX_RECORDING_BYTES = 4 << 30

# Search-R1's observation is `\n\n<information>…</information>\n\n`; its invalid-action message is one line.
_OBSERVATION = re.compile(
    r"\n\n<information>(.*?)</information>\n\n|\n" + re.escape(INVALID_ACTION_PREFIX) + r"[^\n]*\n", re.DOTALL
)


@dataclass
class RecordedExample:
    """One recorded question: its prompt, model turns and the passages each search returned."""

    id: str
    question: str
    prompt: str
    turns: list[str]
    observations: list[str | None]  # the `<information>` content after each turn (None: invalid-action message)
    stop_reason: str | None


def split_response(response: str) -> tuple[list[str], list[str | None]]:
    """Split a response into model turns and the observation block that followed each (all but maybe the last)."""
    turns: list[str] = []
    observations: list[str | None] = []
    position = 0
    for match in _OBSERVATION.finditer(response):
        turns.append(response[position : match.start()])
        observations.append(match.group(1))
        position = match.end()
    tail = response[position:]
    if tail or not turns:
        turns.append(tail)
    return turns, observations


# Shaped like judges.config.load_panel (read, name the file in each error); the format and hints differ.
def load_recording(path: str | Path) -> dict[str, RecordedExample]:
    """Read a recording file into examples by id; errors name the file and the item."""
    path = Path(path)
    try:
        items = json.loads(read_untrusted_bytes(path, MAX_RECORDING_BYTES, "recording").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: the recording is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except FileNotFoundError:
        raise DataError(f"recording {path} does not exist", hint="pass a trajectories JSON file as --model") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{exc.lineno}: invalid JSON ({exc.msg})") from None
    if not isinstance(items, list):
        raise DataError(f"{path}: expected a JSON list of recorded questions, got {type(items).__name__}")
    examples: dict[str, RecordedExample] = {}
    for index, item in enumerate(items):
        where = f"{path}: item {index}"
        output = item.get("output") if isinstance(item, dict) else None
        if not isinstance(output, dict) or "final_response" not in output or "id" not in item:
            raise DataError(
                f"{where}: needs 'id' and 'output.final_response'", hint="use a FlashRAG intermediate_data file"
            )
        turns, observations = split_response(output["final_response"])
        examples[str(item["id"])] = RecordedExample(
            id=str(item["id"]),
            question=str(item.get("question", "")),
            prompt=str(output.get("query", "")),
            turns=turns,
            observations=observations,
            stop_reason=output.get("stop_reason"),
        )
    return examples
