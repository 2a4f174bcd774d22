"""A panel of judges: every request goes to every judge; verdicts are parsed, recorded per judge and majority-voted."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalsuite.judges.cache import JudgeCache
from evalsuite.judges.client import JudgeClient, JudgeUsage
from evalsuite.judges.config import PanelConfig
from evalsuite.judges.prompts import PromptTemplate
from evalsuite.judges.verdict import Verdict, parse_verdict


@dataclass(frozen=True)
class JudgeRequest:
    """One question to the panel: which example, metric and item it is about, and the template's input."""

    example_id: str
    task: str
    metric: str
    item: str
    template: PromptTemplate
    values: dict[str, str] = field(hash=False)


class Judgment(BaseModel):
    """One judge's verdict on one request: a line of judgments.jsonl."""

    example_id: str
    task: str
    metric: str
    item: str
    judge: str
    model: str
    template: str
    template_hash: str
    verdict: bool | None
    rationale: str = ""
    parse_error: str | None = None
    reply: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    input: dict[str, Any] = {}


def majority_vote(values: list[bool | None]) -> bool | None:
    """Strict majority of the parsed verdicts; None on a tie or when no judge's verdict parsed."""
    yes = sum(v is True for v in values)
    no = sum(v is False for v in values)
    if yes == no:
        return None
    return yes > no


async def _gather_with_progress(coroutines: list, description: str) -> list:
    """asyncio.gather, in order, with a progress bar on stderr (shown only when stderr is a terminal)."""
    from evalsuite.console import progress

    with progress() as bars:
        bar = bars.add_task(description, total=len(coroutines))

        async def counted(coroutine):
            result = await coroutine
            bars.advance(bar)
            return result

        return list(await asyncio.gather(*(counted(c) for c in coroutines)))


class Panel:
    """The judges of a panel file over one shared cache and one concurrency limit."""

    def __init__(self, config: PanelConfig, cache_path: str | Path):
        self.config = config
        self.cache = JudgeCache(cache_path)
        self._semaphore: asyncio.Semaphore | None = None
        self.clients: list[JudgeClient] = []

    async def _open(self) -> None:
        self._semaphore = asyncio.Semaphore(self.config.concurrency)
        self.clients = [JudgeClient(judge, self.cache, self._semaphore) for judge in self.config.judges]

    async def _close(self) -> None:
        for client in self.clients:
            await client.close()

    async def _one(self, client: JudgeClient, request: JudgeRequest) -> Judgment:
        reply = await client.ask(request.template, request.values)
        verdict = Verdict(None, error=f"no reply: {reply.error}") if reply.text is None else parse_verdict(reply.text)
        value, rationale, error = verdict.value, verdict.rationale, verdict.error
        return Judgment(
            example_id=request.example_id,
            task=request.task,
            metric=request.metric,
            item=request.item,
            judge=client.config.name,
            model=client.config.model,
            template=request.template.name,
            template_hash=request.template.hash,
            verdict=value,
            rationale=rationale,
            parse_error=error,
            reply=reply.text,
            cached=reply.cached,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            input=request.values,
        )

    async def ask_texts(
        self, template: PromptTemplate, values: list[dict[str, str]], judge: str | None = None
    ) -> list[str | None]:
        """Free-text replies of one judge (the first by default) to many inputs, e.g. teacher queries."""
        await self._open()
        try:
            client = next((c for c in self.clients if judge in (None, c.config.name)), None)
            if client is None:
                raise KeyError(judge)
            replies = await _gather_with_progress([client.ask(template, v) for v in values], template.name)
            return [r.text for r in replies]
        finally:
            await self._close()

    async def judge(self, requests: list[JudgeRequest]) -> list[Judgment]:
        """Every judge's verdict on every request, in request order then panel order."""
        await self._open()
        try:
            return await _gather_with_progress(
                [self._one(c, r) for r in requests for c in self.clients], "judge requests"
            )
        finally:
            await self._close()

    def usage(self) -> dict[str, dict[str, float]]:
        return {c.config.name: c.usage.to_dict() for c in self.clients}

    def close(self) -> None:
        self.cache.close()


def run_panel(
    config: PanelConfig, cache_path: str | Path, requests: list[JudgeRequest]
) -> tuple[list[Judgment], dict[str, dict[str, float]]]:
    """Judge requests synchronously; returns the judgments and per-judge usage of this call."""
    panel = Panel(config, cache_path)
    try:
        judgments = asyncio.run(panel.judge(requests))
        return judgments, panel.usage()
    finally:
        panel.close()


def add_usage(total: dict[str, dict[str, float]], new: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per-judge usage summed over calls (kept in metrics.json across reruns)."""
    out = {name: dict(values) for name, values in total.items()}
    for name, values in new.items():
        slot = out.setdefault(name, JudgeUsage().to_dict())
        for key, value in values.items():
            slot[key] = slot.get(key, 0) + value
    return out
