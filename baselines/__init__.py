"""Inference-only baselines (direct, cot, naive-rag, ircot, search-o1), registered as methods by name."""

from evalsuite.baselines import cot, direct, ircot, naive_rag, search_o1  # noqa: F401
