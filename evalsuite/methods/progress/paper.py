"""The evaluation setting of the progress paper: benchmarks, splits, metric, retriever, top-k, max turns and the
evaluated models, each with its source (`agent.papers`: a quote of the seed, inherited from Search-R1, or assumed)."""

from __future__ import annotations

from evalsuite.agent.papers import FOLLOWS_R1, PaperSetting, R1_SPLITS, R1_SPLITS_ORIGIN, from_paper, inherited

SETTING = PaperSetting(
    evaluation=[
        from_paper(
            "benchmarks",
            ["nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique"],
            "000:86",
            "trained on NQ and HotpotQA datasets unless otherwise mentioned, and evaluated across all datasets",
        ),
        inherited("splits", R1_SPLITS, *FOLLOWS_R1, R1_SPLITS_ORIGIN),
        from_paper("metric", "em", "000:104", "Exact Match (EM) is used as the evaluation metric."),
        from_paper("scored_with", ["em"], "000:104", "Exact Match (EM) is used as the evaluation metric."),
        from_paper(
            "retriever",
            "E5 over the 2018 Wikipedia dump",
            "000:88",
            "we use the 2018 Wikipedia dump [karpukhin2020dense] as the "
            "knowledge source and E5 [wang2022text] as the retriever",
        ),
        from_paper(
            "topk", 3, "000:88", "The search environment retrieves the top-$3$ passages for each generated query"
        ),
        inherited("max_turns", 4, *FOLLOWS_R1, "the paper's action budget 4"),
        from_paper(
            "models",
            "Qwen2.5-3B (Base)",
            "000:88",
            "we use Qwen2.5-3B (Base) as the policy model across all experiments",
        ),
        from_paper(
            "models_generalisation",
            "Qwen2.5-1.5B base (Table 5)",
            "000:122",
            "Table 5: Performance comparison for QA task on multi-hop QA datasets using Qwen2.5-1.5B base model.",
        ),
    ],
    named_retriever=("e5", "wiki18"),
)
