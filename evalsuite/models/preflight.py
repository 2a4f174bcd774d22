"""`--model` checked for its backend before any task data, index or model is loaded.

The backends' own libraries report a wrong model late and at length: transformers turns a missing folder into
`Repo id must be in the form ...` after a traceback, a folder without a tokenizer into lines about sentencepiece, and
an unreachable hub into a minute of retries. These checks look only at the file system and, for a hub id, make one
short connection attempt, so every such mistake is one line naming what was given and what was expected.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from evalsuite.errors import EvalsuiteError
from evalsuite.models.packaged import PACKAGED_MODELS
from evalsuite.network import CONNECT_TIMEOUT_S, hub_endpoint, hub_offline, unreachable

# the backends that load a Hugging Face model folder (or hub id), and those that load a GGUF file
FOLDER_BACKENDS = ("hf", "vllm", "vllm-async")
GGUF_BACKENDS = ("llamacpp", "xllamacpp")
CONFIG_FILE = "config.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "vocab.json", "spiece.model")
# a hub id as the hub accepts one: `name` or `owner/name`, letters, digits, `-`, `_`, `.` (no `--` or `..`)
_HUB_ID = re.compile(r"^(?!.*(--|\.\.))[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")
HF_FOLDER_HINT = "give a folder holding config.json, the weights and the tokenizer (as save_pretrained writes it)"


def check_model(backend: str, model: str, options: Mapping[str, Any] | None = None) -> None:
    """Refuse, in one line, a `--model` that `backend` cannot load: a missing path, a folder that is not a model, a
    model without a tokenizer, a hub id that is unknown or cannot be fetched, a file that is not GGUF, an endpoint
    nobody listens on. Packaged model names (`evalsuite models list`) and other backends pass unchecked."""
    options = options or {}
    if model in PACKAGED_MODELS:
        return
    if backend in GGUF_BACKENDS:
        check_gguf_file(model, backend)
    elif backend in FOLDER_BACKENDS:
        check_hf_model(model, backend, options)
    elif backend == "openai":
        base_url = model if model.startswith(("http://", "https://")) else options.get("base_url")
        if isinstance(base_url, str):
            check_endpoint(base_url, "--model" if base_url == model else "--backend-option base_url")
    elif backend == "lmeval":
        check_lmeval_model(model)


def check_gguf_file(model: str, backend: str) -> None:
    """A llama.cpp backend's model: an existing file that starts with GGUF's magic bytes."""
    path = Path(model).expanduser()
    if path.is_dir():
        raise EvalsuiteError(
            f"--model {model} is a folder; the {backend} backend takes a .gguf file",
            hint="for a Hugging Face model folder use --backend hf (or vllm); else give the .gguf file itself",
        )
    if not path.exists():
        raise EvalsuiteError(f"--model {model}: no such GGUF file", hint="give the path of a .gguf model file")
    check_gguf_magic(path)


def check_gguf_magic(path: Path) -> None:
    """Refuse a file that is not GGUF before llama.cpp tries to load it (GGUF files start with b'GGUF')."""
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise EvalsuiteError(
            f"{path} is not a GGUF file (it starts with {magic!r}, not b'GGUF')",
            hint="the llama.cpp backends need a .gguf model file; for a Hugging Face checkpoint use --backend hf",
        )


def looks_like_path(model: str) -> bool:
    """Whether `model` is meant as a local path rather than a hub id (`owner/name`)."""
    return model.startswith(("/", "./", "../", "~", ".\\")) or model in (".", "..") or os.path.exists(model)


def check_hf_model(model: str, backend: str, options: Mapping[str, Any]) -> None:
    """A local model folder, or a hub id that exists and can be fetched (or is already cached)."""
    if looks_like_path(model):
        check_model_folder(Path(model).expanduser(), model, backend, options.get("gguf_file"))
    elif _HUB_ID.match(model):
        revision = options.get("revision")
        check_hub_model(model, revision if isinstance(revision, str) else None)
    else:
        raise EvalsuiteError(
            f"--model {model} is neither an existing folder nor a Hugging Face hub id (owner/name)",
            hint=HF_FOLDER_HINT + ", or a hub id such as Qwen/Qwen2.5-3B-Instruct",
        )


def check_model_folder(path: Path, given: str, backend: str, gguf_file: object = None) -> None:
    """A Hugging Face model folder: config.json, weights and a tokenizer (or the GGUF named by `gguf_file`)."""
    if not path.exists():
        raise EvalsuiteError(f"--model {given}: no such folder", hint=HF_FOLDER_HINT)
    if path.is_file():
        if path.suffix.lower() == ".gguf":
            raise EvalsuiteError(
                f"--model {given} is a GGUF file; the {backend} backend takes a model folder",
                hint="use --backend xllamacpp (or llamacpp) for a .gguf file",
            )
        raise EvalsuiteError(f"--model {given} is a file, not a model folder", hint=HF_FOLDER_HINT)
    if isinstance(gguf_file, str):  # transformers reads weights, config and tokenizer from the GGUF itself
        gguf = path / gguf_file
        if not gguf.is_file():
            raise EvalsuiteError(
                f"--backend-option gguf_file={gguf_file}: no such file in {given}",
                hint="name a .gguf file inside the --model folder",
            )
        check_gguf_magic(gguf)
        return
    names = {entry.name for entry in path.iterdir()}
    if CONFIG_FILE not in names:
        raise EvalsuiteError(f"--model {given} is not a model folder: it has no {CONFIG_FILE}", hint=HF_FOLDER_HINT)
    if not any(name.endswith(WEIGHT_SUFFIXES) for name in names):
        raise EvalsuiteError(
            f"--model {given} holds no weights (no *.safetensors or *.bin file)",
            hint="save the model with save_pretrained into that folder, or give the folder that has the weights",
        )
    if not names.intersection(TOKENIZER_FILES):
        raise EvalsuiteError(
            f"--model {given} has no tokenizer (none of {', '.join(TOKENIZER_FILES)})",
            hint="save the tokenizer beside the weights: AutoTokenizer.from_pretrained(BASE).save_pretrained(FOLDER)",
        )


@functools.lru_cache(maxsize=None)  # one question per model and run: the CLI checks before loading, then the loader
def check_hub_model(repo_id: str, revision: str | None = None) -> None:
    """A hub id: in the local Hugging Face cache, or on a reachable hub. When the hub cannot be reached, the clients
    are put offline so that a cached model loads without their minute of retries."""
    try:
        import huggingface_hub
    except ImportError:
        return  # the backend names its missing extra itself
    cached = huggingface_hub.try_to_load_from_cache(repo_id, CONFIG_FILE, revision=revision)
    offline = hub_offline(("HF_HUB_OFFLINE",)) is not None
    endpoint = hub_endpoint()
    reachable = not offline and unreachable(endpoint) is None
    if isinstance(cached, str):
        if not reachable:
            os.environ["HF_HUB_OFFLINE"] = "1"  # read when the hub clients are first imported, after this check
        return
    if not reachable:
        why = "HF_HUB_OFFLINE is set" if offline else f"{endpoint} cannot be reached"
        raise EvalsuiteError(
            f"--model {repo_id} is not a local folder, it is not in the Hugging Face cache, and {why}",
            hint=f"download it where the hub is reachable (huggingface-cli download {repo_id}) or pass a local folder",
        )
    check_hub_repo(huggingface_hub, repo_id, revision)


def check_hub_repo(huggingface_hub: Any, repo_id: str, revision: str | None) -> None:
    """One quick question to a reachable hub: does the model exist (and may this user read it)?"""
    errors = huggingface_hub.errors
    try:
        huggingface_hub.HfApi().model_info(repo_id, revision=revision, timeout=CONNECT_TIMEOUT_S * 2)
    except errors.GatedRepoError:
        raise EvalsuiteError(
            f"--model {repo_id} is a gated model on the Hugging Face hub",
            hint="accept its terms on the hub, then `huggingface-cli login`",
        ) from None
    except errors.RevisionNotFoundError:
        raise EvalsuiteError(
            f"--model {repo_id} has no revision {revision!r} on the Hugging Face hub",
            hint="check --backend-option revision=...",
        ) from None
    except errors.RepositoryNotFoundError:
        raise EvalsuiteError(
            f"--model {repo_id}: no such model on the Hugging Face hub (or it is private)",
            hint="check the spelling (owner/name), or `huggingface-cli login` for a private model",
        ) from None
    except Exception:  # noqa: BLE001 - a slow or odd answer is left to the backend, which reports its own error
        return


def check_endpoint(url: str, given: str) -> None:
    """An OpenAI-compatible server: something must listen at the URL's host and port."""
    parsed = urlparse(url)
    if not parsed.hostname:
        raise EvalsuiteError(f"{given} {url} is not a URL", hint="e.g. --model http://127.0.0.1:8000/v1")
    if unreachable(url) is not None:
        raise EvalsuiteError(
            f"{given} {url}: no server answers at {parsed.hostname}:{parsed.port or 80}",
            hint="start the server first (vllm serve, llama-server, ...) or fix the URL and port",
        )


def check_lmeval_model(model: str) -> None:
    """lm-evaluation-harness's `TYPE:ARGS`: its `pretrained=` folder or hub id and its `base_url=` endpoint."""
    model_type, sep, arguments = model.partition(":")
    if not sep or not model_type:
        raise EvalsuiteError(f"lmeval model {model!r} has no type", hint="use TYPE:ARGS, e.g. hf:pretrained=/path")
    fields = dict(part.partition("=")[::2] for part in arguments.split(",") if "=" in part)
    if "pretrained" in fields and model_type in ("hf", "huggingface", "vllm"):
        check_hf_model(fields["pretrained"], "lmeval", {"revision": fields.get("revision")})
    if "base_url" in fields:
        check_endpoint(fields["base_url"], f"--model {model_type}:base_url=")
