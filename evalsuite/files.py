"""Files shared by every part: content hashes for provenance, atomic replacement and the user cache directory."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError

CACHE_ENV = "EVALSUITE_CACHE_DIR"
# Bounds on a file that may come from someone else (a run directory, a --config manifest, a FlashRAG config.yaml):
# a config or manifest is kilobytes, so 16 MiB is generous; a YAML document may expand to this many nodes.
MAX_CONFIG_BYTES = 16 << 20
MAX_YAML_NODES = 100_000


def read_untrusted_bytes(path: str | Path, max_bytes: int, field: str = "file") -> bytes:
    """A file's bytes, refusing (one line naming the file) anything that is not a regular file (a FIFO would block
    forever, a device never ends) and anything over `max_bytes`. The size is checked on the open file, so a file
    swapped after the check still cannot be read past the bound."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise DataError(f"{path}: cannot read the {field} ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # checked before fdopen, which refuses a folder with a traceback
        os.close(fd)
        raise DataError(
            f"{path}: the {field} is not a regular file", hint="pass a regular file (not a pipe, device or socket)"
        )
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise DataError(
            f"{path}: the {field} is over {max_bytes:,} bytes",
            hint="this is not a file evalsuite wrote; check the path",
        )
    return data


def yaml_node_count(node: Any, limit: int = MAX_YAML_NODES) -> int:
    """How many nodes a composed YAML document expands to, aliases counted each time they are used (stops past
    `limit`): a "billion laughs" document is a few lines whose aliases expand to billions of values."""
    count, stack = 0, [node]
    while stack and count <= limit:
        current = stack.pop()
        count += 1
        value = getattr(current, "value", None)
        if isinstance(value, list):
            for item in value:
                stack.extend(item if isinstance(item, tuple) else (item,))
    return count


def load_untrusted_yaml(text: str, path: str | Path, loader: Any = None) -> Any:
    """YAML (or JSON) text parsed with an expansion bound: refused, naming the file, when its aliases would expand
    to more than MAX_YAML_NODES values. `loader` defaults to yaml.SafeLoader."""
    import yaml

    loader = loader or yaml.SafeLoader
    node = yaml.compose(text, Loader=loader)
    if node is not None and yaml_node_count(node) > MAX_YAML_NODES:
        raise DataError(
            f"{path}: the YAML expands to more than {MAX_YAML_NODES:,} values (anchors and aliases)",
            hint="write the values out; a config file needs no aliases that multiply",
        )
    return yaml.load(text, Loader=loader)


def file_sha256(path: str | Path, chunk_size: int = 1 << 22) -> str:
    """The sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(chunk_size), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_directory(path: Path) -> None:
    """Make a rename inside `path` durable (not every filesystem lets a directory be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temporary_path(path: Path) -> Path:
    """Where an atomic rewrite of `path` is prepared (one writer per file; a leftover is overwritten)."""
    return path.with_name(path.name + ".tmp")


def replace_atomically(path: Path, data: bytes) -> None:
    """Replace `path` by `data`: a temporary file beside it, fsynced, then renamed over it, so a kill or a full disk
    at any point leaves either the old file or the new one. An OSError propagates after the temporary file is
    removed (the old file is untouched)."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb", buffering=0) as handle:
            view = memoryview(data)
            while view:  # a raw write may take only part of the bytes
                view = view[handle.write(view) :]
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def cache_root() -> Path:
    """Where evalsuite caches derived files (indexes, unpacked data, hashes): $EVALSUITE_CACHE_DIR, else
    $XDG_CACHE_HOME/evalsuite, else ~/.cache/evalsuite."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalsuite"


def untaken_name(base: str, taken: set[str]) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first not in `taken` (folder names written side by side); the name
    chosen is added to `taken`."""
    name, counter = base, 2
    while name in taken:
        name, counter = f"{base}-{counter}", counter + 1
    taken.add(name)
    return name
