"""Building a BM25 index in bounded memory, in parallel: the
same bm25s index, without the whole tokenized corpus in RAM.

bm25s indexes a list holding every passage's token ids, so its peak memory grows with the raw tokenized corpus
(about 55 GB for wiki-18). Here the corpus is read once and cut into blocks of whole lines:

1. Worker processes parse, validate, tokenize and count each block; the main process hashes the bytes as it reads
   them (so the corpus hash costs no second read), records each passage's byte offset, maps each block's terms to
   global ids in first-appearance order (bm25s's order), adds up document frequencies, and spills the block's
   (passage, term, frequency) triples to disk.
2. With the number of passages, the average length and the document frequencies known, each spilled block is scored
   exactly as bm25s scores it and scattered into the CSC arrays, which are memory-mapped `.npy` files in the index
   directory (columns are terms; rows ascend within a column, as scipy and bm25s order them).

The files written are those `bm25s.BM25.save` writes for the in-memory build of the same corpus, with the same
vocabulary ids and the same float32 scores (tests compare them). `reference_bm25s_index` is that in-memory build,
kept for the comparison and the benchmark.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

import numpy as np

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.retrieval.bm25_defaults import BM25_DEFAULTS
from evalsuite.retrieval.corpus import parse_corpus_line
from evalsuite.retrieval.worker_pool import WorkerDied, how_it_died, ordered_map

TOKEN_PATTERN = r"(?u)\b\w\w+\b"
DATA_FILE, INDICES_FILE, INDPTR_FILE = "data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"
VOCAB_FILE, PARAMS_FILE = "vocab.index.json", "params.index.json"
EMPTY_TERM = ""  # bm25s gives a passage without any term this one token (id 0), so it still has a length
SPILL_DIR = "spill"
RERUN_HINT = (
    "check free memory (fewer --workers or a smaller --block-mb need less), then run the same command again: "
    "the build restarts from the start, and the unfinished directory never loads as an index"
)
DEFAULT_BLOCK_BYTES = 16 << 20
_STEM_CACHE_LIMIT = 1 << 20


def stopword_list(stopwords: str | list[str] | None) -> list[str]:
    if stopwords is None or stopwords == "none":
        return []
    if isinstance(stopwords, str):
        from bm25s.stopwords import STOPWORDS_EN

        if stopwords not in ("en", "english"):
            raise EvalsuiteError(
                f"unknown stop-word list {stopwords!r}", hint="use 'en' or 'none', or pass a list of words"
            )
        return sorted(STOPWORDS_EN)
    return sorted(set(stopwords))


def load_stemmer(name: str | None):
    if name is None or name == "none":
        return None
    import Stemmer

    if name not in Stemmer.algorithms():
        raise EvalsuiteError(f"unknown stemmer {name!r}", hint=f"PyStemmer knows: {', '.join(Stemmer.algorithms())}")
    return Stemmer.Stemmer(name)


class Analyzer:
    """bm25s's text processing: lower-case, the token pattern, stop words dropped, then the Snowball stemmer.

    Not thread-safe (PyStemmer objects are not): use one per thread. Word-to-stem results are cached, up to a bound.
    """

    def __init__(self, stopwords: list[str], stemmer_name: str | None):
        self._pattern = re.compile(TOKEN_PATTERN)
        self._stopwords = frozenset(stopwords)
        stemmer = load_stemmer(stemmer_name)
        self._stem = stemmer.stemWord if stemmer is not None else (lambda word: word)
        self._cache: dict[str, str] = {}

    def terms(self, text: str) -> list[str]:
        """The text's terms in order, repeats kept; stop words map to nothing (a stem is never empty)."""
        cache = self._cache
        words = self._pattern.findall(text.lower())
        try:
            return list(filter(None, map(cache.__getitem__, words)))  # C loops: this runs for every corpus token
        except KeyError:
            if len(cache) >= _STEM_CACHE_LIMIT:
                cache.clear()
            for word in words:
                if word not in cache:
                    cache[word] = "" if word in self._stopwords else self._stem(word)
            return list(filter(None, map(cache.__getitem__, words)))


@dataclass
class BlockCounts:
    """What a worker returns for one block of corpus lines."""

    offsets: np.ndarray  # int64: byte offset of each passage in the corpus file
    id_hashes: np.ndarray  # uint64: 8-byte blake2b of each passage id (duplicates are confirmed on the ids)
    lengths: np.ndarray  # int64: bm25s's passage length (terms with repeats; 1 for a passage without terms)
    terms: list[str]  # the block's terms in first-appearance order
    rows: np.ndarray  # int32: block-local passage of each (passage, term) pair
    term_ids: np.ndarray  # int32: block-local term of each pair
    counts: np.ndarray  # float32: term frequency of each pair (bm25s scores float32 frequencies)
    num_bytes: int  # size of the block read


_worker_analyzer: Analyzer | None = None


def _init_worker(stopwords: list[str], stemmer_name: str | None) -> None:
    global _worker_analyzer
    _worker_analyzer = Analyzer(stopwords, stemmer_name)


def count_block(path: str, block: bytes, start_offset: int, first_line: int) -> BlockCounts:
    """Parse, validate, tokenize and count one block of whole corpus lines (runs in a worker process)."""
    assert _worker_analyzer is not None, "_init_worker was not called"
    analyzer = _worker_analyzer
    offsets: list[int] = []
    id_hashes: list[int] = []
    lengths: list[int] = []
    # term -> block-local id in order of first appearance (bm25s's order); filled in C by map() below
    local_ids: defaultdict[str, int] = defaultdict(count().__next__)
    token_ids: list[int] = []
    offset = start_offset
    lines = block.split(b"\n")
    if block.endswith(b"\n"):
        lines.pop()  # the empty piece after the last newline is not a line
    for lineno, raw in enumerate(lines, start=first_line):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        doc = parse_corpus_line(raw, f"{path}:{lineno}")
        terms = analyzer.terms(doc.contents) or [EMPTY_TERM]
        offsets.append(start)
        id_hashes.append(int.from_bytes(hashlib.blake2b(doc.id.encode("utf-8"), digest_size=8).digest(), "little"))
        lengths.append(len(terms))
        token_ids.extend(map(local_ids.__getitem__, terms))
    # one (passage, term) pair per distinct term of a passage, with its frequency: counted by numpy, not per pair in
    # Python (the pairs come out by passage, then term id; the scoring pass orders them by term, rows ascending)
    width = max(len(local_ids), 1)
    token_rows = np.repeat(np.arange(len(lengths), dtype=np.int64), np.asarray(lengths, dtype=np.int64))
    pairs, counts = np.unique(token_rows * width + np.asarray(token_ids, dtype=np.int64), return_counts=True)
    return BlockCounts(
        offsets=np.asarray(offsets, dtype=np.int64),
        id_hashes=np.asarray(id_hashes, dtype=np.uint64),
        lengths=np.asarray(lengths, dtype=np.int64),
        terms=list(local_ids),
        rows=(pairs // width).astype(np.int32),
        term_ids=(pairs % width).astype(np.int32),
        counts=counts.astype(np.float32),
        num_bytes=len(block),
    )


class BlockReader:
    """Blocks of whole lines from a file, read once; `sha256`, `size_bytes` describe the file after the last block."""

    def __init__(self, path: Path, block_bytes: int):
        self.path, self.block_bytes = path, block_bytes
        self.sha256: str | None = None
        self.size_bytes = 0

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        """(block, byte offset of its first line, number of its first line)."""
        digest = hashlib.sha256()
        offset, line, carry = 0, 1, b""
        with self.path.open("rb") as handle:
            while True:
                data = handle.read(self.block_bytes)
                if not data:
                    break
                digest.update(data)
                data = carry + data
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    carry = data
                    continue
                block, carry = data[:cut], data[cut:]
                yield block, offset, line
                offset += len(block)
                line += block.count(b"\n")
        if carry:
            yield carry, offset, line
            offset += len(carry)
        self.sha256 = digest.hexdigest()
        self.size_bytes = offset


@dataclass
class CorpusScan:
    """What one pass over the corpus learned: its hash, size and passage offsets (the manifest's corpus record)."""

    path: Path
    sha256: str
    size_bytes: int
    offsets: np.ndarray

    @property
    def num_documents(self) -> int:
        return int(self.offsets.shape[0])


@dataclass
class CountedCorpus:
    scan: CorpusScan
    vocab: dict[str, int]
    doc_freqs: np.ndarray  # int64 per term id
    lengths: np.ndarray  # int64 per passage
    spill_files: list[Path]


def _map_blocks(
    path: Path, blocks: BlockReader, workers: int, stopwords: list[str], stemmer: str | None
) -> Iterator[BlockCounts]:
    """`count_block` over the blocks in order, in `workers` processes with at most 2 blocks each in flight."""
    if workers <= 1:
        _init_worker(stopwords, stemmer)
        for block, offset, line in blocks:
            yield count_block(str(path), block, offset, line)
        return
    calls = ((str(path), block, offset, line) for block, offset, line in blocks)
    try:
        yield from ordered_map(
            count_block, calls, workers=workers, initializer=_init_worker, initargs=(stopwords, stemmer)
        )
    except WorkerDied as died:
        first = died.arguments[3] if died.arguments else 1  # count_block's first_line
        raise worker_death_error(path, first, died.exitcode) from None


def worker_death_error(path: Path, first_line: int, exitcode: int | None) -> EvalsuiteError:
    """What a counting worker's death says: the out-of-memory killer sends SIGKILL; a worker that exited on its own
    printed its error first (a script building with workers but without a `__main__` guard: each worker, a fresh
    interpreter, imports the script and runs its build again, which multiprocessing refuses)."""
    where = f"{path}: a worker process died while counting the blocks from line {first_line:,}"
    if exitcode is not None and exitcode > 0:
        return EvalsuiteError(
            f"{where} ({how_it_died(exitcode)}; its own error is printed above)",
            hint='from a Python script, run the build under `if __name__ == "__main__":` (each worker imports the '
            "script), or build with workers=1",
        )
    if exitcode is None or exitcode == -signal.SIGKILL:
        why = how_it_died(exitcode) if exitcode is not None else "killed from outside"
        return EvalsuiteError(
            f"{where} ({why}; the kernel kills a process this way when memory runs out)", hint=RERUN_HINT
        )
    return EvalsuiteError(f"{where} ({how_it_died(exitcode)})", hint=RERUN_HINT)


class _Growing:
    """An int64 array indexed by term id that grows with the vocabulary (amortized doubling)."""

    def __init__(self) -> None:
        self._data = np.zeros(1024, dtype=np.int64)

    def add(self, ids: np.ndarray, values: np.ndarray, size: int) -> None:
        if size > self._data.shape[0]:
            grown = np.zeros(max(size, 2 * self._data.shape[0]), dtype=np.int64)
            grown[: self._data.shape[0]] = self._data
            self._data = grown
        self._data[ids] += values

    def array(self, size: int) -> np.ndarray:
        out = np.zeros(size, dtype=np.int64)
        n = min(size, self._data.shape[0])
        out[:n] = self._data[:n]
        return out


def count_corpus(
    path: Path,
    spill_dir: Path,
    *,
    stopwords: list[str],
    stemmer: str | None,
    workers: int,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: bool = False,
) -> CountedCorpus:
    """Pass 1: read, hash, validate, tokenize and count the corpus; spill each block's triples under `spill_dir`."""
    spill_dir.mkdir(parents=True, exist_ok=True)
    blocks = BlockReader(path, block_bytes)
    vocab: dict[str, int] = {EMPTY_TERM: 0}  # bm25s reserves id 0 for the empty token before the first passage
    doc_freqs = _Growing()
    offsets: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    hashes: list[np.ndarray] = []
    spill_files: list[Path] = []
    num_docs = 0
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=path.stat().st_size, desc="tokenize and count", unit="B", unit_scale=True)
    for counts in _map_blocks(path, blocks, workers, stopwords, stemmer):
        remap = np.fromiter(
            (vocab.setdefault(term, len(vocab)) for term in counts.terms), dtype=np.int64, count=len(counts.terms)
        )
        doc_freqs.add(remap, np.bincount(counts.term_ids, minlength=len(counts.terms)), len(vocab))
        spill = spill_dir / f"block-{len(spill_files):06d}.npz"
        try:
            np.savez(
                spill,
                rows=(counts.rows + num_docs).astype(np.int32),
                terms=remap[counts.term_ids].astype(np.int32),
                counts=counts.counts,
            )
        except OSError as exc:  # the zip writer's error names no file
            raise OSError(exc.errno, f"{exc.strerror} (spilling counted passages)", str(spill)) from None
        spill_files.append(spill)
        offsets.append(counts.offsets)
        lengths.append(counts.lengths)
        hashes.append(counts.id_hashes)
        num_docs += counts.offsets.shape[0]
        if bar is not None:
            bar.update(counts.num_bytes)
    if bar is not None:
        bar.close()
    all_offsets = np.concatenate(offsets) if offsets else np.zeros(0, dtype=np.int64)
    _check_unique_ids(path, all_offsets, np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.uint64))
    assert blocks.sha256 is not None
    scan = CorpusScan(path=path, sha256=blocks.sha256, size_bytes=blocks.size_bytes, offsets=all_offsets)
    return CountedCorpus(
        scan,
        vocab,
        doc_freqs.array(len(vocab)),
        np.concatenate(lengths) if lengths else np.zeros(0, dtype=np.int64),
        spill_files,
    )


def _check_unique_ids(path: Path, offsets: np.ndarray, id_hashes: np.ndarray) -> None:
    """A `DataError` naming both lines when two passages share an id (8-byte hashes first, then the ids themselves)."""
    if id_hashes.shape[0] < 2:
        return
    order = np.argsort(id_hashes, kind="stable")
    same = np.flatnonzero(id_hashes[order][1:] == id_hashes[order][:-1])
    if same.shape[0] == 0:
        return
    from evalsuite.retrieval.corpus import DocStore

    store = DocStore(path, offsets)
    try:
        clashes = sorted((int(order[i + 1]), int(order[i])) for i in same)  # (later row, earlier row), earliest first
        for later, earlier in clashes:
            doc_id = store.document(later).id
            if store.document(earlier).id == doc_id:
                first, line = _lines_of(path, [int(offsets[earlier]), int(offsets[later])])
                raise DataError(
                    f"{path}:{line}: duplicate id {doc_id!r} (first used at line {first})",
                    hint="passage ids must be unique: drop or renumber one of the two lines, then run the same "
                    "command again (the build restarts)",
                )
    finally:
        store.close()


def _lines_of(path: Path, offsets: list[int], chunk_bytes: int = 1 << 24) -> list[int]:
    """The 1-based line numbers of ascending byte offsets, counting newlines chunk by chunk (the offsets may lie
    gigabytes into the file: nothing of that size is read at once)."""
    lines, newlines, at = [], 0, 0
    with path.open("rb") as handle:
        for offset in offsets:
            while at < offset:
                chunk = handle.read(min(chunk_bytes, offset - at))
                if not chunk:
                    break
                newlines += chunk.count(b"\n")
                at += len(chunk)
            lines.append(newlines + 1)
    return lines


def idf_array(doc_freqs: np.ndarray, num_docs: int, method: str) -> np.ndarray:
    """float32 idf per term, computed as bm25s computes it (Python floats, then stored as float32)."""
    from bm25s.scoring import _select_idf_scorer

    idf = _select_idf_scorer(method)
    out = np.zeros(doc_freqs.shape[0], dtype=np.float32)
    for term, df in enumerate(doc_freqs.tolist()):
        if df:
            out[term] = idf(df, N=num_docs)
    return out


def _allocated_memmap(path: Path, dtype: type, size: int) -> np.memmap:
    """A new `.npy` array mapped for writing, its disk blocks allocated first: a full disk is then an ENOSPC error
    here, where writes through a sparse mapping would kill the process with SIGBUS half-way through."""
    array = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=(size,))
    if hasattr(os, "posix_fallocate"):
        with path.open("r+b") as handle:
            try:
                os.posix_fallocate(handle.fileno(), 0, path.stat().st_size)
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise  # (EOPNOTSUPP: a file system without allocation; its writes fail as they happen)
                needed, free = 2 * path.stat().st_size, shutil.disk_usage(path.parent).free
                reason = f"{exc.strerror}: the score matrix needs {_size(needed)}, {_size(free)} free"
                raise OSError(exc.errno, reason, str(path)) from None
    return array


def _size(num_bytes: int) -> str:
    return f"{num_bytes / 2**30:.1f} GiB" if num_bytes >= 2**30 else f"{num_bytes / 2**20:.1f} MiB"


def write_score_matrix(counted: CountedCorpus, bm25_dir: Path, *, k1: float, b: float, method: str) -> int:
    """Pass 2: score every spilled triple as bm25s does and write the CSC arrays; returns the number of entries."""
    if method not in ("lucene", "robertson", "atire"):
        raise EvalsuiteError(
            f"BM25 method {method!r} is not supported", hint="use lucene (the default), robertson or atire"
        )
    from bm25s.scoring import _select_tfc_scorer

    tfc = _select_tfc_scorer(method)
    num_docs = counted.scan.num_documents
    avg_len = counted.lengths.mean()  # np.float64, as bm25s computes it
    idf = idf_array(counted.doc_freqs, num_docs, method)
    indptr = np.zeros(counted.doc_freqs.shape[0] + 1, dtype=np.int64)
    np.cumsum(counted.doc_freqs, out=indptr[1:])
    nnz = int(indptr[-1])
    bm25_dir.mkdir(parents=True, exist_ok=True)
    data = _allocated_memmap(bm25_dir / DATA_FILE, np.float32, nnz)
    indices = _allocated_memmap(bm25_dir / INDICES_FILE, np.int32, nnz)
    heads = indptr[:-1].copy()
    for spill in counted.spill_files:
        with np.load(spill) as block:
            rows, terms, counts = block["rows"], block["terms"], block["counts"]
        # bm25s: idf (float32) * tf / (k1 * (1 - b + b * len / avg_len) + tf), the denominator in float64
        scores = (idf[terms] * tfc(tf_array=counts, l_d=counted.lengths[rows], l_avg=avg_len, k1=k1, b=b)).astype(
            np.float32
        )
        order = np.argsort(terms, kind="stable")  # rows ascend within each term: blocks come in corpus order
        sorted_terms = terms[order]
        unique, first, group_sizes = np.unique(sorted_terms, return_index=True, return_counts=True)
        positions = heads[sorted_terms] + (np.arange(sorted_terms.shape[0]) - np.repeat(first, group_sizes))
        data[positions] = scores[order]
        indices[positions] = rows[order]
        heads[unique] += group_sizes
        spill.unlink()
    data.flush()
    indices.flush()
    del data, indices
    np.save(bm25_dir / INDPTR_FILE, indptr)
    return nnz


def write_bm25s_metadata(
    bm25_dir: Path, vocab: dict[str, int], *, num_docs: int, k1: float, b: float, method: str
) -> None:
    """The vocabulary and parameter files as `bm25s.BM25.save` writes them."""
    import bm25s
    from bm25s.utils import json_functions

    with open(bm25_dir / VOCAB_FILE, "wt", encoding="utf-8") as handle:
        handle.write(json_functions.dumps(vocab, ensure_ascii=False))
    params = dict(
        k1=k1,
        b=b,
        delta=0.5,
        method=method,
        idf_method=method,
        dtype="float32",
        int_dtype="int32",
        num_docs=num_docs,
        version=bm25s.__version__,
        backend="numpy",
    )
    with open(bm25_dir / PARAMS_FILE, "w") as handle:
        json.dump(params, handle, indent=4)


def build_bm25_files(
    corpus: Path,
    bm25_dir: Path,
    work_dir: Path,
    *,
    k1: float,
    b: float,
    method: str,
    stopwords: list[str],
    stemmer: str | None,
    workers: int | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: bool = False,
) -> tuple[CorpusScan, dict[str, Any]]:
    """Both passes: bm25s's index files in `bm25_dir`; returns the corpus scan and build statistics."""
    if not corpus.is_file():
        raise DataError(f"corpus file {corpus} does not exist")
    workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    workers = min(workers, -(-corpus.stat().st_size // block_bytes) or 1)  # no process pool for a one-block corpus
    spill_dir = work_dir / SPILL_DIR
    if spill_dir.exists():
        shutil.rmtree(spill_dir)
    try:
        started = time.perf_counter()
        counted = count_corpus(
            corpus,
            spill_dir,
            stopwords=stopwords,
            stemmer=stemmer,
            workers=workers,
            block_bytes=block_bytes,
            progress=progress,
        )
        if counted.scan.num_documents == 0:
            raise EvalsuiteError(f"corpus {corpus} holds no documents")
        counted_at = time.perf_counter()
        nnz = write_score_matrix(counted, bm25_dir, k1=k1, b=b, method=method)
        timings = {
            "count_seconds": round(counted_at - started, 3),
            "score_seconds": round(time.perf_counter() - counted_at, 3),
        }
        write_bm25s_metadata(bm25_dir, counted.vocab, num_docs=counted.scan.num_documents, k1=k1, b=b, method=method)
    except BaseException:
        shutil.rmtree(
            bm25_dir, ignore_errors=True
        )  # half-written arrays are of no use (a rerun restarts): free the disk
        raise
    finally:
        shutil.rmtree(spill_dir, ignore_errors=True)
    stats = {
        "workers": workers,
        "block_bytes": block_bytes,
        "blocks": len(counted.spill_files),
        "nonzeros": nnz,
        "vocabulary_size": len(counted.vocab),
        **timings,
    }
    return counted.scan, stats


def reference_bm25s_index(
    corpus: Path,
    out_dir: Path,
    *,
    k1: float = BM25_DEFAULTS["k1"],
    b: float = BM25_DEFAULTS["b"],
    method: str = BM25_DEFAULTS["method"],
    stopwords: str = BM25_DEFAULTS["stopwords"],
    stemmer: str | None = BM25_DEFAULTS["stemmer"],
) -> None:
    """bm25s's own in-memory build of the same corpus (every passage's token ids in one list): the reference."""
    import bm25s
    from bm25s.tokenization import Tokenizer

    from evalsuite.retrieval.corpus import read_corpus

    tokenizer = Tokenizer(
        lower=True, splitter=TOKEN_PATTERN, stopwords=stopword_list(stopwords), stemmer=load_stemmer(stemmer)
    )
    token_ids = list(tokenizer.streaming_tokenize((doc.contents for doc in read_corpus(corpus)), update_vocab=True))
    model = bm25s.BM25(k1=k1, b=b, method=method)
    model.index((token_ids, tokenizer.get_vocab_dict()), show_progress=False)
    model.save(str(out_dir), show_progress=False)
