"""`evalsuite data download --from DIR` on a plain local folder, with `datasets` unimportable: the hub dataset's own
layout (`<task>/<split>.jsonl`, no README naming configs) and the flat `<task>.<split>.jsonl`, each row checked as a
local file's rows are, the file's sha256 recorded; a folder laid out otherwise is one error naming the file expected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.files import file_sha256
from evalsuite.tasks.download import MANIFEST

# `datasets` made unimportable in the child (a None entry in sys.modules makes `import datasets` raise ImportError),
# so a local download that still went through it fails here
WITHOUT_DATASETS = "import sys; sys.modules['datasets'] = None; from evalsuite.cli import main; sys.argv[0] = 'evalsuite'; main()"


def download(*args: str | Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVALSUITE_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    env.pop("EVALSUITE_DATA_DIR", None)
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_DATASETS, "data", "download", *map(str, args)],
        capture_output=True, text=True, timeout=120, env=env,
    )


def first_rows(path: Path, n: int) -> str:
    with path.open(encoding="utf-8") as handle:
        return "".join(next(handle) for _ in range(n))


@pytest.mark.parametrize("layout", ["bamboogle/test.jsonl", "bamboogle.test.jsonl"])
def test_a_plain_local_folder_downloads_without_datasets_and_records_the_hash(tmp_path, benchmarks_dir, layout):
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    source = mirror / layout
    source.parent.mkdir(parents=True)
    source.write_text(first_rows(benchmarks_dir / "bamboogle.test.jsonl", 12), encoding="utf-8")
    result = download("--tasks", "bamboogle", "--from", mirror, "--data-dir", data, cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    target = data / "bamboogle.test.jsonl"
    assert result.stdout.strip() == str(target)
    assert target.read_bytes() == source.read_bytes()  # the checked file itself
    record = json.loads((data / MANIFEST).read_text())["files"]["bamboogle.test.jsonl"]
    assert record["rows"] == 12 and record["task"] == "bamboogle" and record["split"] == "test"
    assert record["sha256"] == file_sha256(source)
    assert record["source"] == f"local mirror {source.with_suffix('')}"


def test_a_folder_laid_out_otherwise_names_the_file_it_expected(tmp_path, benchmarks_dir):
    mirror = tmp_path / "mirror"
    (mirror / "test").mkdir(parents=True)
    (mirror / "test" / "bamboogle.jsonl").write_text(first_rows(benchmarks_dir / "bamboogle.test.jsonl", 3))
    result = download("--tasks", "bamboogle", "--from", mirror, "--data-dir", tmp_path / "data", cache=tmp_path / "c")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error, hint = result.stderr.strip().splitlines()
    assert error == (
        f"error: {mirror}: no test split of bamboogle: expected {mirror}/bamboogle/test.jsonl "
        f"(or {mirror}/bamboogle.test.jsonl)"
    )
    assert hint == (
        "  hint: it holds test/bamboogle.jsonl; put FlashRAG rows (one JSON object per line) at "
        f"{mirror}/bamboogle/test.jsonl"
    )
    assert not (tmp_path / "data").exists()


def test_a_bad_row_in_the_folder_is_refused_with_its_file_and_line_and_nothing_is_written(tmp_path, benchmarks_dir):
    mirror = tmp_path / "mirror"
    (mirror / "bamboogle").mkdir(parents=True)
    rows = first_rows(benchmarks_dir / "bamboogle.test.jsonl", 5).splitlines()
    broken = json.loads(rows[3])
    broken["golden_answers"] = "Paris"
    rows[3] = json.dumps(broken)
    (mirror / "bamboogle" / "test.jsonl").write_text("\n".join(rows) + "\n")
    result = download("--tasks", "bamboogle", "--from", mirror, "--data-dir", tmp_path / "data", cache=tmp_path / "c")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == (
        f"error: {mirror}/bamboogle/test.jsonl:4: 'golden_answers' must be a list, got str (row id {broken['id']!r})"
    )
    assert not (tmp_path / "data" / "bamboogle.test.jsonl").exists()


def test_a_from_path_that_does_not_exist_is_one_line_not_a_hub_lookup(tmp_path):
    missing = tmp_path / "nowhere"
    result = download("--tasks", "bamboogle", "--from", missing, "--data-dir", tmp_path / "data", cache=tmp_path / "c")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0] == f"error: --from {missing}: no such folder"
