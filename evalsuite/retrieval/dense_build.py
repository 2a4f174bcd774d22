"""Building a dense index: encoder embeddings of the corpus in a faiss index (Flat by default, HNSW and IVF options).

Building encodes the corpus in shards written one by one to `embeddings/`; a build that stops (crash, kill,
timeout) resumes from the last complete shard when rerun with the same arguments, and only the vectors of one shard
are held in memory while encoding. `import_faiss_index` wraps a prebuilt faiss index (Search-R1's `e5_Flat.index`,
FlashRAG's indexes) without re-encoding anything. Searching an index is `evalsuite.retrieval.dense`.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval.corpus import CorpusReader, DocStore
from evalsuite.retrieval.dense import FAISS_FILE, load_faiss, read_faiss, shard_names
from evalsuite.retrieval.manifest import (
    OFFSETS_NAME,
    IndexMismatchError,
    base_manifest,
    record_files,
    write_docstore,
    write_manifest,
)

if TYPE_CHECKING:
    from evalsuite.retrieval.encoders import Encoder

EMBED_DIR = "embeddings"
PROGRESS_FILE = "progress.json"


def faiss_factory(
    kind: str, dim: int, num_docs: int, *, hnsw_m: int = 32, nlist: int | None = None, pq_m: int | None = None
) -> tuple[str, dict[str, Any]]:
    """The faiss factory string and its settings for a named kind, or a factory string given as is.

    `flat`: exact, 4 x dim bytes a vector. `hnsw`: graph over full vectors. `hnsw-sq8`: graph over 8-bit scalar
    quantized vectors (dim bytes). `ivf`: inverted lists over full vectors. `ivfpq`: inverted lists over product
    quantized codes of `pq_m` bytes (default dim / 4: 16 times smaller than flat). IVF lists default to 4 * sqrt(N).
    """
    lowered = kind.lower()
    if lowered == "flat":
        return "Flat", {}
    if lowered == "hnsw":
        return f"HNSW{hnsw_m},Flat", {"hnsw_m": hnsw_m}
    if lowered == "hnsw-sq8":
        return f"HNSW{hnsw_m},SQ8", {"hnsw_m": hnsw_m, "quantizer": "SQ8"}
    if lowered in ("ivf", "ivfpq"):
        if nlist is None:
            nlist = max(1, int(4 * math.sqrt(num_docs)))
        nlist = max(1, min(nlist, num_docs))
        if lowered == "ivf":
            return f"IVF{nlist},Flat", {"nlist": nlist}
        pq_m = pq_m or max(1, dim // 4)
        if dim % pq_m:
            raise EvalsuiteError(f"--pq-m {pq_m} must divide the vector dimension {dim}")
        return f"IVF{nlist},PQ{pq_m}x8", {"nlist": nlist, "pq_m": pq_m, "pq_bits": 8}
    return kind, {}


def new_faiss_index(
    kind: str,
    dim: int,
    num_docs: int,
    *,
    hnsw_m: int = 32,
    ef_construction: int = 200,
    ef_search: int = 128,
    nlist: int | None = None,
    nprobe: int = 16,
    pq_m: int | None = None,
) -> tuple[Any, str, dict[str, Any]]:
    """An empty inner-product faiss index of a named kind (see `faiss_factory`), its factory string and the settings
    to record (the HNSW build and search depths, IVF's nprobe); IVF and PQ kinds still need training."""
    faiss = load_faiss()
    factory, settings = faiss_factory(kind, dim, num_docs, hnsw_m=hnsw_m, nlist=nlist, pq_m=pq_m)
    index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    try:
        faiss.downcast_index(index).hnsw.efConstruction = ef_construction
        settings.update(ef_construction=ef_construction, ef_search=ef_search)
    except AttributeError:
        pass
    if "IVF" in factory:
        settings["nprobe"] = nprobe
    if hasattr(faiss.downcast_index(index), "do_polysemous_training"):
        # faiss's IVF-PQ reorders its PQ centroids for polysemous (Hamming) filtering by default, which only a search
        # with polysemous_ht set uses (this package never sets it), and which took 97% of a training run measured
        # here (214 s of IVF256,PQ48x8 on 10,240 vectors); the distances it searches with are the same without it.
        faiss.downcast_index(index).do_polysemous_training = False
    return index, factory, settings


def add_streamed(index: Any, chunks: Iterable[np.ndarray], path: Path) -> int:
    """Add vectors to a trained index chunk by chunk and write it to `path`; returns the vectors it holds.

    Only one chunk of full vectors is in memory at a time (an IVF-PQ index keeps just its codes), so an index can
    hold more vectors than fit in memory uncompressed. The file is written under a temporary name and renamed when
    complete, so a build killed midway never leaves a file that loads as a finished index.
    """
    faiss = load_faiss()
    for chunk in chunks:
        index.add(np.ascontiguousarray(chunk, dtype=np.float32))
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    os.replace(tmp, path)
    return int(index.ntotal)


def build_dense(
    corpus: str | Path,
    out_dir: str | Path,
    encoder: str,
    *,
    faiss_index: str = "flat",
    hnsw_m: int = 32,
    ef_construction: int = 200,
    ef_search: int = 128,
    nlist: int | None = None,
    nprobe: int = 16,
    pq_m: int | None = None,
    shards: int = 1,
    shard_size: int = 50_000,
    batch_size: int = 64,
    device: str | None = None,
    devices: Sequence[str] | None = None,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    max_length: int | None = None,
    normalize: bool = True,
    keep_embeddings: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Encode a corpus in resumable shards and index the vectors with faiss; returns the written manifest.

    `devices` (e.g. ["cuda:0", "cuda:1"]) encodes each shard on all of them at once through sentence-transformers'
    multi-process pool; one device is the same as `device`. The devices are recorded as provenance in the
    manifest's `build` section, not in `params`, so they do not change the index's identity.
    """
    from evalsuite.retrieval.encoders import Encoder, check_devices

    load_faiss()  # fail before encoding anything when the [dense] extra is missing
    if devices is not None:
        if device is not None:
            raise EvalsuiteError(
                "give --device or --devices, not both", hint="--devices cuda:0 is the same as --device cuda:0"
            )
        devices = check_devices(devices)
        device = devices[0]
    spread = devices if devices is not None and len(devices) > 1 else None  # the devices of a multi-process pool
    if spread:
        device = "cpu"  # the pool shares the weights with its workers from the CPU; see Encoder.spread_over
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if shard_size < 1 or batch_size < 1 or shards < 1:
        raise EvalsuiteError("shard_size, batch_size and shards must be positive")

    reader = CorpusReader(corpus)
    for _ in reader:  # validate, hash and record offsets in one pass; the text is read again shard by shard
        pass
    num_docs = reader.num_documents
    if num_docs == 0:
        raise EvalsuiteError(f"corpus {corpus} holds no documents")
    write_docstore(out_dir, reader)
    docstore = DocStore(reader.path, reader.offsets)

    enc = Encoder(
        encoder,
        device=device,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        max_length=max_length,
        normalize=normalize,
    )
    settings = enc.settings()
    embed_dir = out_dir / EMBED_DIR
    state = {
        "corpus_sha256": reader.sha256,
        "encoder": {
            k: settings[k]
            for k in ("name", "fingerprint", "dim", "query_prefix", "passage_prefix", "normalize", "max_length")
        },
        "shard_size": shard_size,
        "num_documents": num_docs,
    }
    num_shards = math.ceil(num_docs / shard_size)
    _prepare_embed_dir(embed_dir, state)
    missing = [shard for shard in range(num_shards) if not _shard_path(embed_dir, shard).is_file()]
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=num_docs,
            initial=num_docs - sum(_shard_rows(shard, shard_size, num_docs) for shard in missing),
            desc="encode passages",
            unit="doc",
        )
    t0 = time.perf_counter()
    with enc.spread_over(spread) if spread and missing else nullcontext():
        for shard in missing:
            _encode_shard(enc, docstore, embed_dir, shard, shard_size, batch_size)
            if bar is not None:
                bar.update(_shard_rows(shard, shard_size, num_docs))
    encode_seconds = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    docstore.close()

    index, factory, index_settings = new_faiss_index(
        faiss_index,
        enc.dim,
        num_docs,
        hnsw_m=hnsw_m,
        ef_construction=ef_construction,
        ef_search=ef_search,
        nlist=nlist,
        nprobe=nprobe,
        pq_m=pq_m,
    )
    if not index.is_trained:
        sample = _training_sample(embed_dir, num_shards, index)
        index.train(sample)
        index_settings["training_vectors"] = int(sample.shape[0])
    shard_sizes = _write_faiss_shards(index, embed_dir, num_shards, out_dir, shards)
    if sum(shard_sizes) != num_docs:
        raise EvalsuiteError(f"faiss index holds {sum(shard_sizes)} vectors for {num_docs} documents")
    if shards > 1:
        index_settings.update(shards=shards, shard_sizes=shard_sizes)
    if not keep_embeddings:
        shutil.rmtree(embed_dir)

    params = {
        "encoder": settings,
        "faiss": {"factory": factory, "metric": "inner_product", "dim": enc.dim, "ntotal": num_docs, **index_settings},
        "batch_size": batch_size,
        "shard_size": shard_size,
    }
    manifest = base_manifest("dense", reader, params)
    record_files(out_dir, manifest, [OFFSETS_NAME, *shard_names(shards)])
    seconds = time.perf_counter() - started
    manifest["build"] = {
        "seconds": round(seconds, 3),
        "encode_seconds": round(encode_seconds, 3),  # the whole encoding phase: pool start, reading, encoding, writing
        "shards": num_shards,
        "shards_encoded": len(missing),
        "shards_reused": num_shards - len(missing),
        "devices": spread if spread else [enc.device],  # provenance only: not part of params, so not of index_hash
        "embeddings_kept": keep_embeddings,
    }
    return write_manifest(out_dir, manifest)


def _shard_path(embed_dir: Path, shard: int) -> Path:
    return embed_dir / f"shard-{shard:05d}.npy"


def _shard_rows(shard: int, shard_size: int, num_docs: int) -> int:
    return min(num_docs, (shard + 1) * shard_size) - shard * shard_size


def _encode_shard(
    enc: Encoder, docstore: DocStore, embed_dir: Path, shard: int, shard_size: int, batch_size: int
) -> None:
    """Encode one shard's passages and write them under a temporary name, renamed when complete (so a killed build
    leaves only whole shards)."""
    start = shard * shard_size
    end = start + _shard_rows(shard, shard_size, len(docstore))
    vectors = enc.encode_passages([docstore.document(row).contents for row in range(start, end)], batch_size=batch_size)
    if vectors.shape != (end - start, enc.dim):
        raise EvalsuiteError(f"encoder returned shape {vectors.shape} for {end - start} passages")
    path = _shard_path(embed_dir, shard)
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, vectors)
    os.replace(tmp, path)


def _write_faiss_shards(trained: Any, embed_dir: Path, num_shards: int, out_dir: Path, shards: int) -> list[int]:
    """Add the encoded vectors to `shards` copies of the trained index, consecutive ranges each, one file per shard
    (written to a temporary name, then renamed); only one shard's index is in memory at a time."""
    faiss = load_faiss()
    shard_files = [_shard_path(embed_dir, s) for s in range(num_shards)]
    counts = [np.load(path, mmap_mode="r").shape[0] for path in shard_files]
    total = sum(counts)
    bounds = [round(total * i / shards) for i in range(shards + 1)]

    def stored_rows(start: int, end: int) -> Iterator[np.ndarray]:
        """Rows start..end of the stored embeddings, one memory-mapped slice of a shard file at a time."""
        seen = 0
        for path, count in zip(shard_files, counts):
            lo, hi = max(start, seen), min(end, seen + count)
            if lo < hi:
                yield np.load(path, mmap_mode="r")[lo - seen : hi - seen]
            seen += count

    return [
        add_streamed(faiss.clone_index(trained), stored_rows(bounds[i], bounds[i + 1]), out_dir / name)
        for i, name in enumerate(shard_names(shards))
    ]


def _prepare_embed_dir(embed_dir: Path, state: dict[str, Any]) -> None:
    """Keep complete shards from an earlier run with identical settings (the devices used are not a setting)."""
    progress_path = embed_dir / PROGRESS_FILE
    if embed_dir.is_dir():
        try:
            previous = json.loads(progress_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            previous = None
        if previous != state:
            shutil.rmtree(embed_dir)
    embed_dir.mkdir(parents=True, exist_ok=True)
    for stale in embed_dir.glob("*.tmp.npy"):
        stale.unlink()
    progress_path.write_text(json.dumps(state, indent=2), encoding="utf-8")


def _training_sample(embed_dir: Path, num_shards: int, index: Any, per_list: int = 64, seed: int = 0) -> np.ndarray:
    """A seeded sample of stored vectors to train an IVF index (about 64 per list, as faiss recommends 39-256)."""
    faiss = load_faiss()
    try:
        nlist = faiss.extract_index_ivf(index).nlist
    except (RuntimeError, AttributeError):
        nlist = 256
    wanted = nlist * per_list
    rng = np.random.default_rng(seed)
    parts = []
    sizes = [np.load(_shard_path(embed_dir, s), mmap_mode="r").shape[0] for s in range(num_shards)]
    total = sum(sizes)
    for shard, size in enumerate(sizes):
        take = size if wanted >= total else max(1, round(size * wanted / total))
        vectors = np.load(_shard_path(embed_dir, shard), mmap_mode="r")
        rows = np.sort(rng.choice(size, size=min(take, size), replace=False))
        parts.append(np.asarray(vectors[rows], dtype=np.float32))
    return np.ascontiguousarray(np.concatenate(parts))


def import_faiss_index(
    faiss_path: str | Path,
    corpus: str | Path,
    out_dir: str | Path,
    encoder: str,
    *,
    link: bool = False,
    query_prefix: str | None = None,
    passage_prefix: str | None = None,
    max_length: int | None = None,
    pooling: str = "mean",
    normalize: bool = True,
) -> dict[str, Any]:
    """Wrap a prebuilt faiss index and its corpus into an index directory (copied, or symlinked with `link`).

    Row i of the faiss index must be line i of the corpus (Search-R1 / FlashRAG layout); the vector count must equal
    the corpus size. The encoder is recorded, not loaded: it is loaded (and its dimension checked) when served.
    """
    from evalsuite.retrieval.encoders import default_prefixes, hub_revision, resolve_encoder

    faiss = load_faiss()
    started = time.perf_counter()
    faiss_path = Path(faiss_path)
    if not faiss_path.is_file():
        raise EvalsuiteError(f"faiss index {faiss_path} does not exist")
    out_dir = Path(out_dir)
    try:
        index = read_faiss(faiss_path, mmap=True)  # the header only: a 65 GB Flat index is not read into memory
    except RuntimeError:
        try:
            index = faiss.read_index(str(faiss_path))
        except RuntimeError as exc:
            raise EvalsuiteError(f"{faiss_path} is not a readable faiss index: {str(exc).splitlines()[0]}") from None
    ntotal, dim, metric = int(index.ntotal), int(index.d), int(index.metric_type)
    del index
    reader = CorpusReader(corpus)
    for _ in reader:
        pass
    if ntotal != reader.num_documents:
        raise IndexMismatchError(
            f"faiss index {faiss_path} holds {ntotal} vectors but corpus {corpus} has {reader.num_documents} documents",
            hint="the index and corpus must come from the same build (row i of the index = line i of the corpus)",
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / FAISS_FILE
    if target.exists() or target.is_symlink():
        target.unlink()
    if link:
        target.symlink_to(faiss_path.resolve())
    else:
        shutil.copyfile(faiss_path, target)
    write_docstore(out_dir, reader)
    name, source = resolve_encoder(encoder)
    auto_query, auto_passage, rule = default_prefixes(encoder)
    explicit = query_prefix is not None or passage_prefix is not None
    metric_name = {faiss.METRIC_INNER_PRODUCT: "inner_product", faiss.METRIC_L2: "l2"}.get(metric, str(metric))
    params = {
        "encoder": {
            "name": name,
            "source": source,
            "fingerprint": None,
            # an imported index is not re-hashed: a hub name's cached commit is recorded, a local directory's is not
            "revision": None if Path(source).is_dir() else hub_revision(source),
            "dim": dim,
            "query_prefix": auto_query if query_prefix is None else query_prefix,
            "passage_prefix": auto_passage if passage_prefix is None else passage_prefix,
            "prefix_rule": "explicit" if explicit else rule,
            "pooling": pooling,
            "normalize": normalize,
            "max_length": max_length,
        },
        "faiss": {
            "factory": "imported",
            "metric": metric_name,
            "dim": dim,
            "ntotal": ntotal,
            "source_file": str(faiss_path.resolve()),
        },
    }
    manifest = base_manifest("dense", reader, params)
    record_files(out_dir, manifest, [OFFSETS_NAME, FAISS_FILE])
    manifest["build"] = {"seconds": round(time.perf_counter() - started, 3), "imported": True, "linked": link}
    return write_manifest(out_dir, manifest)
