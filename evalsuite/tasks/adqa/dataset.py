"""Generate an AD-QA-style release (test, train, corpus) and write it as byte-reproducible gzipped JSONL."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from evalsuite.tasks.adqa.kb import DOMAINS, KBSize, build_kb
from evalsuite.tasks.adqa.questions import Question, generate_questions
from evalsuite.tasks.adqa.render import render_corpus

DEFAULT_SEED = 2024
DEFAULT_N_TEST = 1000
DEFAULT_N_TRAIN = 3000
GENERATOR_VERSION = 1
SPLIT_FILES = {"test": "test.jsonl.gz", "train": "train.jsonl.gz", "corpus": "corpus.jsonl.gz"}


@dataclass
class Release:
    """The rows of one generated release, ready to be written."""

    seed: int
    test: list[dict]
    train: list[dict]
    corpus: list[dict]


def question_row(question: Question, row_id: str) -> dict:
    """FlashRAG row: id, question, golden answers (answer first, then aliases), metadata with the decomposition."""
    answers = list(dict.fromkeys(question.answers))
    return {"id": row_id, "question": question.question, "golden_answers": answers, "metadata": question.metadata()}


def generate_release(
    seed: int = DEFAULT_SEED, n_test: int = DEFAULT_N_TEST, n_train: int = DEFAULT_N_TRAIN, size: KBSize = KBSize()
) -> Release:
    """Knowledge base, corpus and questions for one seed; test and train questions are distinct."""
    if n_test < 1 or n_train < 0:
        raise ValueError("n_test must be at least 1 and n_train at least 0")
    kb = build_kb(seed, size)
    corpus = render_corpus(kb, seed)
    questions = generate_questions(kb, corpus, seed, n_test + n_train)
    test = [question_row(q, f"adqa-test-{i:04d}") for i, q in enumerate(questions[:n_test])]
    train = [question_row(q, f"adqa-train-{i:05d}") for i, q in enumerate(questions[n_test:])]
    return Release(seed, test, train, corpus.rows)


def jsonl_bytes(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def gzip_bytes(data: bytes) -> bytes:
    """gzip with no file name and mtime 0, so equal inputs give equal bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as handle:
        handle.write(data)
    return buffer.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def split_statistics(rows: list[dict]) -> dict:
    """Counts of templates, hops, domains per question, domains, answer types (for the manifest and the docs)."""
    meta = [row["metadata"] for row in rows]
    return {
        "questions": len(rows),
        "templates": dict(sorted(Counter(m["template"] for m in meta).items())),
        "hops": {str(k): v for k, v in sorted(Counter(m["hops"] for m in meta).items())},
        "domains_per_question": {str(k): v for k, v in sorted(Counter(len(m["domains"]) for m in meta).items())},
        "domains": {d: sum(d in m["domains"] for m in meta) for d in DOMAINS},
        "answer_types": dict(sorted(Counter(m["answer_type"] for m in meta).items())),
    }


def write_release(release: Release, out_dir: Path, version: str = "v1") -> dict:
    """Write test/train/corpus as .jsonl.gz plus MANIFEST.json
    (hashes of both the gz and the JSONL); returns the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for split, rows in (("test", release.test), ("train", release.train), ("corpus", release.corpus)):
        raw = jsonl_bytes(rows)
        packed = gzip_bytes(raw)
        (out_dir / SPLIT_FILES[split]).write_bytes(packed)
        files[SPLIT_FILES[split]] = {
            "rows": len(rows),
            "sha256": sha256(packed),
            "jsonl_sha256": sha256(raw),
            "bytes": len(packed),
        }
    manifest = {
        "name": "adqa",
        "version": version,
        "generator": "evalsuite.tasks.adqa",
        "generator_version": GENERATOR_VERSION,
        "seed": release.seed,
        "regenerate": (
            f"evalsuite adqa generate --seed {release.seed} --n-test "
            f"{len(release.test)} --n-train {len(release.train)} -o DIR"
        ),
        "files": files,
        "statistics": {
            "test": split_statistics(release.test),
            "train": split_statistics(release.train),
            "corpus": {"passages": len(release.corpus)},
        },
    }
    (out_dir / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
