"""SmartSearch's usefulness evaluator during training (seeds/004, Dual-Level Credit Assessment): a judge panel reads
the question, the gold answer, the earlier searches and the current query with its documents, and says whether the
query was necessary and its results address it. The same prompt (`prompts.USEFULNESS`) and cache as `evalsuite
judge`, so a training run and a later evaluation of the same turn share verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evalsuite.errors import EvalsuiteError
from evalsuite.runs.schema import Turn


class PanelUsefulnessJudge:
    """`SmartSearch(judge=...)`: (question, earlier turns, turn) → (useful by majority vote, the judges' rationales)."""

    def __init__(
        self, panel_file: str | Path, golds: Mapping[str, Sequence[str]], cache_path: str | Path | None = None
    ):
        from evalsuite.judges import load_panel
        from evalsuite.judges.evaluate import default_cache_path

        self.config = load_panel(panel_file)
        self.golds = golds
        self.cache_path = Path(cache_path) if cache_path else default_cache_path()

    def __call__(self, question: str, history: Sequence[Turn], turn: Turn) -> tuple[bool, str]:
        from evalsuite.judges import majority_vote, run_panel
        from evalsuite.judges.evaluate import usefulness_values
        from evalsuite.judges.panel import JudgeRequest
        from evalsuite.judges.prompts import USEFULNESS

        golds = self.golds.get(question)
        if golds is None:
            raise EvalsuiteError(f"no golden answers for {question[:80]!r}: the usefulness judge reads the gold answer")
        values = usefulness_values(question, golds, [*history, turn], len(history))
        judgments, _ = run_panel(
            self.config, self.cache_path, [JudgeRequest("train", "train", "usefulness", "q", USEFULNESS, values)]
        )
        verdict = majority_vote([j.verdict for j in judgments])
        return verdict is True, " ".join(j.rationale for j in judgments if j.rationale)
