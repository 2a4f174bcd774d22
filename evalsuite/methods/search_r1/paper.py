"""The evaluation setting of the search-r1 paper: benchmarks, splits, metric, retriever, top-k, max turns and the
evaluated models, each with its source (`agent.papers`: a quote of the seed, inherited from Search-R1, or assumed)."""

from __future__ import annotations

from evalsuite.agent.papers import PaperSetting, R1_SPLITS, R1_SPLITS_ORIGIN, from_search_r1

SETTING = PaperSetting(
    evaluation=[
        from_search_r1(
            "benchmarks",
            ["nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle"],
            "paper §4: seven QA datasets",
        ),
        from_search_r1("splits", R1_SPLITS, R1_SPLITS_ORIGIN),
        from_search_r1("metric", "em", "paper §4: exact match"),
        from_search_r1("scored_with", ["em"], "paper §4: exact match, FlashRAG's em"),
        from_search_r1("retriever", "E5 over the 2018 Wikipedia dump", "retrieval server of the repository"),
        from_search_r1("topk", 3, "train_grpo.sh: retriever.topk=3"),
        from_search_r1("max_turns", 4, "paper: action budget 4 (the public train_grpo.sh passes max_turns=2)"),
        from_search_r1("models", "Qwen2.5-3B/7B base and instruct", "paper §4"),
    ],
    named_retriever=("e5", "wiki18"),
)
