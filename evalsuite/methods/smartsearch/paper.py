"""The evaluation setting of the smartsearch paper: benchmarks, splits, metric, retriever, top-k, max turns and the
evaluated models, each with its source (`agent.papers`: a quote of the seed, inherited from Search-R1, or assumed)."""

from __future__ import annotations

from evalsuite.agent.papers import PaperSetting, assumed, from_paper

SETTING = PaperSetting(
    evaluation=[
        from_paper(
            "benchmarks",
            ["2wikimultihopqa", "hotpotqa", "bamboogle", "musique", "gaia", "webwalker"],
            "004:197",
            "multi-hop question-answering datasets (2WikiMultihopQA, HotpotQA, "
            "Bamboogle, Musique) and open-web tasks (GAIA, WebWalker)",
        ),
        assumed(
            "splits",
            "test: bamboogle; dev: hotpotqa, 2wikimultihopqa, musique",
            "the seed prints no split; Search-R1's for these four",
        ),
        from_paper(
            "metric",
            "em and f1 (plus Search Quality and Search Efficiency)",
            "004:198",
            "They measured Exact Match (EM), F1",
        ),
        from_paper(
            "scored_with",
            ["em", "f1", "perfect_rate", "partial_rate", "search_efficiency"],
            "004:198",
            "They measured Exact Match (EM), F1, Search Quality (how often all queries are high-quality or at least "
            "some are despite a wrong final answer), and Search Efficiency (how much correct info per search call)",
        ),
        from_paper(
            "retriever",
            "local Wikipedia dump (or a web API for open-web tasks)",
            "004:178",
            "Retrieval: Wikipedia dump (local) or web API (open web)",
        ),
        assumed("topk", 3, 'the seed says only "top-k snippets" (004:178)'),
        assumed("max_turns", 4, "the seed prints no action budget"),
        from_paper("models", "Qwen2.5-3B-Instruct", "004:176", "Base policy model: Qwen2.5-3B-Instruct."),
    ],
)
