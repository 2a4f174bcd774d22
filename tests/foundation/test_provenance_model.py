"""The one provenance model: git commit and dirty flag, model identity, and records written before it still load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import evalsuite
from evalsuite.agent.resume_check import settings_differences
from evalsuite.leaderboard.submission import SubmissionFile
from evalsuite.models.identity import model_identity
from evalsuite.provenance import Provenance, git_commit
from evalsuite.runs import Manifest, RunDirectory
from evalsuite.runs.schema import MANIFEST_VERSION

REPO = Path(__file__).resolve().parents[2]
ENTRIES = REPO / "leaderboard" / "entries"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    git(root, "init", "-q")
    (root / "code.py").write_text("x = 1\n")
    git(root, "add", "code.py")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "first")
    return root


def test_git_commit_gives_the_head_and_whether_tracked_files_changed(checkout):
    head = git(checkout, "rev-parse", "HEAD")
    assert git_commit(checkout) == (head, False)
    (checkout / "notes.txt").write_text("untracked files do not change the code\n")
    assert git_commit(checkout) == (head, False)
    (checkout / "code.py").write_text("x = 2\n")
    assert git_commit(checkout) == (head, True)


def test_a_folder_inside_another_repository_is_not_a_checkout(checkout, tmp_path):
    # An installed package in a virtual environment inside some project's repository must not take its commit.
    inside = checkout / "venv" / "site-packages"
    inside.mkdir(parents=True)
    assert git_commit(inside) is None
    assert git_commit(tmp_path / "nowhere") is None


def test_capture_records_this_checkout(tmp_path):
    provenance = Provenance.capture(libraries=["pydantic", "no-such-distribution-here"])
    assert provenance.evalsuite_version == evalsuite.__version__
    assert provenance.versions["pydantic"] and provenance.versions["no-such-distribution-here"] is None
    assert provenance.hardware.python and provenance.hardware.cpu_count
    if (REPO / ".git").exists():
        assert provenance.git_commit == git(REPO, "rev-parse", "HEAD")
        assert provenance.git_dirty == bool(git(REPO, "status", "--porcelain", "--untracked-files=no"))


def test_a_run_manifest_carries_the_shared_fields(tmp_path):
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    run.write_manifest(Manifest(tasks=["nq"], **Provenance.capture().fields()))
    written = json.loads(run.manifest_path.read_text())
    assert set(Provenance.model_fields) <= set(written)
    assert Provenance.model_validate(written).evalsuite_version == evalsuite.__version__


# What `evalsuite run` wrote before the shared model: no git_dirty, no versions, hardware without accelerators.
OLD_RUN_MANIFEST = {
    "schema_version": 1, "kind": "run", "evalsuite_version": "0.1.0", "git_commit": COMMIT,
    "metric_convention": "flashrag-squad-v1", "created_at": "2026-11-20T10:00:00+00:00", "finished_at": "2026-11-20T10:05:00+00:00",
    "hardware": {"platform": "Linux-6.1-x86_64", "python": "3.11.7", "machine": "x86_64", "cpu_count": 2},
    "tasks": ["nq"], "splits": {"nq": "test"}, "subset": "first:3", "subset_ids_hash": {"nq": "ab"},
    "data_files": {"nq": {"path": "/data/nq.test.jsonl", "sha256": "cd", "rows_sha256": "ef"}},
    "model": {"spec": "Qwen/Qwen2.5-3B-Instruct", "revision": None}, "method": "search-r1", "prompt_template_hash": "12",
    "backend": {"backend": "hf", "version": "4.45.0", "model": "Qwen/Qwen2.5-3B-Instruct", "revision": None},
    "decoding": {"temperature": 0.0}, "max_turns": 4, "topk": 3, "retriever": {}, "corpus": {}, "seeds": {"seed": 0},
    "source": {}, "notes": None, "shard": None, "batch_size": 8,
}


def test_an_old_run_manifest_loads_and_resumes_as_the_same_model(tmp_path):
    run = RunDirectory(tmp_path / "run")
    run.path.mkdir()
    run.manifest_path.write_text(json.dumps(OLD_RUN_MANIFEST))
    manifest = run.read_manifest()
    assert manifest.git_commit == COMMIT and manifest.git_dirty is None and manifest.versions == {}
    assert manifest.hardware.platform == "Linux-6.1-x86_64" and manifest.hardware.accelerators == []
    # Rewritten by this version (a resume does that), it is stored migrated (manifest version 2, typed sections,
    # which leave unset fields out) and keeps every value it had.
    run.write_manifest(manifest)
    again = json.loads(run.manifest_path.read_text())
    migrated = {**OLD_RUN_MANIFEST, "schema_version": MANIFEST_VERSION, "hardware": {**OLD_RUN_MANIFEST["hardware"], "accelerators": []},
                "model": {"spec": "Qwen/Qwen2.5-3B-Instruct"},
                "backend": {"backend": "hf", "version": "4.45.0", "model": "Qwen/Qwen2.5-3B-Instruct", "options": {}}}
    assert {key: again[key] for key in OLD_RUN_MANIFEST} == migrated
    assert settings_differences(manifest, Manifest.model_validate(again)) == []


@pytest.mark.parametrize("entry", sorted(p.name for p in ENTRIES.iterdir()) if ENTRIES.is_dir() else [])
def test_the_leaderboard_entries_on_disk_load(entry):
    """The accepted entries (the seeded ones packed before the shared model) load: submission.json and run manifests."""
    root = ENTRIES / entry
    meta = SubmissionFile.model_validate_json((root / "submission.json").read_text())
    assert meta.evalsuite_version and meta.git_dirty in (None, False)  # never an entry packed from uncommitted code
    for ref in meta.runs:
        manifest = RunDirectory(root / "runs" / ref.name).read_manifest()
        assert manifest.evalsuite_version and manifest.hardware.platform


def hub_cache(tmp_path: Path, repo: str, refs: dict[str, str]) -> Path:
    """A Hugging Face hub cache as `huggingface_hub` lays it out: refs/<branch> holds the commit of snapshots/<commit>/."""
    folder = tmp_path / "hub" / ("models--" + repo.replace("/", "--"))
    for branch, commit in refs.items():
        (folder / "refs").mkdir(parents=True, exist_ok=True)
        (folder / "refs" / branch).write_text(commit)
        (folder / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
        (folder / "snapshots" / commit / "config.json").write_text("{}")
    return tmp_path / "hub"


def test_a_hub_model_is_named_by_its_cached_commit(tmp_path):
    other = "fedcba9876543210fedcba9876543210fedcba98"
    cache = hub_cache(tmp_path, "org/model", {"main": COMMIT, "v2": other})
    identity = model_identity("org/model", cache_dir=cache)
    assert identity.record() == {"spec": "org/model", "hub_repo": "org/model", "revision": COMMIT}
    assert model_identity("org/model", revision="v2", cache_dir=cache).revision == other
    assert model_identity("org/model", revision=other, cache_dir=tmp_path / "empty").revision == other
    # Never downloaded: the name and the revision as given.
    assert model_identity("org/absent", revision="v1", cache_dir=cache).record() == {"spec": "org/absent", "revision": "v1"}
    assert model_identity("http://127.0.0.1:8000/v1").record() == {"spec": "http://127.0.0.1:8000/v1"}


def test_a_hub_snapshot_folder_is_named_by_its_commit_without_hashing_the_weights(tmp_path):
    cache = hub_cache(tmp_path, "org/model", {"main": COMMIT})
    snapshot = cache / "models--org--model" / "snapshots" / COMMIT
    blob = cache / "models--org--model" / "blobs" / "1f2e"
    blob.parent.mkdir()
    blob.write_bytes(b"weights")
    (snapshot / "model.safetensors").symlink_to(blob)  # the hub cache links snapshot files to content-named blobs
    assert model_identity(str(snapshot)).record() == {"spec": str(snapshot), "hub_repo": "org/model", "revision": COMMIT}
    # A plain folder of weights keeps its content hash.
    plain = tmp_path / "weights"
    plain.mkdir()
    (plain / "model.bin").write_bytes(b"weights")
    assert model_identity(str(plain)).sha256 and model_identity(str(plain)).revision is None


def test_resume_refuses_a_hub_model_whose_commit_changed():
    old = Manifest.model_validate({**OLD_RUN_MANIFEST, "model": {"spec": "org/model", "hub_repo": "org/model", "revision": COMMIT}})
    new = old.model_copy(update={"model": old.model.model_copy(update={"revision": "fedcba9876543210fedcba9876543210fedcba98"})})
    assert settings_differences(old, old.model_copy()) == []
    assert [line.split(":")[0] for line in settings_differences(old, new)] == ["model revision"]
