"""A backend's capabilities are class attributes (`Backend.supports_top_p`, `operational_options`, `supports_async`),
so a plugin's backend takes `--top-p` and declares its operational options the way a built-in does, with no edit of
any evalsuite file: a distribution on sys.path (a .dist-info whose `evalsuite.backends` entry points name two backends)
runs `evalsuite run --top-p 0.9` in a fresh process with the one that declares top-p, and the other is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.runs.comparable import generation_options, operational_options
from evalsuite.models.registry import backend_class, top_p_backends
from evalsuite.runs import RunDirectory

REPO = Path(__file__).resolve().parents[2]
NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"

PLUGIN = '''
from pathlib import Path

from evalsuite.models.replay import ReplayBackend


class NucleusReplay(ReplayBackend):
    """The replay backend, declaring that it passes --top-p on; `top_p_log=FILE` appends each request's top-p there
    (how a run goes, never what it generates: declared operational)."""

    name = "nucleus-replay"
    supports_top_p = True
    operational_options = ReplayBackend.operational_options | {"top_p_log"}

    def __init__(self, model, top_p_log=None, **options):
        super().__init__(model, **options)
        self.top_p_log = Path(top_p_log) if top_p_log else None

    def _log(self, requests):
        if self.top_p_log is not None:
            with self.top_p_log.open("a") as log:
                log.writelines(f"{request.top_p}\\n" for request in requests)

    def generate(self, requests):
        self._log(requests)
        return super().generate(requests)

    async def agenerate(self, request):
        self._log([request])
        return await super().agenerate(request)


class PlainReplay(ReplayBackend):
    """The replay backend under a plugin's name, declaring nothing."""

    name = "plain-replay"
'''


@pytest.fixture
def plugin_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "nucleus_plugin").mkdir(parents=True)
    (site / "nucleus_plugin" / "__init__.py").write_text(PLUGIN)
    info = site / "nucleus_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nucleus-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[evalsuite.backends]\n"
        "nucleus-replay = nucleus_plugin:NucleusReplay\n"
        "plain-replay = nucleus_plugin:PlainReplay\n"
    )
    return site


def _run(site: Path, trajectories_dir: Path, benchmarks_dir: Path, out: Path, *options: str):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    command = [
        sys.executable, "-m", "evalsuite", "run", "--model", str(trajectories_dir / NQ_RECORDING), "--retriever",
        "replay", "--tasks", "nq", "--split", "test_sub1000", "--data-dir", str(benchmarks_dir), "--limit", "3",
        "-o", str(out), *options,
    ]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_a_plugin_backend_that_declares_top_p_takes_it(plugin_site, tmp_path, trajectories_dir, benchmarks_dir):
    out, log = tmp_path / "run", tmp_path / "top_p.log"
    done = _run(plugin_site, trajectories_dir, benchmarks_dir, out, "--backend", "nucleus-replay", "--top-p", "0.9",
                "--backend-option", f"top_p_log={log}")
    assert done.returncode == 0, done.stderr
    manifest = RunDirectory(out).read_manifest()
    assert manifest.backend.backend == "nucleus-replay"
    assert manifest.decoding.top_p == 0.9
    assert manifest.backend.options == {}  # top_p_log: declared operational by the plugin, so not a result setting
    sent = log.read_text().split()
    assert len(sent) >= 3 and set(sent) == {"0.9"}  # every request carried it, at least one per question

    # a resume may change the plugin's operational option, and is refused a changed --top-p
    again = _run(plugin_site, trajectories_dir, benchmarks_dir, out, "--backend", "nucleus-replay", "--top-p", "0.9",
                 "--backend-option", f"top_p_log={tmp_path / 'other.log'}", "--resume")
    assert again.returncode == 0, again.stderr
    changed = _run(plugin_site, trajectories_dir, benchmarks_dir, out, "--backend", "nucleus-replay", "--top-p", "0.5",
                   "--resume")
    assert changed.returncode == 2 and "top_p" in changed.stderr, changed.stderr


def test_a_plugin_backend_without_top_p_is_refused_naming_those_with_it(plugin_site, tmp_path, trajectories_dir,
                                                                        benchmarks_dir):
    done = _run(plugin_site, trajectories_dir, benchmarks_dir, tmp_path / "run", "--backend", "plain-replay",
                "--top-p", "0.9")
    assert done.returncode == 2
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip().startswith(("error:", "hint:"))]
    assert len(lines) == 2, done.stderr
    assert lines[0] == "error: --top-p is not passed on by the plain-replay backend"
    assert lines[1] == "hint: use one of llamacpp, nucleus-replay, openai, vllm, vllm-async, xllamacpp, or drop --top-p"
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_the_built_in_capabilities_are_the_ones_they_were():
    """The lists these attributes replaced (models/base.py's TOP_P_BACKENDS, agent/settings.py's OPERATIONAL_OPTIONS)."""
    assert top_p_backends() == ["llamacpp", "openai", "vllm", "vllm-async", "xllamacpp"]
    assert [name for name in ("openai", "replay", "vllm-async", "xllamacpp") if backend_class(name).supports_async] == [
        "openai", "replay", "vllm-async", "xllamacpp"]
    assert operational_options("openai") == {
        "schedule", "api_key", "concurrency", "timeout_s", "retries", "backoff_s", "deadline_s", "native_n"}
    assert operational_options("llamacpp") == operational_options("xllamacpp") == {"schedule", "n_threads",
                                                                                    "n_threads_batch"}
    assert operational_options("vllm") == {"schedule", "native_n"}
    assert generation_options({"delay_s": 0.1, "top_p": 0.9, "n_threads": 2}, "replay") == {"n_threads": 2, "top_p": 0.9}
    # a backend no longer registered (a plugin uninstalled) declares nothing: every option is a result setting
    assert generation_options({"delay_s": 0.1}, "gone-backend") == {"delay_s": 0.1}

