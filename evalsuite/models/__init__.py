"""Generation backends (openai, hf, vllm, llamacpp, lmeval, replay) behind one small interface."""

from evalsuite.models.base import Backend, Generation, GenerationRequest, cut_at_stop, infer_stop
from evalsuite.models.registry import backend_class, guess_backend, list_backends, load_backend, register_backend

__all__ = [
    "Backend",
    "Generation",
    "GenerationRequest",
    "backend_class",
    "cut_at_stop",
    "guess_backend",
    "infer_stop",
    "list_backends",
    "load_backend",
    "register_backend",
]
