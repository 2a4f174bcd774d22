"""Corpus files (wiki-18 JSONL): validated streaming, a content hash, and a memory-mapped document store.

Rows are `{"id", "contents": "\\"Title\\"\\ntext"}` (wiki-18 / FlashRAG) or `{"id", "title", "text"}`; extra fields
are ignored. Every error names `file:line`. Duplicate ids are rejected.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from array import array
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from evalsuite.errors import DataError
from evalsuite.retrieval.types import Document, join_contents, split_contents


def document_from_row(obj: Any, where: str) -> Document:
    """Validate one decoded corpus row; `where` ("file:line") is named in every error."""
    if not isinstance(obj, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    raw_id = obj.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        got = "missing" if raw_id is None else f"a {type(raw_id).__name__}"
        raise DataError(
            f"{where}: 'id' must be a string (or an integer), got {got}", hint='every passage needs a unique "id"'
        )
    doc_id = str(raw_id)
    if not doc_id.strip():
        raise DataError(f"{where}: empty 'id'")
    contents = obj.get("contents")
    title = obj.get("title")
    text = obj.get("text")
    if contents is not None:
        if not isinstance(contents, str):
            raise DataError(f"{where}: 'contents' must be a string, got {type(contents).__name__} (id {doc_id!r})")
        parsed_title, parsed_text = split_contents(contents)
        # A `"Title"\n` line with nothing after it, or blank contents, is a passage with no text; contents without
        # a newline are a passage without a title line and are kept.
        if not contents.strip() or ("\n" in contents and not parsed_text.strip()):
            raise _no_text(where, doc_id)
        title = title if isinstance(title, str) else parsed_title
        text = text if isinstance(text, str) else parsed_text
        return Document(doc_id, title, text, contents)
    if isinstance(title, str) and isinstance(text, str):
        if not text.strip():
            raise _no_text(where, doc_id)
        return Document(doc_id, title, text, join_contents(title, text))
    raise DataError(
        f"{where}: row {doc_id!r} has no 'contents' string and no 'title' and 'text' strings",
        hint='use {"id", "contents": "\\"Title\\"\\ntext"} or {"id", "title", "text"}',
    )


def _no_text(where: str, doc_id: str) -> DataError:
    return DataError(f"{where}: passage {doc_id!r} has no text", hint="drop the row or give it its passage text")


def parse_corpus_line(raw: bytes, where: str) -> Document:
    """One corpus line (bytes, not blank) as a validated `Document`; errors name `where` ("file:line")."""
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(
            f"{where}: invalid JSON ({exc})",
            hint="each line must be one JSON object: fix or delete that line, then run the command again",
        ) from None
    return document_from_row(obj, where)


class CorpusReader:
    """One validating pass over a corpus file that also records its sha256, size and per-document byte offsets.

    Iterate it once; afterwards `sha256`, `size_bytes`, `num_documents` and `offsets` describe the file.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.is_file():
            raise DataError(f"corpus file {self.path} does not exist")
        self.sha256: str | None = None
        self.size_bytes = 0
        self._offsets = array("q")

    @property
    def num_documents(self) -> int:
        return len(self._offsets)

    @property
    def offsets(self) -> np.ndarray:
        return np.frombuffer(self._offsets, dtype=np.int64).copy()

    def __iter__(self) -> Iterator[Document]:
        digest = hashlib.sha256()
        seen: set[str] = set()
        self._offsets = array("q")
        offset = 0
        with self.path.open("rb") as handle:
            for lineno, raw in enumerate(handle, start=1):
                digest.update(raw)
                start = offset
                offset += len(raw)
                if not raw.strip():
                    continue
                where = f"{self.path}:{lineno}"
                doc = parse_corpus_line(raw, where)
                if doc.id in seen:
                    first = first_line_with_id(self.path, doc.id)
                    raise DataError(
                        f"{where}: duplicate id {doc.id!r} (first used at line {first})",
                        hint="passage ids must be unique",
                    )
                seen.add(doc.id)
                self._offsets.append(start)
                yield doc
        self.sha256 = digest.hexdigest()
        self.size_bytes = offset


def read_corpus(path: str | Path) -> Iterator[Document]:
    """Stream the validated documents of a wiki-18 JSONL corpus (errors name `file:line`; duplicate ids rejected)."""
    return iter(CorpusReader(path))


def first_line_with_id(path: Path, doc_id: str) -> int | None:
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict) and str(obj.get("id")) == doc_id:
                return lineno
    return None


class DocStore:
    """Random access to a corpus file's documents by row number, through a memory map and saved byte offsets."""

    def __init__(self, corpus_path: str | Path, offsets: np.ndarray):
        self.path = Path(corpus_path)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self._file = self.path.open("rb")
        size = os.fstat(self._file.fileno()).st_size
        self._mmap = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else None

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    def _line(self, row: int) -> bytes:
        if row < 0 or row >= len(self) or self._mmap is None:
            raise IndexError(f"document row {row} out of range (the corpus has {len(self)} documents)")
        start = int(self.offsets[row])
        end = self._mmap.find(b"\n", start)
        return self._mmap[start : end if end >= 0 else len(self._mmap)]

    def document(self, row: int) -> Document:
        """The document at a 0-based row (the order of the corpus file)."""
        raw = self._line(row)
        try:
            return document_from_row(json.loads(raw), f"{self.path}:row {row}")
        except ValueError as exc:
            raise DataError(
                f"{self.path}: document row {row} no longer parses ({exc}); the corpus changed after indexing"
            ) from None

    def close(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._file.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass
