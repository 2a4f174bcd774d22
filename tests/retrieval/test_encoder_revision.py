"""An encoder's revision pins its weights beyond its name (issue 26): the hub commit the local Hugging Face cache
resolved the name to, or a local directory's content hash. Read from a real cache layout; the hub is never asked."""

from __future__ import annotations

from pathlib import Path

from evalsuite.retrieval.encoders import encoder_revision, hub_revision, model_fingerprint
from evalsuite.runs.schema import Manifest
from evalsuite.runs.run_setting import RunSetting
from tests.conftest import requires_extra

COMMIT = "f52bf8ec8c7124536f0efb74aca902b2995e5bcd"


def hub_cache(root: Path, repo: str, commit: str = COMMIT) -> Path:
    """The layout huggingface_hub writes: refs/main names the commit, snapshots/<commit>/ holds the files."""
    folder = root / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snapshot = folder / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    return root


@requires_extra("dense", "huggingface_hub")  # its cache layout is read by huggingface_hub
def test_a_hub_encoder_is_pinned_by_the_commit_its_cache_resolved(tmp_path):
    cache = hub_cache(tmp_path / "hub", "intfloat/e5-base-v2")
    assert hub_revision("intfloat/e5-base-v2", cache) == COMMIT
    assert encoder_revision("intfloat/e5-base-v2", cache_dir=cache) == COMMIT
    assert hub_revision("intfloat/e5-large-v2", cache) is None  # not cached: unknown, not guessed


def test_a_local_encoder_is_pinned_by_its_content(tmp_path):
    model = tmp_path / "my-encoder"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 8}')
    (model / "model.safetensors").write_bytes(b"weights")
    before = encoder_revision(str(model))
    assert before == model_fingerprint(str(model)) and before.startswith("sha256:")
    (model / "model.safetensors").write_bytes(b"other weights")
    assert encoder_revision(str(model)) != before


def test_the_revision_is_read_back_from_the_manifest():
    manifest = Manifest(evalsuite_version="t", created_at="t", retriever={
        "retriever": "dense", "params": {"encoder": {"name": "intfloat/e5-base-v2", "fingerprint": "name:intfloat/e5-base-v2",
                                                     "revision": COMMIT}}})
    encoder = RunSetting.from_manifest(manifest).retriever.encoder
    assert (encoder.key, encoder.revision) == ("e5", COMMIT)
    assert RunSetting.from_manifest(manifest).retriever.label() == f"dense (e5 @ {COMMIT[:12]})"
