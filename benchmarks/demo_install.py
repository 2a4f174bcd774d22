"""The README's first command from a fresh copy to the results table: `pip install -e ".[demo]" && evalsuite run`,
timed step by step (wall and CPU seconds, with the load average), against the same demo on llama-cpp-python, whose
install builds llama.cpp from source.

    python benchmarks/demo_install.py [--engine xllamacpp|llamacpp|both] [--no-run] [--keep DIR]

Each engine gets a fresh copy of the working tree (tracked and new files, as a clone has them), a fresh
`python -m venv` (no system packages), no pip cache and empty caches (HOME points into the copy), so the figures
are what a new user's machine would see, less the download time from PyPI. With `--engine both`, the ratio of the
two installs (llamacpp / xllamacpp) is printed. Measured here: docs/measurements.md, "The README's first command".
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PORTABLE = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
            "-DLLAVA_BUILD=OFF")
# engine -> (pip extras, extra environment of the install, `evalsuite run` options)
ENGINES = {
    "xllamacpp": ("demo", {}, []),
    "llamacpp": ("demo,llamacpp", {"CMAKE_ARGS": PORTABLE}, ["--backend", "llamacpp"]),
}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(label: str, command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run `command`; print and return its wall and CPU seconds (children's user + system time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"  {label}: {wall:.1f} s wall, {cpu:.1f} CPU-seconds (load {load()})", flush=True)
    return wall, cpu


def copy_tree(target: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = REPO / name.decode()
        if source.is_file():
            (target / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name.decode())


def measure(engine: str, root: Path, run: bool) -> dict[str, tuple[float, float]]:
    extras, install_env, run_options = ENGINES[engine]
    tree, home, venv = root / "evalsuite", root / "home", root / "venv"
    tree.mkdir(parents=True)
    home.mkdir()
    copy_tree(tree)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EVALSUITE_CACHE_DIR", "VIRTUAL_ENV")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    print(f"{engine} (load {load()} before):", flush=True)
    steps = {"venv": timed("python -m venv", [sys.executable, "-m", "venv", str(venv)], env, tree)}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"
    steps["install"] = timed(f'pip install -e ".[{extras}]"', [str(venv / "bin" / "pip"), "install", "-q", "-e", f".[{extras}]"],
                             {**env, **install_env}, tree)
    if run:
        steps["run"] = timed(" ".join(["evalsuite run", *run_options]), [str(venv / "bin" / "evalsuite"), "run", "-o", str(root / "run"), *run_options], env, tree)
    wall, cpu = sum(w for w, _ in steps.values()), sum(c for _, c in steps.values())
    print(f"  in all: {wall:.1f} s wall ({wall / 60:.1f} min), {cpu:.1f} CPU-seconds", flush=True)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=[*ENGINES, "both"], default="xllamacpp")
    parser.add_argument("--no-run", action="store_true", help="time the venv and the install only")
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a temporary folder, removed)")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="demo-install-"))
    try:
        results = {e: measure(e, root / e, not args.no_run) for e in (ENGINES if args.engine == "both" else [args.engine])}
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    if len(results) == 2:
        ratio = results["llamacpp"]["install"][0] / results["xllamacpp"]["install"][0]
        print(f"install, llamacpp (source build) / xllamacpp (prebuilt wheel): {ratio:.1f}x the wall time")


if __name__ == "__main__":
    main()
