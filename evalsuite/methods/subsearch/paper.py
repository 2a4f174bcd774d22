"""The evaluation setting of the subsearch paper: benchmarks, splits, metric, retriever, top-k, max turns and the
evaluated models, each with its source (`agent.papers`: a quote of the seed, inherited from Search-R1, or assumed)."""

from __future__ import annotations

from evalsuite.agent.papers import PaperSetting, R1_SPLITS, assumed, from_paper

SETTING = PaperSetting(
    evaluation=[
        from_paper(
            "benchmarks",
            ["nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle"],
            "001:1",
            "Experiments on seven benchmarks show",
        ),
        assumed(
            "splits",
            R1_SPLITS,
            "the seed names the seven benchmarks (Table 4's header, 001:13-19) but no split; "
            "these are the splits those datasets are commonly evaluated on (Search-R1's)",
        ),
        assumed(
            "metric",
            "em",
            "Table 4 (evalsuite/methods/subsearch/reported/table4.yaml; the seed prints no cell of Table 3) prints "
            'fractions such as 0.463 without naming the metric; Figure 4 trains with "EM as reward" (001:41)',
        ),
        assumed("scored_with", ["em"], "the metric the seed leaves unnamed, read as EM (above)"),
        assumed(
            "retriever",
            "E5 over the 2018 Wikipedia dump",
            'the seed names no retriever; its case studies show wiki-18 style "Doc 1(Title: ...)" passages',
        ),
        assumed("topk", 3, "the seed prints no top-k; its case studies show 3 documents per search (Doc 1-3)"),
        assumed("max_turns", 4, 'the seed prints no action budget ("You can search as many times as you want")'),
        from_paper("models", "Qwen2.5-3B base", "001:36", "Training Progress of Qwen2.5-3B-base"),
        assumed(
            "models_instruct",
            "Qwen2.5-3B-Instruct",
            'Table 4 has a "SubSearch- instruct" row (001:27) without naming its model; the '
            "3B instruct model, as the base row's backbone is Qwen2.5-3B-base (001:36)",
        ),
    ],
)
