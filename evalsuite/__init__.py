"""evalsuite: evaluation, comparison and reproduction of search-augmented LLM agents."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("evalsuite")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
