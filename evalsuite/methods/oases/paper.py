"""The evaluation setting of the oases paper: benchmarks, splits, metric, retriever, top-k, max turns and the
evaluated models, each with its source (`agent.papers`: a quote of the seed, inherited from Search-R1, or assumed)."""

from __future__ import annotations

from evalsuite.agent.papers import PaperSetting, assumed, from_paper

SETTING = PaperSetting(
    evaluation=[
        from_paper(
            "benchmarks",
            ["nq", "hotpotqa", "2wikimultihopqa", "bamboogle", "musique"],
            "003:23",
            "Method NQ HotpotQA 2Wiki Bamboogle MuSiQue",
        ),
        assumed(
            "splits",
            "test: nq, bamboogle; dev: hotpotqa, 2wikimultihopqa, musique",
            "the seed prints no split; Search-R1's for these five",
        ),
        from_paper("metric", "f1 and em", "003:24", "F1 EM F1 EM"),
        from_paper("scored_with", ["f1", "em"], "003:24", "F1 EM F1 EM"),
        assumed(
            "retriever",
            "E5 over the 2018 Wikipedia dump",
            "the seed names no retriever or corpus; Search-R1's, which its baselines use",
        ),
        assumed("topk", 3, "the seed prints no top-k"),
        assumed(
            "max_turns",
            4,
            'the main prompt mentions "a maximum limit on the number of search rounds" (003:77) without the number',
        ),
        from_paper(
            "models",
            "Qwen2.5-7B-Instruct (Table 1)",
            "003:31",
            "Table 1: Comprehensive QA benchmark results on Qwen2.5-7B-Instruct",
        ),
        from_paper(
            "models_smaller",
            "Qwen2.5-1.5B-Instruct, the only model group of its table of smaller models",
            "003:43",
            "Qwen2.5-1.5B-Instruct",
        ),
        from_paper(
            "models_base",
            "Qwen2.5 and Qwen3 base models of different sizes (Table 4)",
            "003:62",
            "Table 4: QA benchmark results on Qwen2.5 and Qwen3 base models with different model sizes.",
        ),
    ],
)
