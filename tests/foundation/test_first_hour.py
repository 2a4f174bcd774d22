"""A stranger's first hour, in a fresh `python -m venv` (nothing inherited) on a fresh copy of the tree: the README's
first command (`pip install -e ".[demo]" && evalsuite run`), then every `evalsuite` command the demo prints, run in
that venv; Ctrl-C on the running demo (a real SIGINT: exit 130 within 2 s, the line that says what was kept and how
to continue, and that command, as printed, finishes the run); then what the user tries next with their own things:
an `hf` run on a missing path and on a folder that is not a model (one `error:` line, exit 2, no traceback),
`data download --from DIR` on a plain local folder with no `datasets` installed, and the `[hf]` extra installed in
another fresh venv exactly as evalsuite's own hint says, which on a CPU machine brings no CUDA stack. Slow (a real
install from PyPI and the demo's real model): `.ci/run` runs it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reliability.reliability_helpers import Running, ok_records

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
# a command the demo prints: from `evalsuite` to the end of its line (or the closing backtick of a code span)
PRINTED_COMMAND = re.compile(r"(evalsuite [^`\n]+?)\s*(?:`|$)", re.M)


@dataclass
class FirstHour:
    tree: Path  # the fresh copy, where the user works
    venv: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(args), cwd=self.tree, env=self.env, capture_output=True, text=True, timeout=timeout)


def copy_tree(target: Path) -> None:
    """The repository's files as a fresh clone has them (tracked and new, nothing ignored), as `.ci/run` copies it."""
    target.mkdir(parents=True)
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout
    files = subprocess.run(["tar", "--null", "-T", "-", "-cf", "-"], cwd=REPO, input=listed, capture_output=True,
                           check=True).stdout
    subprocess.run(["tar", "-xf", "-", "-C", str(target)], input=files, check=True)


def fresh_venv(venv: Path, cache: Path) -> dict[str, str]:
    """A new `python -m venv` (no --system-site-packages) and the environment of a shell in which it is active."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALSUITE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", VIRTUAL_ENV=str(venv), EVALSUITE_CACHE_DIR=str(cache),
               BROWSER="true",  # `view --open` hands the page to a "browser" that exists and does nothing
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


@pytest.fixture(scope="module")
def first_hour(tmp_path_factory) -> FirstHour:
    root = tmp_path_factory.mktemp("first-hour")
    tree, venv = root / "evalsuite", root / "venv"
    copy_tree(tree)
    env = fresh_venv(venv, root / "cache")
    # the README's first command is `pip install -e ".[demo]" && evalsuite run`: its install here, its run below
    install = subprocess.run(["pip", "install", "-q", "-e", ".[demo]"], cwd=tree, env=env, capture_output=True,
                             text=True, timeout=1800)
    assert install.returncode == 0, install.stderr[-3000:]
    return FirstHour(tree, venv, env)


def test_the_demo_runs_and_every_command_it_prints_works_in_its_venv(first_hour):
    demo = first_hour.run("evalsuite", "run", timeout=1800)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    printed = PRINTED_COMMAND.findall(demo.stdout)
    assert any(c.startswith("evalsuite view ") and c.endswith(" --open") for c in printed), demo.stdout
    for command in printed:
        result = first_hour.run("bash", "-c", command)
        assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        assert "error:" not in result.stderr, f"{command}\n{result.stderr}"


def test_ctrl_c_on_the_running_demo_keeps_what_finished_and_the_printed_command_finishes_it(first_hour):
    """The demo exactly as a user starts it (`evalsuite run`: its run directory is a timestamp under runs/), a real
    SIGINT once its first example is on disk while the others are in flight (issue 39.6)."""
    runs = first_hour.tree / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()

    def out() -> Path | None:  # the run directory this demo makes (the first test's demo made another one)
        made = (set(runs.iterdir()) if runs.is_dir() else set()) - before
        return made.pop() if made else None

    demo = Running(["run"], first_hour.tree, command=[str(first_hour.venv / "bin" / "evalsuite")], env=first_hour.env)
    # stderr is a pipe: plain lines, the first `examples: N to run` once the model and the index are loaded
    demo.wait_for(lambda: any(line.startswith("examples: ") for _, line in demo.lines), timeout_s=900)
    total = int(next(line for _, line in demo.lines if line.startswith("examples: ")).split()[1])
    demo.wait_for(lambda: (made := out()) is not None and len(ok_records(made)) >= 1, timeout_s=600)
    on_disk = ok_records(out())  # what had finished when the key was pressed
    code, stopped_in = demo.interrupt(timeout_s=30)
    assert code == 130, demo.text()
    assert stopped_in < 2.0, f"{stopped_in:.2f} s\n{demo.text()}"
    run_dir = out()
    assert run_dir is not None
    kept = ok_records(run_dir)
    # every record on disk when Ctrl-C came is kept as it was, and the run was cut before its end
    assert kept[: len(on_disk)] == on_disk and len(kept) < total, demo.text()
    relative = run_dir.relative_to(first_hour.tree)  # as the run names it: -o defaults to runs/<timestamp>
    said = [line for _, line in demo.lines if line.startswith("interrupted")]
    prefix = f"interrupted: {len(kept)} finished example{'s' if len(kept) > 1 else ''} kept in {relative}; continue with: "
    assert len(said) == 1 and said[0] == demo.lines[-1][1] and said[0].startswith(prefix), demo.text()
    command = said[0][len(prefix):]
    assert shlex.split(command) == ["evalsuite", "run", "-o", str(relative), "--resume"], command
    print(f"Ctrl-C: exit 130 in {stopped_in:.2f} s, {len(kept)} of {total} kept; {command}")

    # the printed command, typed into the demo's venv as printed, finishes the run from what was kept
    began = time.monotonic()
    resumed = first_hour.run("bash", "-c", command, timeout=900)
    print(f"{command}: exit {resumed.returncode} in {time.monotonic() - began:.0f} s")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert f"examples: {total} to run, {len(kept)} already done" in resumed.stderr.splitlines(), resumed.stderr
    records = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines() if line.strip()]
    ids = [r["id"] for r in records]
    assert len(ids) == total and len(set(ids)) == total, ids  # every question recorded once
    assert all(r["status"] == "ok" for r in records), [r["status"] for r in records]
    assert all(r in records for r in kept)  # what was kept is kept as it was


# a plain progress line (stderr is not a terminal here): `checking the model · 0:00 elapsed`
PROGRESS_LINE = re.compile(r".+ · \d+:\d\d(?::\d\d)? elapsed(?: · .*)?")


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The run was refused as the README promises: exit 2, an `error:` line (and at most a hint), no traceback; the
    stage lines of the progress written before it are not part of the error."""
    lines = [line for line in result.stderr.splitlines() if line.strip() and not PROGRESS_LINE.fullmatch(line)]
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and lines and lines[0].startswith("error: "), result.stderr[-3000:]
    assert len(lines) <= 2 and all(line.startswith("  hint: ") for line in lines[1:]), result.stderr
    return lines[0]


def test_an_hf_run_on_a_missing_path_or_a_folder_that_is_not_a_model_is_one_line(first_hour, tmp_path):
    not_a_model = tmp_path / "notes"
    not_a_model.mkdir()
    (not_a_model / "readme.txt").write_text("not a model\n")
    for model in ("/nonexistent/model", str(not_a_model)):
        result = first_hour.run("evalsuite", "run", "--backend", "hf", "--model", model, "--tasks", "adqa",
                                "--retriever", "adqa", "--limit", "1", "-o", str(tmp_path / "run"), timeout=120)
        error = one_error_line(result)
        # `[demo]` has neither torch nor transformers: what the backend lacks is named first; with them, the model
        assert model in error or error.startswith("error: the hf backend needs the Python package "), error
        assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_data_download_from_a_local_folder_works_without_datasets(first_hour, tmp_path, benchmarks_dir):
    assert first_hour.run("python", "-c", "import datasets").returncode != 0  # `[demo]` does not bring it
    mirror, data = tmp_path / "mirror", tmp_path / "data"
    (mirror / "bamboogle").mkdir(parents=True)
    with (benchmarks_dir / "bamboogle.test.jsonl").open(encoding="utf-8") as rows:
        (mirror / "bamboogle" / "test.jsonl").write_text("".join(next(rows) for _ in range(8)), encoding="utf-8")
    result = first_hour.run("evalsuite", "data", "download", "--tasks", "bamboogle", "--from", str(mirror),
                            "--data-dir", str(data), timeout=120)
    assert result.returncode == 0, result.stderr
    record = json.loads((data / "evalsuite-data.json").read_text())["files"]["bamboogle.test.jsonl"]
    assert record["rows"] == 8 and (data / "bamboogle.test.jsonl").read_bytes() == (mirror / "bamboogle" / "test.jsonl").read_bytes()
    tasks = first_hour.run("evalsuite", "tasks", "--data-dir", str(data), "--json", timeout=120)
    assert tasks.returncode == 0, tasks.stderr


# a tiny real transformers model (random weights; a byte-level BPE tokenizer trained on evalsuite's own text, so
# prompts are a few thousand tokens), saved as a user's checkpoint folder is
TINY_MODEL = """
import pathlib, sys, evalsuite, torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
tokenizer = Tokenizer(models.BPE())
tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tokenizer.decoder = decoders.ByteLevel()
texts = [path.read_text() for path in pathlib.Path(evalsuite.__file__).parent.rglob("*.py")]
tokenizer.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=4000, special_tokens=["<|endoftext|>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
torch.manual_seed(0)
config = GPT2Config(vocab_size=tokenizer.get_vocab_size(), n_positions=8192, n_embd=32, n_layer=2, n_head=2,
                    bos_token_id=0, eos_token_id=0)
GPT2LMHeadModel(config).save_pretrained(sys.argv[1])
PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>",
                        pad_token="<|endoftext|>").save_pretrained(sys.argv[1])
"""
HINT = re.compile(r"^  hint: install the torch build for this machine first \(CPU: (pip install [^)]+)\), then "
                  r"(pip install .+)$", re.M)


def test_the_hf_extra_installed_as_its_hint_says_brings_no_cuda_stack_on_a_cpu_machine(first_hour, tmp_path):
    """Issue 39.2: the hint a `[demo]` user gets for `--backend hf`, followed in a fresh venv on this CPU machine,
    installs the CPU torch (no NVIDIA libraries); `evalsuite run --backend hf` then refuses a missing path in one line
    and runs a real (tiny) model folder end to end."""
    asked = first_hour.run("evalsuite", "run", "--backend", "hf", "--model", "/nonexistent/model", "--tasks", "adqa",
                           "--retriever", "adqa", "--limit", "1", "-o", str(tmp_path / "refused"), timeout=120)
    one_error_line(asked)
    hint = HINT.search(asked.stderr)
    assert hint, asked.stderr
    torch_first, extra = hint.groups()
    assert torch_first == "pip install torch==2.13.0" and extra == 'pip install "evalsuite[hf]"', hint.group(0)

    venv = tmp_path / "hf-venv"
    env = fresh_venv(venv, Path(first_hour.env["EVALSUITE_CACHE_DIR"]))  # the same user, the same cache
    # the hint, command by command; `evalsuite` is this tree here (what PyPI would serve under that name)
    for command in (torch_first, extra.replace('"evalsuite[', f'"{first_hour.tree}[')):
        began = time.monotonic()
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=1200)
        assert done.returncode == 0, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        print(f"{command}: {time.monotonic() - began:.0f} s")
    python = str(venv / "bin" / "python")
    probe = subprocess.run(
        [python, "-c", "import importlib.metadata as m, json, torch, transformers; print(json.dumps("
                       "{'names': sorted(d.metadata['Name'] for d in m.distributions()), 'cuda': torch.version.cuda,"
                       " 'torch': torch.__version__}))"],
        env=env, capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr[-3000:]
    installed = json.loads(probe.stdout)
    assert not [n for n in installed["names"] if n.lower().startswith("nvidia")], installed["names"]
    assert installed["cuda"] is None and installed["torch"].startswith("2.13.0"), installed
    size = subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True).stdout.split()[0]
    print(f"the [hf] venv: {size} MB, torch {installed['torch']}")

    def hf_run(model: str, out: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(venv / "bin" / "evalsuite"), "run", "--backend", "hf", "--model", model, "--tasks", "adqa",
             "--retriever", "adqa", "--limit", "1", "--prompt-style", "base-fewshot", "--max-tokens", "8",
             "--max-turns", "1", "-o", str(out)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)

    # with torch and transformers there, a missing path is the model's one line (not the missing packages')
    missing = hf_run("/nonexistent/model", tmp_path / "missing")
    assert "/nonexistent/model" in one_error_line(missing), missing.stderr
    model = tmp_path / "tiny-model"
    made = subprocess.run([python, "-c", TINY_MODEL, str(model)], env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    ran = hf_run(str(model), tmp_path / "tiny")  # the whole path: load, generate, retrieve, score
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-3000:]
    records = [json.loads(line) for line in (tmp_path / "tiny" / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 1 and records[0]["status"] == "ok", records
    manifest = json.loads((tmp_path / "tiny" / "manifest.json").read_text())
    assert manifest["backend"]["backend"] == "hf", manifest["backend"]
