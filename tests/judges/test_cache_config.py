"""The SQLite judge cache and panel files."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.errors import DataError
from evalsuite.judges.cache import CachedReply, JudgeCache, cache_key
from evalsuite.judges.config import load_panel
from evalsuite.judges.prompts import COMPLETENESS, GRANULARITY

MESSAGES = GRANULARITY.messages({"question": "Who?", "query": "birthplace of X"})


def test_cache_key_depends_on_model_template_input_and_decoding() -> None:
    base = cache_key("m", GRANULARITY.hash, MESSAGES, {"max_tokens": 8})
    assert base == cache_key("m", GRANULARITY.hash, MESSAGES, {"max_tokens": 8})
    assert base != cache_key("m2", GRANULARITY.hash, MESSAGES, {"max_tokens": 8})
    assert base != cache_key("m", COMPLETENESS.hash, MESSAGES, {"max_tokens": 8})
    assert base != cache_key("m", GRANULARITY.hash, GRANULARITY.messages({"question": "Who?", "query": "other"}), {"max_tokens": 8})
    assert base != cache_key("m", GRANULARITY.hash, MESSAGES, {"max_tokens": 9})


def test_cache_persists_across_connections(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = JudgeCache(path)
    cache.put("k", "m", "h", CachedReply("yes", 10, 2))
    cache.close()
    again = JudgeCache(path)
    assert again.get("k") == CachedReply("yes", 10, 2) and again.get("other") is None and len(again) == 1


def test_template_hash_changes_with_wording() -> None:
    from dataclasses import replace

    assert GRANULARITY.hash != replace(GRANULARITY, user=GRANULARITY.user + " ").hash
    with pytest.raises(KeyError, match="needs fields"):
        GRANULARITY.messages({"question": "q"})


def test_panel_file_is_validated_with_file_and_field(tmp_path: Path) -> None:
    good = tmp_path / "panel.yaml"
    good.write_text("judges:\n  - {name: a, model: m, base_url: 'http://127.0.0.1:1/v1', api_key_env: MY_KEY}\ncache: c.sqlite\n")
    panel = load_panel(good)
    assert panel.judges[0].api_key_env == "MY_KEY" and panel.cache == str(tmp_path / "c.sqlite")
    assert panel.identities() == [{"name": "a", "model": "m", "base_url": "http://127.0.0.1:1/v1"}]
    bad = tmp_path / "bad.yaml"
    bad.write_text("judges:\n  - {name: a, model: m}\n")
    with pytest.raises(DataError, match=r"bad.yaml: field 'judges.0.base_url'"):
        load_panel(bad)
    leaked = tmp_path / "leaked.yaml"
    leaked.write_text("judges:\n  - {name: a, model: m, base_url: u, api_key: sk-123}\n")
    with pytest.raises(DataError, match="literal 'api_key'"):
        load_panel(leaked)
    dup = tmp_path / "dup.yaml"
    dup.write_text("judges:\n  - {name: a, model: m, base_url: u}\n  - {name: a, model: n, base_url: u}\n")
    with pytest.raises(DataError, match="repeated"):
        load_panel(dup)
    keyed = tmp_path / "keyed.yaml"
    keyed.write_text("judges:\n  - {name: a, model: m, base_url: u, api_key_env: 'sk-abc123'}\n")
    with pytest.raises(DataError, match="NAME of an environment variable"):
        load_panel(keyed)


def test_example_panels_load() -> None:
    panels = sorted((Path(__file__).resolve().parents[2] / "examples" / "panels").glob("*.yaml"))
    assert len(panels) == 3
    loaded = {p.stem: load_panel(p) for p in panels}
    assert [j.model for j in loaded["progress-table3"].judges] == ["gpt-4.1", "gpt-5.1", "gpt-5.2"]
    assert all(j.api_key_env == "OPENAI_API_KEY" for j in loaded["progress-table3"].judges)
