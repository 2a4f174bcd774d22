"""The BM25 index defaults, stated once: `bm25.build_bm25`, the reference build in `bm25_build` and the options of
`evalsuite index build` read them. A module of its own, importing nothing, so the command line reads them without
loading numpy or bm25s.

k1=1.5, b=0.75 are bm25s's (and Lucene's classic) defaults; Pyserini, which Search-R1's BM25 uses, defaults to
k1=0.9, b=0.4: pass those to match it.
"""

from __future__ import annotations

from typing import Any

BM25_DEFAULTS: dict[str, Any] = {"k1": 1.5, "b": 0.75, "method": "lucene", "stopwords": "en", "stemmer": "english"}
