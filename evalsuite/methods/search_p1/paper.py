"""The evaluation setting of the search-p1 paper: benchmarks, splits, metric, retriever, top-k, max turns and the
evaluated models, each with its source (`agent.papers`: a quote of the seed, inherited from Search-R1, or assumed)."""

from __future__ import annotations

from evalsuite.agent.papers import PaperSetting, assumed, from_paper

SETTING = PaperSetting(
    evaluation=[
        assumed(
            "benchmarks",
            ["nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle", "adqa"],
            'the seed says only "seven public QA benchmarks spanning general and multi-hop QA, plus the internal '
            'AD-QA dataset" '
            "(002:69) without naming them; the seven of Search-R1, the baseline it reports its gains over (002:70), "
            "and "
            "`adqa`, our open AD-QA-style stand-in for the internal set, which is not released",
        ),
        assumed(
            "splits",
            "test: nq, triviaqa, popqa, bamboogle, adqa; dev: hotpotqa, 2wikimultihopqa, musique",
            "the summary names no split; AD-QA is its 1,000 test instances (002:103)",
        ),
        from_paper("metric", "accuracy", "002:69", "using Accuracy as the primary metric"),
        assumed(
            "scored_with",
            ["cover_em"],
            'the seed names "Accuracy" (002:69) and defines it nowhere; cover-EM (a normalized gold answer contained '
            "in "
            "the normalized prediction) is the `acc` of FlashRAG, whose benchmark files and Search-R1 baseline the "
            'comparison uses. Not an LLM judge: its evaluator is described for training ("The evaluator is used during '
            'training", 002:82), not for scoring the benchmarks. EM and F1 are scored beside it',
        ),
        from_paper("retriever", "E5 over Wikipedia", "002:69", "with Wikipedia retrieval and E5"),
        from_paper("topk", 3, "002:128", "Retrieving three documents per search achieves the best average performance"),
        assumed(
            "max_turns",
            4,
            'the seed says only "until the action budget is exhausted" (002:116) without the number; Search-R1\'s 4',
        ),
        from_paper(
            "models",
            "Qwen2.5-7B-Instruct and Qwen2.5-3B-Instruct",
            "002:69",
            "Experiments use Qwen2.5-7B-Instruct and Qwen2.5-3B-Instruct",
        ),
    ],
    named_retriever=("e5", None),
)
