"""The backend interface: a batch of prompts in, one generation per prompt out."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsuite.errors import EvalsuiteError, require, require_installed


@dataclass
class GenerationRequest:
    """One prompt to continue. `key` identifies (example id, turn) for backends that replay recordings."""

    prompt: str
    stop: list[str] = field(default_factory=list)
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int = 0
    top_p: float | None = None  # nucleus sampling (None: the backend's default); read where `supports_top_p`
    key: tuple[str, int] | None = None


# How `request_seed` turns a run's seed into a request's, recorded in a sampled run's manifest (`decoding.seeding`) so
# that a resume never mixes two schemes. Runs written before it was recorded used sha256((run seed, key)) whole.
SEEDING = "key-hash-plus-seed-v2"


def request_seed(request: GenerationRequest) -> int:
    """The sampling seed of one request: a hash of its key (trajectory, turn) plus the run's seed, mod 2**32, so that
    two trajectories of one prompt (GRPO's group) draw different samples under an engine that seeds each request on
    its own (vLLM), and each stays reproducible. Without a key, the run's seed.

    The seed is linear in the run's seed: a question's K samples (run seeds S, S+1, ..., `RunConfig.sample_seed`, one
    key) get consecutive seeds, which is exactly what one vLLM request for n = K samples draws (`native_n_groups`)."""
    if request.key is None:
        return request.seed
    digest = hashlib.sha256(repr(request.key).encode("utf-8")).digest()
    return (int.from_bytes(digest[:4], "little") + request.seed) % 2**32


def native_n_groups(requests: Sequence[GenerationRequest], grouping: bool = True) -> list[list[int]]:
    """The requests' indices in groups that one request for n = len(group) samples answers exactly (`grouping=False`,
    a backend's `native_n=false`: each request a group of its own).

    vLLM runs a request for n samples seeded b as n requests seeded b, b + 1, ... (its `parallel_sampling.py`), and
    these draw what the single requests draw (measured: tests/models/test_vllm_parallel_sampling.py). So a group is
    sampled requests with the same prompt and settings whose seeds (`request_seed`) are consecutive, in seed order:
    its first request, asked for n, answers all of them in that order, and batching changes no output. Every request
    is in exactly one group; a greedy one, or one without a consecutive partner, is a group of its own. Groups come
    in the order of their first-listed request."""
    groups: list[list[int]] = []
    seeded: dict[tuple[Any, ...], list[tuple[int, int]]] = {}
    for index, request in enumerate(requests):
        if grouping and request.temperature > 0:
            settings = (request.prompt, tuple(request.stop), request.max_tokens, request.temperature, request.top_p)
            seeded.setdefault(settings, []).append((request_seed(request), index))
        else:
            groups.append([index])
    for pairs in seeded.values():
        pairs.sort()
        run = [pairs[0]]
        for pair in pairs[1:]:
            if pair[0] != run[-1][0] + 1:  # a gap (or the same seed twice) ends the group
                groups.append([index for _, index in run])
                run = []
            run.append(pair)
        groups.append([index for _, index in run])
    return sorted(groups, key=min)


def option_on(value: bool | str) -> bool:
    """A yes/no backend option as given on the command line (`--backend-option native_n=false`) or in Python."""
    return str(value).strip().lower() not in ("false", "0", "no", "off")


@dataclass
class Generation:
    """A continuation. `text` ends with the stop string that ended it, if one did (Search-R1 keeps `</search>`)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"  # "stop" (a stop string), "eos", "length", "error"
    stop_string: str | None = None
    latency_s: float = 0.0
    error: str | None = None


# Backends that expose no tokenizer (HTTP endpoints, replay) count words and punctuation marks, which tracks BPE
# counts of English prose within ~20%.
_PIECES = re.compile(r"\w+|[^\w\s]")


def _character_class(char: str) -> str:
    """The class `_PIECES` sees in one character: "w" a word character, " " white space, "p" a mark."""
    if re.match(r"\w", char):
        return "w"
    return " " if re.match(r"\s", char) else "p"


# Each ASCII character as its class's byte, for bytes.translate (the rest of the 256 never occur: ASCII text only).
_ASCII_CLASSES = "".join(_character_class(chr(code)) for code in range(128)).encode("ascii").ljust(256, b"\0")
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# An ASCII character of each class, to stand in for a non-ASCII character of that class.
_STAND_IN = {"w": "a", " ": " ", "p": "."}


@functools.lru_cache(maxsize=4096)
def _ascii_stand_in(char: str) -> str:
    return _STAND_IN[_character_class(char)]


def approx_token_count(text: str) -> int:
    """Approximate token count: words plus punctuation marks (`_PIECES`' matches).

    Counted from the characters' classes rather than by listing the matches, about 6x faster on passages (the
    rollout loop counts every prompt and observation): the text as a string of class bytes, in which a word starts
    at a "w" that opens the text or follows a " " or "p", and every "p" is a mark."""
    if not text.isascii():
        # each non-ASCII character replaced by an ASCII one of its class, which leaves the count as it was
        text = _NON_ASCII.sub(lambda match: _ascii_stand_in(match.group()), text)
    classes = text.encode("ascii").translate(_ASCII_CLASSES)
    return classes.count(b"p") + classes.count(b" w") + classes.count(b"pw") + classes.startswith(b"w")


def approx_truncate(text: str, max_tokens: int) -> str:
    """Cut `text` after `max_tokens` approximate tokens."""
    if max_tokens <= 0:
        return ""
    for index, match in enumerate(_PIECES.finditer(text)):
        if index == max_tokens:
            return text[: match.start()]
    return text


def cut_at_stop(text: str, stops: list[str]) -> tuple[str, str | None]:
    """Cut `text` just after the earliest stop string; returns (text, matched stop or None)."""
    best: tuple[int, str] | None = None
    for stop in stops:
        at = text.find(stop)
        if at != -1 and (best is None or at < best[0]):
            best = (at, stop)
    if best is None:
        return text, None
    return text[: best[0] + len(best[1])], best[1]


def infer_stop(text: str, stops: list[str]) -> str | None:
    """For servers that drop the matched stop string and don't say which: the closing tag whose opening tag is unclosed.

    Stops of the form `</x>` are recognised when `<x>` occurs after the last `</x>`; anything else stays unknown.
    """
    for stop in stops:
        if stop.startswith("</") and stop.endswith(">"):
            opening = "<" + stop[2:]
            if text.rfind(opening) > text.rfind(stop):
                return stop
    return None


class ScheduleUnsupported(EvalsuiteError):
    """`--schedule async` with a backend that generates one whole batch at a time."""

    def __init__(self, backend: str):
        super().__init__(
            f"the {backend} backend does not support --schedule async (it generates one whole batch at a time)",
            hint=(
                "use --schedule sync, or serve the model with vLLM or "
                "llama.cpp and use --backend openai (or --backend vllm-async)"
            ),
        )


@dataclass(frozen=True)
class Needs:
    """An optional package a backend loads: its module, the extra that installs it, a hint other than that extra's."""

    module: str
    extra: str
    hint: str | None = None


class Backend(ABC):
    """A text-generation backend. Subclasses import their heavy library lazily in `__init__` (`import_needs`).

    Backends that batch continuously (a server, vLLM's async engine) also implement `agenerate` and set
    `supports_async`, so the rollout loop can let each trajectory advance on its own (`--schedule async`)."""

    name: str = "base"
    supports_async: bool = False
    # `generate` passes GenerationRequest.top_p to the sampler; `--top-p` is refused for a backend that does not.
    supports_top_p: bool = False
    # Options (and info() keys) that change how a run goes (speed, timeouts, credentials), never what it generates:
    # a resume or merge may differ in them (`runs.comparable.operational_options`); every other option must match.
    operational_options: frozenset[str] = frozenset()
    needs: tuple[Needs, ...] = ()  # checked before anything loads (`check_installed`), imported by `import_needs`

    @classmethod
    def check_installed(cls) -> None:
        """One line naming what to install when a package the backend loads is missing, without importing it."""
        for need in cls.needs:
            require_installed(need.module, need.extra, f"the {cls.name} backend", need.hint)

    @classmethod
    def import_needs(cls) -> list[Any]:
        """The modules of `needs`, imported, in order."""
        return [require(need.module, need.extra, f"the {cls.name} backend", need.hint) for need in cls.needs]

    @abstractmethod
    def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        """Continue every prompt; a failure on one request sets that Generation's `error`, never raises for it."""

    async def agenerate(self, request: GenerationRequest) -> Generation:
        """Continue one prompt while others are in flight (only where `supports_async`); failures as in `generate`."""
        raise ScheduleUnsupported(self.name)

    async def aclose(self) -> None:
        """Release what `agenerate` opened in the running event loop (connections), before the loop ends."""

    def info(self) -> dict[str, Any]:
        """Provenance for the manifest: backend name and version, model path, file hash or revision."""
        return {"backend": self.name}

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        """The model's chat template applied to `messages` with a generation prompt, or None if it has none."""
        return None

    def has_chat_template(self) -> bool:
        """Whether the model has a chat template: prompt style `auto` then means `instruct`, else `base`."""
        return self.chat_template([{"role": "user", "content": "x"}]) is not None

    def count_tokens(self, text: str) -> int:
        """Tokens in `text` under the model's tokenizer (approximate where the backend has none)."""
        return approx_token_count(text)

    def truncate_tokens(self, text: str, max_tokens: int) -> str:
        """`text` cut to at most `max_tokens` tokens."""
        return approx_truncate(text, max_tokens)

    def close(self) -> None:
        """Release the model or connections."""


async def agenerate_batch(backend: Backend, requests: list[GenerationRequest]) -> list[Generation]:
    """A whole batch through `backend.agenerate` at once (the turn-synchronous schedule on a backend that batches
    continuously), then what it opened in this event loop closed."""
    try:
        return list(await asyncio.gather(*(backend.agenerate(r) for r in requests)))
    finally:
        await backend.aclose()


class HFTokenizerMixin:
    """Chat template, token counting and truncation through a transformers tokenizer (`self.tokenizer`),
    shared by the backends that load one (hf, vllm)."""

    tokenizer: Any

    def chat_template(self, messages: list[dict[str, str]]) -> str | None:
        if not getattr(self.tokenizer, "chat_template", None):
            return None
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def truncate_tokens(self, text: str, max_tokens: int) -> str:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return text if len(ids) <= max_tokens else self.tokenizer.decode(ids[:max_tokens])
