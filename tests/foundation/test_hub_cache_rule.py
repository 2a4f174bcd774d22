"""evalsuite finds downloaded hub models where huggingface_hub itself puts them, whichever variables are set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VARIABLES = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"XDG_CACHE_HOME": "{tmp}/xdg"},
        {"HF_HOME": "{tmp}/hf", "XDG_CACHE_HOME": "{tmp}/xdg"},
        {"HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HOME": "{tmp}/hf"},
        {"HF_HUB_CACHE": "{tmp}/hub", "HUGGINGFACE_HUB_CACHE": "{tmp}/legacy", "HF_HOME": "{tmp}/hf"},
        {"HF_HOME": "~/elsewhere"},
    ],
)
def test_the_hub_cache_is_the_one_huggingface_hub_uses(tmp_path, settings):
    pytest.importorskip("huggingface_hub")
    env = {key: value for key, value in os.environ.items() if key not in VARIABLES}
    env |= {key: value.format(tmp=tmp_path) for key, value in settings.items()} | {"PYTHONPATH": str(REPO)}
    code = (
        "import json; from huggingface_hub.constants import HF_HUB_CACHE; from evalsuite.cache_usage import hub_cache; "
        "print(json.dumps([HF_HUB_CACHE, str(hub_cache())]))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    theirs, ours = json.loads(done.stdout)
    assert ours == theirs
