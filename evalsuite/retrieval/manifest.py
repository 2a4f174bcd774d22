"""The index directory's manifest (`index.json`): what was indexed, how, and checks that it still matches."""

from __future__ import annotations

import threading

import hashlib
import json
import re
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.files import file_sha256
from evalsuite.provenance import CorpusRecord, provenance_fields
from evalsuite.retrieval.corpus import CorpusReader, DocStore

if TYPE_CHECKING:
    from evalsuite.retrieval.bm25_build import CorpusScan

MANIFEST_NAME = "index.json"
OFFSETS_NAME = "docstore.offsets.npy"
FORMAT = "evalsuite-index"
FORMAT_VERSION = 1


class IndexFormatError(EvalsuiteError):
    """An index directory is missing, incomplete or of an unknown format."""


class IndexMismatchError(EvalsuiteError):
    """An index and its corpus (or its own files) no longer match: serving it would return wrong passages."""


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def compute_index_hash(manifest: dict[str, Any]) -> str:
    """The identity of an index: retriever, parameters, corpus hash and the hashes of its files (not times or paths)."""
    identity = {
        "format_version": manifest["format_version"],
        "retriever": manifest["retriever"],
        "corpus_hash": manifest["corpus_hash"],
        "params": manifest.get("params", {}),
        "files": manifest.get("files", {}),
    }
    return hashlib.sha256(canonical_json(identity).encode("utf-8")).hexdigest()


def corpus_record(reader: "CorpusReader | CorpusScan") -> dict[str, Any]:
    """The manifest's `corpus` section from a finished pass over the corpus."""
    if reader.sha256 is None:  # a programming error: the reader has not been iterated to its end
        raise ValueError(f"corpus_record({reader.path}) before a finished pass over the corpus")
    record = CorpusRecord(
        path=str(reader.path.resolve()),
        name=reader.path.name,
        sha256=reader.sha256,
        size_bytes=reader.size_bytes,
        mtime_ns=reader.path.stat().st_mtime_ns,
        num_documents=reader.num_documents,
    )
    return record.model_dump(mode="json")


def corpus_display(record: dict[str, Any] | None) -> str | None:
    """A corpus as a person names it, from an index's or a run manifest's corpus record: `wiki-18 sample, 38,574
    passages`, `AD-QA corpus, 7,111 passages`; None without a record. The file name loses its extensions and the
    cache's `<retriever>-<hash>.` prefix; the shipped AD-QA corpus (copied into the cache under a hashed name) is
    recognised by its cache folder."""
    if not record or not (record.get("name") or record.get("path")):
        return None
    name = str(record.get("name") or Path(str(record["path"])).name)
    if "adqa" in Path(str(record.get("path") or "")).parts:
        label = "AD-QA corpus"
    else:
        stem = re.sub(r"(\.(jsonl|json|tsv|parquet|gz))+$", "", name, flags=re.IGNORECASE)
        stem = re.sub(r"^[a-z0-9]+-[0-9a-f]{8,}\.", "", stem)  # the cache's `bm25-30305de26455c438.` prefix
        label = re.sub(r"(?i)^wiki[-_]?18", "wiki-18", stem).replace("_", " ")
    count = record.get("num_documents")
    return f"{label}, {count:,} passages" if isinstance(count, int) else label


def write_docstore(out_dir: Path, reader: "CorpusReader | CorpusScan") -> None:
    np.save(out_dir / OFFSETS_NAME, reader.offsets)


def write_manifest(out_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Fill `index_hash`, then write `index.json` atomically (its presence marks a complete index)."""
    manifest = dict(manifest)
    manifest["index_hash"] = compute_index_hash(manifest)
    tmp = out_dir / (MANIFEST_NAME + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / MANIFEST_NAME)
    return manifest


def read_manifest(index_dir: str | Path) -> dict[str, Any]:
    """The manifest of an index directory, checked for format and self-consistency."""
    index_dir = Path(index_dir)
    path = index_dir / MANIFEST_NAME
    if not index_dir.is_dir():
        raise IndexFormatError(
            f"index directory {index_dir} does not exist", hint="build one with `evalsuite index build`"
        )
    if not path.is_file():
        raise IndexFormatError(
            f"{index_dir} has no {MANIFEST_NAME}: not an index directory, or its build did not finish",
            hint="(re)run `evalsuite index build` or `evalsuite index import` into it",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise IndexFormatError(f"{path}: invalid JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexFormatError(f"{path}: not an evalsuite index manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexFormatError(
            f"{path}: index format version {manifest.get('format_version')} "
            f"is not supported (this evalsuite reads {FORMAT_VERSION})",
            hint="rebuild the index with this evalsuite version",
        )
    _check_fields(path, manifest)
    expected = compute_index_hash(manifest)
    if manifest.get("index_hash") != expected:
        raise IndexMismatchError(
            f"{path}: the manifest was edited after the build (index_hash "
            f"{manifest.get('index_hash')} does not match its contents, {expected})",
            hint="rebuild the index rather than editing index.json",
        )
    return manifest


REQUIRED_FIELDS: dict[str, type] = {
    "retriever": str,
    "corpus_hash": str,
    "corpus": dict,
    "params": dict,
    "files": dict,
    "index_hash": str,
}
# The corpus record's required fields, checked by hand so a bad one is named in the manifest's own terms.
REQUIRED_CORPUS_FIELDS: dict[str, type] = {
    name: field.annotation
    for name, field in CorpusRecord.model_fields.items()
    if field.is_required() and field.annotation is not None
}


def _check_fields(path: Path, manifest: dict[str, Any]) -> None:
    """An `IndexFormatError` naming the first missing or mistyped field (a hand-edited or truncated manifest)."""
    checks = [(key, manifest, kind, key) for key, kind in REQUIRED_FIELDS.items()]
    corpus = manifest.get("corpus")
    corpus_section: dict[str, Any] = corpus if isinstance(corpus, dict) else {}
    checks += [(key, corpus_section, kind, f"corpus.{key}") for key, kind in REQUIRED_CORPUS_FIELDS.items()]
    for key, section, kind, shown in checks:
        if key not in section:
            raise IndexFormatError(
                f"{path}: the manifest has no '{shown}' field",
                hint="rebuild the index; index.json is written by `evalsuite index build`",
            )
        value = section[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise IndexFormatError(
                f"{path}: '{shown}' is {type(value).__name__}, not {getattr(kind, '__name__', kind)}",
                hint="rebuild the index",
            )


def verify_files(index_dir: Path, manifest: dict[str, Any], full: bool = False) -> None:
    """Every file the manifest lists exists with the recorded size (and, with `full`, the recorded sha256)."""
    sizes = manifest.get("file_sizes", {})
    for name, digest in manifest.get("files", {}).items():
        path = index_dir / name
        if not path.exists():
            raise IndexMismatchError(f"{index_dir}: index file {name} is missing")
        size = path.stat().st_size
        if name in sizes and size != sizes[name]:
            raise IndexMismatchError(
                f"{path}: size {size} bytes, but the manifest records {sizes[name]}: the index file changed"
            )
        if full and file_sha256(path) != digest:
            raise IndexMismatchError(f"{path}: sha256 differs from the manifest: the index file changed")


def verify_index(index_dir: str | Path, corpus: str | Path | None = None) -> dict[str, Any]:
    """Rehash every index file and the corpus against the manifest (`evalsuite index verify`); returns the manifest.

    Loading compares only sizes (and the corpus's modification time), so an edit that keeps a file's size is found
    here, not there.
    """
    index_dir = Path(index_dir)
    manifest = read_manifest(index_dir)
    verify_files(index_dir, manifest, full=True)
    resolve_corpus(manifest, corpus, verify="full")
    return manifest


def public_info(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest without absolute paths (what a server may show): every path is cut to its file name."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        if isinstance(value, str) and os.path.isabs(value):
            return Path(value).name
        return value

    return scrub(manifest)


def resolve_corpus(manifest: dict[str, Any], corpus: str | Path | None = None, verify: str = "auto") -> Path:
    """The corpus file of an index, checked against the manifest's hash.

    `corpus` relocates it (a moved or copied file). `verify`: "auto" rehashes only when size or mtime differ from
    the manifest, "full" always rehashes, "size" only compares sizes. A different file is an `IndexMismatchError`.
    """
    record = manifest["corpus"]
    path = Path(corpus) if corpus is not None else Path(record["path"])
    if not path.is_file():
        raise IndexMismatchError(
            f"the index's corpus file {path} does not exist",
            hint="pass the corpus's new location (load_retriever(..., corpus=PATH) or --corpus)",
        )
    stat = path.stat()
    if stat.st_size != record["size_bytes"]:
        raise IndexMismatchError(
            f"corpus {path} is {stat.st_size} bytes but the index was built from {record['size_bytes']} bytes"
            f" (sha256 {record['sha256'][:16]}...): this is not the indexed corpus",
            hint="rebuild the index for this corpus, or point it at the corpus it was built from",
        )
    same_file = corpus is None or Path(corpus).resolve() == Path(record["path"])
    if verify == "full" or (verify == "auto" and not (same_file and stat.st_mtime_ns == record["mtime_ns"])):
        digest = file_sha256(path)
        if digest != record["sha256"]:
            raise IndexMismatchError(
                f"corpus {path} has sha256 {digest[:16]}... but the index was built from "
                f"sha256 {record['sha256'][:16]}...: the corpus changed after indexing",
                hint="rebuild the index for this corpus, or point it at the corpus it was built from",
            )
    return path


def open_docstore(index_dir: Path, manifest: dict[str, Any], corpus: str | Path | None, verify: str) -> DocStore:
    """The document store of an index, after checking the corpus and the offsets against the manifest."""
    corpus_path = resolve_corpus(manifest, corpus, verify)
    offsets_path = index_dir / OFFSETS_NAME
    if not offsets_path.is_file():
        raise IndexMismatchError(f"{index_dir}: {OFFSETS_NAME} is missing")
    offsets = np.load(offsets_path, mmap_mode="r")
    expected = manifest["corpus"]["num_documents"]
    if offsets.shape[0] != expected:
        raise IndexMismatchError(
            f"{index_dir}: the document store holds {offsets.shape[0]} documents, the manifest {expected}"
        )
    return DocStore(corpus_path, offsets)


class SavedIndexRetriever:
    """What every retriever over a saved index directory shares: the checked files and corpus, the document store,
    the manifest as its `info`, and a lock (searches of one index run one at a time)."""

    def __init__(self, index_dir: str | Path, manifest: dict[str, Any], corpus: str | Path | None, verify: str):
        self.index_dir = Path(index_dir)
        self.manifest = manifest
        verify_files(self.index_dir, manifest)
        self.docstore: DocStore = open_docstore(self.index_dir, manifest, corpus, verify)
        self._lock = threading.Lock()

    @property
    def num_documents(self) -> int:
        return len(self.docstore)

    def info(self) -> dict[str, Any]:
        return dict(self.manifest)


def base_manifest(retriever: str, reader: "CorpusReader | CorpusScan", params: dict[str, Any]) -> dict[str, Any]:
    """The manifest fields shared by every index kind (the shared provenance fields, corpus record, parameters)."""
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "retriever": retriever,
        "corpus_hash": reader.sha256,
        "corpus": corpus_record(reader),
        "params": params,
        **provenance_fields(),
    }


def record_files(out_dir: Path, manifest: dict[str, Any], names: list[str]) -> None:
    """Record the sha256 and size of index files (relative names) in the manifest."""
    files: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for name in sorted(names):
        path = out_dir / name
        files[name] = file_sha256(path)
        sizes[name] = path.stat().st_size
    manifest["files"] = files
    manifest["file_sizes"] = sizes
