"""`index verify` finds same-size edits that loading cannot; a manifest missing fields, or an -o that holds other
files, is one clear error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval import (
    IndexFormatError,
    IndexMismatchError,
    build_index,
    load_retriever,
)
from evalsuite.retrieval.manifest import verify_index

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def built(tmp_path, shared_data):
    corpus = tmp_path / "corpus.jsonl"
    with (shared_data / "corpus" / "multihop_contexts.jsonl").open("rb") as handle:
        corpus.write_bytes(b"".join(line for _, line in zip(range(300), handle)))
    return corpus, build_index(corpus, tmp_path / "idx")


def flip_bytes_in_place(path: Path, at: int) -> None:
    """Change bytes without changing the size, then restore the modification time."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[at : at + 4] = bytes(b ^ 0x5A for b in data[at : at + 4])
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_same_size_edit_of_an_index_file_is_found_by_verify(built):
    _, index_dir = built
    data = index_dir / "bm25" / "data.csc.index.npy"
    verify_index(index_dir)  # intact
    flip_bytes_in_place(data, data.stat().st_size - 8)
    load_retriever(index_dir)  # loading compares sizes only, so it cannot see this
    with pytest.raises(IndexMismatchError, match=r"data\.csc\.index\.npy: sha256 differs"):
        verify_index(index_dir)


def test_a_same_size_corpus_edit_with_its_old_mtime_is_found_by_verify(built):
    corpus, index_dir = built
    flip_bytes_in_place(corpus, corpus.read_bytes().index(b"Corliss"))
    load_retriever(index_dir)  # same size, same mtime: the quick check passes
    with pytest.raises(IndexMismatchError, match="the corpus changed after indexing"):
        verify_index(index_dir)


def test_verify_command_prints_one_line(built):
    _, index_dir = built
    run = lambda: subprocess.run([sys.executable, "-m", "evalsuite", "index", "verify", str(index_dir)], check=False, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    ok = run()
    assert ok.returncode == 0 and ok.stdout.startswith("ok: ")
    flip_bytes_in_place(index_dir / "docstore.offsets.npy", 200)
    bad = run()
    # (the console wraps long lines at its width: join them before matching)
    assert bad.returncode == 2 and "docstore.offsets.npy: sha256 differs" in bad.stderr.replace("\n", "") and "Traceback" not in bad.stderr


@pytest.mark.parametrize("field", ["retriever", "corpus_hash", "corpus", "params", "files", "index_hash", "corpus.num_documents", "corpus.path"])
def test_a_manifest_missing_a_field_is_a_format_error_naming_it(built, field):
    _, index_dir = built
    path = index_dir / "index.json"
    manifest = json.loads(path.read_text())
    section, _, key = field.rpartition(".")
    del (manifest[section] if section else manifest)[key]
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match=rf"has no '{field}' field"):
        load_retriever(index_dir)


def test_a_non_empty_directory_is_not_overwritten_without_overwrite(built, tmp_path):
    corpus, _ = built
    target = tmp_path / "mine"
    (target / "bm25").mkdir(parents=True)
    (target / "notes.txt").write_text("keep me")
    (target / "bm25" / "keep.txt").write_text("keep me too")
    with pytest.raises(EvalsuiteError, match="is not empty"):
        build_index(corpus, target)
    assert (target / "notes.txt").read_text() == "keep me" and (target / "bm25" / "keep.txt").exists()
    build_index(corpus, target, overwrite=True)
    assert not (target / "notes.txt").exists() and load_retriever(target).num_documents == 300


def test_an_output_path_that_is_a_file_is_refused(built, tmp_path):
    corpus, _ = built
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(EvalsuiteError, match="is a file"):
        build_index(corpus, target)
    assert target.read_text() == "x"
