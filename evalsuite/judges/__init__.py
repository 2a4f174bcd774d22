"""LLM judges: OpenAI-compatible clients, panels with majority vote, a SQLite cache, prompts and cost accounting."""

from evalsuite.judges.config import JudgeConfig, PanelConfig, load_panel
from evalsuite.judges.panel import Judgment, JudgeRequest, Panel, majority_vote, run_panel
from evalsuite.judges.verdict import Verdict, parse_query_list, parse_verdict

__all__ = [
    "JudgeConfig",
    "JudgeRequest",
    "Judgment",
    "Panel",
    "PanelConfig",
    "Verdict",
    "load_panel",
    "majority_vote",
    "parse_query_list",
    "parse_verdict",
    "run_panel",
]
