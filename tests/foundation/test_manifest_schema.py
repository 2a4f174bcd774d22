"""The manifest is typed on disk: its sections are pydantic models written and read through one place, version-1
manifests (free-dict sections) are migrated, and a foreign or newer manifest is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.errors import DataError
from evalsuite.provenance import provenance_fields
from evalsuite.runs import Manifest, RunDirectory
from evalsuite.runs.schema import MANIFEST_VERSION, BackendSection, EncoderSection, RetrieverSection
from evalsuite.runs.run_setting import RunSetting

REPO = Path(__file__).resolve().parents[2]

V1 = {
    "schema_version": 1, "evalsuite_version": "0.0.1", "created_at": "2026-01-01T00:00:00Z", "kind": "run", "tasks": ["nq"],
    "model": {"spec": "Qwen/Qwen2.5-3B", "revision": "abc123"},
    "backend": {"backend": "hf", "version": 4, "dtype": "bfloat16", "schedule": "sync", "options": {"attn": "sdpa"}},
    "retriever": {"retriever": "dense", "index_hash": "ix", "spec": "/idx",
                  "params": {"encoder": {"name": "intfloat/e5-base-v2", "fingerprint": "name:intfloat/e5-base-v2", "dim": "768d"}},
                  "corpus": {"name": "wiki18_sample.jsonl", "num_documents": 10_813,
                             "sha256": "609bfd8ea834cfe05ce1ffddead0859f8571bcba29713da4a99be7ce0b03724f"}},
    "decoding": {"temperature": 0.0, "seed": 1, "max_tokens": 500},
    "corpus": "wiki-18",
}


def _write(run_dir: Path, obj: object) -> RunDirectory:
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text(json.dumps(obj))
    return RunDirectory(run_dir)


def test_sections_are_typed_models_on_disk_and_back(tmp_path: Path) -> None:
    run = RunDirectory(tmp_path / "run")
    manifest = Manifest(tasks=["nq"], backend={"backend": "llamacpp", "model": "m.gguf", "schedule": "sync", "n_ctx": 4096},
                        retriever={"retriever": "bm25", "index_hash": "h", "corpus": {"num_documents": 3, "sha256": "s"}},
                        decoding={"temperature": 0.0, "seed": 7}, **provenance_fields())
    run.write_manifest(manifest)
    on_disk = json.loads(run.manifest_path.read_text())
    # unset fields are left out of a section, extra fields the component reported are kept
    assert on_disk["schema_version"] == MANIFEST_VERSION
    assert on_disk["backend"] == {"backend": "llamacpp", "model": "m.gguf", "schedule": "sync", "options": {}, "n_ctx": 4096}
    assert on_disk["decoding"] == {"temperature": 0.0, "seed": 7}
    back = run.read_manifest()
    assert isinstance(back.backend, BackendSection) and back.backend.schedule == "sync" and back.backend.model_extra == {"n_ctx": 4096}
    assert isinstance(back.retriever, RetrieverSection) and back.retriever.corpus.num_documents == 3
    assert back == manifest


def test_a_version_1_manifest_is_migrated_and_loses_nothing(tmp_path: Path) -> None:
    manifest = _write(tmp_path / "old", V1).read_manifest()
    assert manifest.schema_version == MANIFEST_VERSION
    assert manifest.backend.backend == "hf" and manifest.backend.options == {"attn": "sdpa"} and manifest.backend.model_extra["dtype"] == "bfloat16"
    assert isinstance(manifest.retriever.encoder, EncoderSection) and manifest.retriever.encoder.fingerprint == "name:intfloat/e5-base-v2"
    # values version 2 types otherwise are kept aside under their dotted path, never read as settings
    assert manifest.unparsed_v1 == {"backend.version": 4, "retriever.params.encoder.dim": "768d", "corpus": "wiki-18"}
    setting = RunSetting.from_manifest(manifest)
    assert setting.corpus_label() == "wiki-18 sample" and "e5" in setting.retriever.keys()
    assert setting.decoding == {"temperature": 0.0, "seed": 1, "max_tokens": 500}


def test_the_seeded_leaderboard_entries_still_load() -> None:
    manifests = sorted(REPO.glob("leaderboard/entries/*/runs/*/manifest.json"))
    imported = [path for path in manifests if json.loads(path.read_text())["kind"] == "import"]
    assert len(imported) >= 4  # the seeded entries (imported outputs, written at schema version 1)
    for path in manifests:
        manifest = RunDirectory(path.parent).read_manifest()
        if path in imported:
            assert json.loads(path.read_text())["schema_version"] == 1 and not manifest.retriever.used
        else:  # an evalsuite run (the CPU-scale reproduction): what it retrieved from is recorded
            assert manifest.kind == "run" and manifest.retriever.used


@pytest.mark.parametrize(("obj", "says"), [
    ({**V1, "schema_version": 3}, "field 'schema_version': manifest version 3 is not one this evalsuite reads (1, 2)"),
    ({"format": "evalsuite-index", "retriever": "bm25"}, "not an evalsuite run manifest (no field 'schema_version')"),
    ({**V1, "schema_version": 2, "backend": {"schedule": 5}}, "not a valid run manifest: field 'backend.schedule'"),
    (["a", "list"], "expected a JSON object, got list"),
])
def test_a_foreign_or_newer_manifest_is_one_line_naming_the_field(tmp_path: Path, obj: object, says: str) -> None:
    run = _write(tmp_path / "foreign", obj)
    with pytest.raises(DataError) as caught:
        run.read_manifest()
    assert caught.value.message == f"{run.manifest_path}: {says}" or caught.value.message.startswith(f"{run.manifest_path}: {says}")
    assert "\n" not in caught.value.message and caught.value.hint
