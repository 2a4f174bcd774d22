#!/usr/bin/env bash
# Build llama.cpp's own OpenAI-compatible server (`llama-server`: --parallel slots, continuous batching,
# per-request cache_prompt) from the llama-cpp-python sdist, so it is the same llama.cpp version as the
# installed llama-cpp-python. CPU only, portable flags (a -DGGML_NATIVE=ON build can crash on another CPU).
#
#   scripts/build_llama_server.sh [PREFIX]
#
# Installs PREFIX/llama-server (default: $EVALSUITE_CACHE_DIR/bin, else ~/.cache/evalsuite/bin) and prints its
# path; then PREFIX/llama-server-batch-invariant, the same sources built without llamafile's sgemm
# (-DGGML_LLAMAFILE=OFF), and prints its path on a second line. That second build is what makes a sequence's
# greedy text independent of the other sequences in its batch (with the runtime flags of tests/llama_servers.py,
# docs/agent.md): ggml-cpu's mul_mat hands 2 or more token columns to tinyBLAS and a single column to vec_dot, two
# summation orders, and no runtime switch turns tinyBLAS off. It is slower on prompts, so it is a second binary.
# Environment: LLAMA_CPP_SDIST=path/to/llama_cpp_python-X.tar.gz to skip the download, LLAMA_CPP_VERSION
# (default: the installed llama-cpp-python's version), JOBS (default 2), BATCH_INVARIANT=0 to build only the first
# binary (each build takes about 10 minutes on 2 cores).
set -euo pipefail

cache="${EVALSUITE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/evalsuite}"
prefix="${1:-$cache/bin}"
jobs="${JOBS:-2}"
version="${LLAMA_CPP_VERSION:-$(python -c 'import importlib.metadata as m; print(m.version("llama-cpp-python"))' 2>/dev/null || echo 0.3.36)}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

sdist="${LLAMA_CPP_SDIST:-}"
if [[ -z "$sdist" ]]; then
    echo "downloading the llama-cpp-python $version sdist with pip" >&2
    python -m pip download --quiet --no-deps --no-binary :all: -d "$work" "llama-cpp-python==$version"
    sdist="$(ls "$work"/llama_cpp_python-*.tar.gz)"
fi
[[ -f "$sdist" ]] || { echo "error: sdist not found: $sdist (set LLAMA_CPP_SDIST or let pip download it)" >&2; exit 2; }

tar -xzf "$sdist" -C "$work" --wildcards '*/vendor/llama.cpp/*'
src="$(ls -d "$work"/llama_cpp_python-*/vendor/llama.cpp)"

# build_server NAME [CMAKE_OPTION...]: configure, build and install PREFIX/NAME; print its path
build_server() {
    local name="$1"; shift
    cmake -S "$src" -B "$work/build-$name" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
        -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
        -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "$@" >&2
    cmake --build "$work/build-$name" --target llama-server -j "$jobs" >&2
    mkdir -p "$prefix"
    install -m 0755 "$work/build-$name/bin/llama-server" "$prefix/$name"
    echo "$prefix/$name"
}

build_server llama-server
if [[ "${BATCH_INVARIANT:-1}" != 0 ]]; then
    build_server llama-server-batch-invariant -DGGML_LLAMAFILE=OFF
fi
