"""`evalsuite data download|status` through the real `datasets` loader, on a local folder laid out like the hub
dataset RUC-NLPIR/FlashRAG_datasets; the cache checks; where commands look for task data; the offline error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.errors import DataError
from evalsuite.tasks import load_split
from evalsuite.tasks.download import MANIFEST

pytest.importorskip("datasets", reason="the hf extra (datasets) is not installed")

HUB_README = """---
configs:
- config_name: bamboogle
  data_files:
  - split: test
    path: bamboogle/test.jsonl
- config_name: nq
  data_files:
  - split: test
    path: nq/test.jsonl
---
"""


def head(path: Path, n: int) -> list[str]:
    with path.open(encoding="utf-8") as handle:
        return [next(handle) for _ in range(n)]


@pytest.fixture
def hub(tmp_path, benchmarks_dir) -> Path:
    """20 Bamboogle and 10 NQ rows in the hub dataset's layout (one folder per config, a README naming them)."""
    root = tmp_path / "FlashRAG_datasets"
    for task, n in (("bamboogle", 20), ("nq", 10)):
        (root / task).mkdir(parents=True)
        (root / task / "test.jsonl").write_text("".join(head(benchmarks_dir / f"{task}.test.jsonl", n)), encoding="utf-8")
    (root / "README.md").write_text(HUB_README, encoding="utf-8")
    return root


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("EVALSUITE_DATA_DIR", raising=False)
    return tmp_path / "cache" / "data"


def cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def test_download_writes_validated_rows_that_every_command_then_finds(hub, cache, benchmarks_dir):
    result = cli("data", "download", "--tasks", "bamboogle,nq", "--from", hub)
    assert result.exit_code == 0, result.output
    assert str(cache / "bamboogle.test.jsonl") in result.output
    files = json.loads((cache / MANIFEST).read_text())["files"]
    assert files["bamboogle.test.jsonl"]["rows"] == 20 and files["nq.test.jsonl"]["task"] == "nq"
    loaded = load_split("bamboogle")
    assert loaded.source == str(cache / "bamboogle.test.jsonl") and len(loaded.rows) == 20
    assert [r.id for r in loaded.rows] == [json.loads(line)["id"] for line in head(benchmarks_dir / "bamboogle.test.jsonl", 20)]
    status = json.loads(cli("data", "status", "--json").stdout)
    bamboogle = next(s for s in status["splits"] if s["task"] == "bamboogle")
    assert bamboogle["found_in"] == f"download cache {cache}" and bamboogle["rows"] == 20
    assert bamboogle["origin"] == f"local mirror {hub}/bamboogle/test"
    assert next(s for s in status["splits"] if s["task"] == "musique")["found_in"] == "not found"


def test_a_bad_row_on_the_hub_is_refused_like_a_bad_local_row_and_nothing_is_written(hub, cache):
    rows = (hub / "bamboogle" / "test.jsonl").read_text().splitlines()
    broken = json.loads(rows[2])
    del broken["golden_answers"]
    rows[2] = json.dumps(broken)
    (hub / "bamboogle" / "test.jsonl").write_text("\n".join(rows) + "\n")
    result = cli("data", "download", "--tasks", "bamboogle", "--from", hub)
    assert result.exit_code != 0 and isinstance(result.exception, DataError), result.output
    # a local folder is read as a local file is (not through `datasets`, which gave the row an empty column and
    # reported a missing field as "got NoneType"): the error names the file and line
    assert result.exception.message == f"{hub}/bamboogle/test.jsonl:3: missing 'golden_answers' (row id {broken['id']!r})"
    assert not (cache / "bamboogle.test.jsonl").exists()


def test_the_cache_refuses_an_edited_or_a_wrong_task_download(hub, cache):
    assert cli("data", "download", "--tasks", "bamboogle,nq", "--from", hub).exit_code == 0
    target = cache / "bamboogle.test.jsonl"
    again = f"run `evalsuite data download --tasks bamboogle --data-dir {cache}` again"
    original = target.read_text()
    target.write_text(original.replace("?", "!", 1))
    with pytest.raises(DataError, match="content differs from the download") as err:
        load_split("bamboogle")
    assert err.value.hint == again
    # a file of another task under this task's name
    target.write_text((cache / "nq.test.jsonl").read_text())
    files = json.loads((cache / MANIFEST).read_text())
    files["files"]["bamboogle.test.jsonl"] = dict(files["files"]["nq.test.jsonl"])
    (cache / MANIFEST).write_text(json.dumps(files))
    with pytest.raises(DataError, match=r"holds rows of task 'nq', not 'bamboogle'"):
        load_split("bamboogle")
    # a file nobody downloaded (put there by hand) is read like any local file
    del files["files"]["bamboogle.test.jsonl"]
    (cache / MANIFEST).write_text(json.dumps(files))
    assert len(load_split("bamboogle").rows) == 10


def test_task_data_is_looked_for_in_data_dir_then_env_then_cache(hub, cache, tmp_path, monkeypatch, benchmarks_dir):
    assert cli("data", "download", "--tasks", "bamboogle", "--from", hub).exit_code == 0
    env_dir, given = tmp_path / "env", tmp_path / "given"
    for folder, n in ((env_dir, 7), (given, 5)):
        folder.mkdir()
        (folder / "bamboogle.test.jsonl").write_text("".join(head(benchmarks_dir / "bamboogle.test.jsonl", n)))
    assert len(load_split("bamboogle").rows) == 20
    monkeypatch.setenv("EVALSUITE_DATA_DIR", str(env_dir))
    assert len(load_split("bamboogle").rows) == 7
    assert len(load_split("bamboogle", data_dir=given).rows) == 5
    # a split the named folders lack still comes from the cache
    (env_dir / "bamboogle.test.jsonl").unlink()
    assert len(load_split("bamboogle").rows) == 20


def offline(tmp_path, **extra) -> dict[str, str]:
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "EVALSUITE_CACHE_DIR": str(tmp_path / "c"), **extra}
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "EVALSUITE_DATA_DIR"):
        if name not in extra:
            env.pop(name, None)
    return env


@pytest.mark.parametrize("why", ["HF_HUB_OFFLINE", "unreachable endpoint"])
def test_offline_download_is_one_error_line_and_one_hint_naming_from_and_data_dir(tmp_path, why):
    # offline mode set, or a hub that refuses connections (a closed port on this machine): no retries, no noise
    extra = {"HF_HUB_OFFLINE": "1"} if why == "HF_HUB_OFFLINE" else {"HF_ENDPOINT": "http://127.0.0.1:9"}
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "evalsuite", "data", "download", "--tasks", "bamboogle"],
                            capture_output=True, text=True, timeout=120, env=offline(tmp_path, **extra))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    error, hint = result.stderr.strip().splitlines()
    reason = "HF_HUB_OFFLINE is set" if why == "HF_HUB_OFFLINE" else "127.0.0.1:9: Connection refused"
    assert error == f"error: the Hugging Face hub cannot be reached ({reason}): RUC-NLPIR/FlashRAG_datasets not downloaded"
    assert hint == ("  hint: with a local folder laid out like RUC-NLPIR/FlashRAG_datasets: `evalsuite data download --from DIR`; "
                    "or put bamboogle.test.jsonl in a folder and pass --data-dir DIR to the command that reads them (or set $EVALSUITE_DATA_DIR)")
    assert time.monotonic() - started < 60  # the process start and imports; no retry loop


def test_the_offline_path_download_from_a_local_folder_works_without_the_hub(tmp_path, hub):
    env = offline(tmp_path, HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, "-m", "evalsuite", "data", "download", "--tasks", "bamboogle", "--from", str(hub),
                             "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert len((tmp_path / "data" / "bamboogle.test.jsonl").read_text(encoding="utf-8").splitlines()) == 20
