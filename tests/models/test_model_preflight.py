"""A `--model` a backend cannot load is refused in one line, fast, before any task data or index is loaded (issue 39.1).

Each case runs the real `evalsuite run` in a subprocess with a task data folder that does not exist: had the data been
read first, its error would come instead. Every case must exit 2 with one `error:` line that names what was given,
a hint, no traceback, within 10 s, and write no run directory. The hub cases point the Hugging Face clients at a port
on 127.0.0.1 where nothing listens (offline, as on this machine), with an empty hub cache.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.models.preflight import check_model
from tests.conftest import requires_extra, requires_one_extra_of

# the hf backend's own packages: without them its check names the extra before looking at --model
HF_EXTRA = requires_extra("hf", "torch", "transformers")


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def refused(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[str, str, float]:
    """Run `evalsuite run ARGS` on missing task data; return its error line, its hint line and its seconds."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "evalsuite", "run", "--tasks", "nq", "--data-dir", str(tmp_path / "no-data"),
         "--retriever", "replay", "-o", str(tmp_path / "run"), *args],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "300", "NO_COLOR": "1", **(env or {})},
    )
    seconds = time.monotonic() - started
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    hints = [line for line in result.stderr.splitlines() if line.startswith("  hint:")]
    assert len(errors) == 1 and len(hints) == 1, result.stderr
    assert "no-data" not in errors[0]  # the model was checked before the task data was read
    assert not (tmp_path / "run").exists()
    return errors[0], hints[0], seconds


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real (random, tiny) Llama checkpoint saved by transformers: config.json and model.safetensors, no tokenizer."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    folder = tmp_path_factory.mktemp("tiny") / "model"
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@HF_EXTRA
def test_hf_on_a_missing_path(tmp_path):
    error, hint, seconds = refused(tmp_path, "--backend", "hf", "--model", "/nonexistent/model")
    assert error == "error: --model /nonexistent/model: no such folder"
    assert hint == "  hint: give a folder holding config.json, the weights and the tokenizer (as save_pretrained writes it)"
    assert seconds < 10


@HF_EXTRA
def test_hf_on_a_folder_that_is_not_a_model(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "README.txt").write_text("not a model")
    error, _, seconds = refused(tmp_path, "--backend", "hf", "--model", str(folder))
    assert error == f"error: --model {folder} is not a model folder: it has no config.json"
    assert seconds < 10


def test_hf_on_a_model_without_a_tokenizer(tmp_path, tiny_model):
    error, hint, seconds = refused(tmp_path, "--backend", "hf", "--model", str(tiny_model))
    assert error.startswith(f"error: --model {tiny_model} has no tokenizer (none of tokenizer.json, ")
    assert "save_pretrained(FOLDER)" in hint
    assert seconds < 10


def test_hf_on_a_model_without_weights(tmp_path, tiny_model):
    folder = tmp_path / "config-only"
    folder.mkdir()
    (folder / "config.json").write_bytes((tiny_model / "config.json").read_bytes())
    error, _, _ = refused(tmp_path, "--backend", "hf", "--model", str(folder))
    assert error == f"error: --model {folder} holds no weights (no *.safetensors or *.bin file)"


def test_a_complete_folder_passes_and_a_tokenizer_completes_one(tmp_path, tiny_model):
    """The control: the checks refuse only what is missing (a tokenizer file makes the tiny model complete)."""
    folder = tmp_path / "complete"
    folder.mkdir()
    for entry in tiny_model.iterdir():
        (folder / entry.name).write_bytes(entry.read_bytes())
    with pytest.raises(EvalsuiteError, match="has no tokenizer"):
        check_model("hf", str(folder))
    (folder / "tokenizer.json").write_text("{}")
    for backend in ("hf", "vllm", "vllm-async"):  # vLLM loads the same folders: the same checks
        check_model(backend, str(folder))


@HF_EXTRA
def test_hf_on_a_gguf_file_points_to_the_llama_cpp_backends(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    error, hint, _ = refused(tmp_path, "--backend", "hf", "--model", str(gguf))
    assert error == f"error: --model {gguf} is a GGUF file; the hf backend takes a model folder"
    assert hint == "  hint: use --backend xllamacpp (or llamacpp) for a .gguf file"


@HF_EXTRA
def test_an_unreachable_hub_is_one_line_within_seconds(tmp_path):
    endpoint = f"http://127.0.0.1:{closed_port()}"
    env = {"HF_ENDPOINT": endpoint, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": ""}
    error, hint, seconds = refused(tmp_path, "--backend", "hf", "--model", "someone/some-model", env=env)
    assert error == (
        "error: --model someone/some-model is not a local folder, it is not in the Hugging Face cache, "
        f"and {endpoint} cannot be reached"
    )
    assert hint == "  hint: download it where the hub is reachable (huggingface-cli download someone/some-model) or pass a local folder"
    assert seconds < 10


@HF_EXTRA
def test_hub_offline_mode_is_named(tmp_path):
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    error, _, seconds = refused(tmp_path, "--backend", "hf", "--model", "someone/some-model", env=env)
    assert error.endswith("it is not in the Hugging Face cache, and HF_HUB_OFFLINE is set")
    assert seconds < 10


@HF_EXTRA
def test_a_name_that_is_neither_a_folder_nor_a_hub_id(tmp_path):
    error, _, _ = refused(tmp_path, "--backend", "hf", "--model", "my model/v2/final")
    assert error == "error: --model my model/v2/final is neither an existing folder nor a Hugging Face hub id (owner/name)"


@pytest.mark.parametrize("backend", ["llamacpp", "xllamacpp"])
def test_the_llama_cpp_backends_on_a_missing_file_a_folder_and_a_file_that_is_not_gguf(tmp_path, backend):
    pytest.importorskip({"llamacpp": "llama_cpp", "xllamacpp": "xllamacpp"}[backend])
    error, _, seconds = refused(tmp_path, "--backend", backend, "--model", str(tmp_path / "gone.gguf"))
    assert error == f"error: --model {tmp_path / 'gone.gguf'}: no such GGUF file"
    assert seconds < 10
    error, hint, _ = refused(tmp_path, "--backend", backend, "--model", str(tmp_path))
    assert error == f"error: --model {tmp_path} is a folder; the {backend} backend takes a .gguf file"
    html = tmp_path / "download.gguf"
    html.write_text("<html>this download failed</html>")
    error, hint, _ = refused(tmp_path, "--backend", backend, "--model", str(html))
    assert error == f"error: {html} is not a GGUF file (it starts with b'<htm', not b'GGUF')"


@requires_one_extra_of({"demo": "xllamacpp", "llamacpp": "llama_cpp"})  # the backend a .gguf is guessed to
def test_a_gguf_without_backend_is_guessed_and_checked_too(tmp_path):
    html = tmp_path / "download.gguf"
    html.write_text("<html>this download failed</html>")
    error, _, _ = refused(tmp_path, "--model", str(html))
    assert error == f"error: {html} is not a GGUF file (it starts with b'<htm', not b'GGUF')"


def test_openai_with_no_server_there(tmp_path):
    pytest.importorskip("openai")
    url = f"http://127.0.0.1:{closed_port()}/v1"
    error, hint, seconds = refused(tmp_path, "--backend", "openai", "--model", url)
    assert error == f"error: --model {url}: no server answers at 127.0.0.1:{url.split(':')[2].split('/')[0]}"
    assert hint == "  hint: start the server first (vllm serve, llama-server, ...) or fix the URL and port"
    assert seconds < 10


def test_a_backend_that_is_not_installed_is_named_before_its_model(tmp_path):
    """vLLM and lm-evaluation-harness are not installed here: their extra is named first, whatever --model is."""
    for backend, package in (("vllm", "vllm"), ("lmeval", "lm_eval")):
        if __import__("importlib").util.find_spec(package) is not None:
            continue
        error, _, seconds = refused(tmp_path, "--backend", backend, "--model", "/nonexistent/model", "--schedule", "sync")
        assert error == f"error: the {backend} backend needs the Python package '{package}', which is not installed."
        assert seconds < 10


def test_lmeval_model_strings_are_checked_by_the_same_rules():
    with pytest.raises(EvalsuiteError, match="has no type"):
        check_model("lmeval", "pretrained=/x")
    with pytest.raises(EvalsuiteError, match=r"--model /nonexistent/model: no such folder"):
        check_model("lmeval", "hf:pretrained=/nonexistent/model,dtype=float32")
    with pytest.raises(EvalsuiteError, match="no server answers"):
        check_model("lmeval", f"local-completions:base_url=http://127.0.0.1:{closed_port()}/v1/completions,model=m")


def test_vllm_shares_the_folder_checks():
    """vLLM is not installed here: what it would be given is checked by the same preflight as hf (tested above)."""
    with pytest.raises(EvalsuiteError, match="no such folder"):
        check_model("vllm", "/nonexistent/model")
    with pytest.raises(EvalsuiteError, match="is neither an existing folder nor a Hugging Face hub id"):
        check_model("vllm-async", "not a/hub/id")


def test_packaged_model_names_pass_unchecked():
    check_model("hf", "smollm2-135m")
    check_model("xllamacpp", "gemma3-270m")


@requires_extra("hf", "huggingface_hub")
def test_a_cached_hub_model_passes_offline_and_the_clients_are_put_offline(tmp_path):
    """A hub id in the Hugging Face cache (its real layout: refs/main naming a snapshot that holds config.json) loads
    while the hub cannot be reached: the check passes and sets HF_HUB_OFFLINE, so the clients do not retry for a
    minute. Run in a subprocess: the hub clients read their variables when first imported."""
    snapshot = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hf" / "hub" / "models--someone--cached-model"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(snapshot)
    (repo / "snapshots" / snapshot).mkdir(parents=True)
    (repo / "snapshots" / snapshot / "config.json").write_text("{}")
    code = ("import os; from evalsuite.models.preflight import check_model; "
            "check_model('hf', 'someone/cached-model'); print(os.environ.get('HF_HUB_OFFLINE'))")
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}
    env.pop("HF_HUB_OFFLINE", None)
    env.pop("HF_HUB_CACHE", None)
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1" and time.monotonic() - started < 10
