"""An open, generated AD-QA-style benchmark: enterprise (ad-platform) multi-hop QA with its own corpus.

Search-P1 (appendix A) evaluates on AD-QA, a private advertising-domain set of 1,000 multi-hop questions spanning
campaign configuration, bidding strategies, audience targeting and conversion tracking. This package generates an
open counterpart from a seeded synthetic knowledge base; see docs/adqa.md.
"""

from evalsuite.tasks.adqa.dataset import DEFAULT_N_TEST, DEFAULT_N_TRAIN, DEFAULT_SEED, generate_release, write_release
from evalsuite.tasks.adqa.shipped import PACKAGED_DATA, adqa_index, adqa_index_dir, shipped_corpus_path, shipped_dir


def essential_queries(metadata: dict) -> list[str]:
    """The gold atomic sub-questions of a row ("essential queries" for Progress; reference plan steps for Search-P1)."""
    return [hop["question"] for hop in metadata.get("decomposition", [])]


__all__ = [
    "DEFAULT_N_TEST",
    "DEFAULT_N_TRAIN",
    "DEFAULT_SEED",
    "PACKAGED_DATA",
    "adqa_index",
    "adqa_index_dir",
    "essential_queries",
    "generate_release",
    "shipped_corpus_path",
    "shipped_dir",
    "write_release",
]
