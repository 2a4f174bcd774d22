"""`index build --devices`: dense encoding spread over several devices with sentence-transformers' multi-process pool,
checked with two CPU worker processes and the real all-MiniLM-L6-v2 on 300 real passages."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import EvalsuiteError
from evalsuite.retrieval import build_index, load_retriever
from evalsuite.retrieval.manifest import compute_index_hash
from tests.conftest import requires_extra

pytestmark = [pytest.mark.dense, requires_extra("dense", "sentence_transformers", "faiss", "torch")]

QUERIES = [
    "Who played Corliss Archer in the film Kiss and Tell?",
    "Shirley Temple ambassador to Ghana and Czechoslovakia",
    "voice actress of Judy Jetson",
]
REPO = Path(__file__).resolve().parents[2]


def stored_vectors(index_dir: Path) -> np.ndarray:
    import faiss

    index = faiss.read_index(str(index_dir / "faiss.index"))
    return index.reconstruct_n(0, index.ntotal)


def test_two_cpu_processes_encode_what_one_device_encodes_and_resume_its_shards(tmp_path, small_corpus, small_dense):
    # The first of three shards comes from the single-device build: a build resumes across a change of devices.
    target = tmp_path / "idx"
    (target / "embeddings").mkdir(parents=True)
    for name in ("progress.json", "shard-00000.npy"):
        shutil.copyfile(small_dense / "embeddings" / name, target / "embeddings" / name)
    result = CliRunner().invoke(
        app,
        ["index", "build", "--corpus", str(small_corpus), "--retriever", "dense", "--encoder", "all-MiniLM-L6-v2", "-o", str(target),
         "--shard-size", "128", "--devices", "cpu,cpu", "--no-progress", "--overwrite"],
    )
    assert result.exit_code == 0, result.output
    multi = json.loads((target / "index.json").read_text())
    single = json.loads((small_dense / "index.json").read_text())
    assert multi["build"]["devices"] == ["cpu", "cpu"] and single["build"]["devices"] == ["cpu"]
    assert (multi["build"]["shards_reused"], multi["build"]["shards_encoded"]) == (1, 2)

    # Other batch compositions (each worker sorts and pads its own chunk) move the last float bits, not more.
    vectors, expected = stored_vectors(target), stored_vectors(small_dense)
    np.testing.assert_array_equal(vectors[:128], expected[:128])
    np.testing.assert_allclose(vectors, expected, rtol=0, atol=1e-5)
    two, one = load_retriever(target, device="cpu").search(QUERIES, 5), load_retriever(small_dense, device="cpu").search(QUERIES, 5)
    assert [[h.doc_id for h in hits] for hits in two] == [[h.doc_id for h in hits] for hits in one]

    # The devices are provenance: the parameters that make the index's identity are the single-device ones.
    assert multi["params"] == single["params"]
    assert compute_index_hash({**multi, "build": single["build"]}) == multi["index_hash"]


def test_a_bad_device_is_one_line_before_any_work(tmp_path, small_corpus):
    command = [sys.executable, "-m", "evalsuite", "index", "build", "--corpus", str(small_corpus), "--retriever", "dense",
               "--encoder", "all-MiniLM-L6-v2", "-o", str(tmp_path / "idx"), "--devices", "cpu,gpu0"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert run.returncode != 0
    assert run.stderr.splitlines()[0] == "error: --devices: 'gpu0' is not a torch device"
    assert "Traceback" not in run.stderr and not (tmp_path / "idx").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"devices": ["cuda:999"]}, r"'cuda:999' is not on this machine \(\d+ cuda devices\)"),
        ({"devices": ["cpu", ""]}, "'' is not a torch device"),
        ({"devices": []}, "names no device"),
        ({"devices": ["cpu", "cpu"], "device": "cpu"}, "give --device or --devices, not both"),
    ],
)
def test_device_lists_that_cannot_run_are_refused(tmp_path, small_corpus, options, message):
    with pytest.raises(EvalsuiteError, match=message):
        build_index(small_corpus, tmp_path / "idx", retriever="dense", encoder="all-MiniLM-L6-v2", **options)
    assert not (tmp_path / "idx" / "index.json").exists()
