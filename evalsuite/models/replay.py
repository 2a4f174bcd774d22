"""Replay recorded trajectories: the model turns come from a recording, retrieval runs live (or replays too).

A recording is a FlashRAG/Search-R1 `intermediate_data` JSON list (../shared/data/trajectories): per question the
prompt (`output.query`) and the whole response (`output.final_response`) with its `<information>` observations.
The response is split at the observations, so turn i of example X is the i-th stretch of model text. This gives
deterministic tests and overhead benchmarks with real model text and zero model time.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.agent.trajectory import INVALID_ACTION_PREFIX, parse_passages
from evalsuite.errors import DataError
from evalsuite.models.base import Backend, Generation, GenerationRequest, approx_token_count
from evalsuite.runs.provenance import text_sha256

# Search-R1's observation is `\n\n<information>…</information>\n\n`; its invalid-action message is one line.
_OBSERVATION = re.compile(r"\n\n<information>(.*?)</information>\n\n|\n" + re.escape(INVALID_ACTION_PREFIX) + r"[^\n]*\n", re.DOTALL)
_CHATML_SYSTEM = re.compile(r"^<\|im_start\|>system\n(.*?)<\|im_end\|>\n", re.DOTALL)


@dataclass
class RecordedExample:
    """One recorded question: its prompt, model turns and the passages each search returned."""

    id: str
    question: str
    prompt: str
    turns: list[str]
    observations: list[str | None]  # the `<information>` content after each turn (None: invalid-action message)
    stop_reason: str | None


@dataclass
class ReplayHit:
    """A recorded passage, shaped like `evalsuite.retrieval.Hit`."""

    doc_id: str
    contents: str
    score: float
    rank: int


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


def load_recording(path: str | Path) -> dict[str, RecordedExample]:
    """Read a recording file into examples by id; errors name the file and the item."""
    path = Path(path)
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
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
            raise DataError(f"{where}: needs 'id' and 'output.final_response'", hint="use a FlashRAG intermediate_data file")
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


def _hits_from_block(block: str) -> list[ReplayHit]:
    hits = []
    for rank, passage in enumerate(parse_passages(block)):
        # wiki-18 contents put the title on the first line (quoted in wiki-18; some corpora don't quote it).
        title = passage.title or ""
        if f'(Title: "{title}")' in block:
            title = f'"{title}"'
        contents = f"{title}\n{passage.text}"
        doc_id = "replay:" + hashlib.sha1(contents.encode("utf-8")).hexdigest()[:12]
        hits.append(ReplayHit(doc_id=doc_id, contents=contents, score=0.0, rank=rank))
    return hits


class ReplayBackend(Backend):
    """Returns turn i of the recorded example named by each request's key."""

    name = "replay"
    supports_async = True

    def __init__(self, model: str, delay_s: float = 0.0, **options: Any):
        self.path = Path(model)
        # A fixed sleep per call, whatever the batch size: the shape of GPU batching, for benchmarks and kill tests.
        self.delay_s = float(delay_s)
        self.examples = load_recording(self.path)
        self._system = self._chatml_system()

    def _chatml_system(self) -> str | None:
        first = next(iter(self.examples.values()), None)
        match = _CHATML_SYSTEM.match(first.prompt) if first else None
        return match.group(1) if match else None

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        """The recording's own ChatML (Qwen) template with its system message, when its prompts use one."""
        if self._system is None:
            return None
        out = f"<|im_start|>system\n{self._system}<|im_end|>\n"
        for message in messages:
            out += f"<|im_start|>{message['role']}\n{message['content']}<|im_end|>\n"
        return out + "<|im_start|>assistant\n"

    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        if self.delay_s:
            time.sleep(self.delay_s)
        return [self._one(request) for request in requests]

    async def agenerate(self, request: GenerationRequest) -> Generation:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self._one(request)

    def _one(self, request: GenerationRequest) -> Generation:
        if request.key is None:
            return Generation(text="", finish_reason="error", error="the replay backend needs request keys (example id, turn)")
        example_id, turn = request.key
        example = self.examples.get(example_id)
        if example is None:
            return Generation(text="", finish_reason="error", error=f"{self.path}: no recorded trajectory for id {example_id!r}")
        if turn >= len(example.turns):
            return Generation(text="", completion_tokens=0, finish_reason="exhausted")
        text = example.turns[turn]
        stop = next((s for s in request.stop if text.endswith(s)), None)
        finish = "stop" if stop else ("length" if example.stop_reason == "length" and turn == len(example.turns) - 1 else "eos")
        return Generation(
            text=text,
            completion_tokens=approx_token_count(text),
            finish_reason=finish,
            stop_string=stop,
        )

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "version": "1",
            "model": str(self.path),
            "model_hash": text_sha256(self.path.read_text(encoding="utf-8")),
            "examples": len(self.examples),
        }


class ReplayRetriever:
    """Returns the passages a recording's retriever gave for each query (`--retriever replay`)."""

    def __init__(self, examples: dict[str, RecordedExample]):
        self.by_query: dict[str, list[ReplayHit]] = {}
        for example in examples.values():
            for text, block in zip(example.turns, example.observations):
                query = _recorded_query(text)
                if block is not None and query is not None:
                    self.by_query.setdefault(query, _hits_from_block(block))

    def search(self, queries: list[str], k: int) -> list[list[ReplayHit]]:
        """Recorded hits per query (at most k); a query never recorded gets no passages."""
        return [self.by_query.get(query.strip(), [])[:k] for query in queries]

    def info(self) -> dict[str, Any]:
        digest = hashlib.sha256()
        for query in sorted(self.by_query):
            digest.update(query.encode("utf-8"))
            for hit in self.by_query[query]:
                digest.update(hit.contents.encode("utf-8"))
        return {"kind": "replay", "queries": len(self.by_query), "index_hash": digest.hexdigest()}


def _recorded_query(text: str) -> str | None:
    match = re.search(r"<search>(.*?)</search>", text, re.DOTALL)
    return match.group(1).strip() if match else None
