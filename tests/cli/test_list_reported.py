"""`evalsuite table --list-reported`: each transcribed table with its paper, number and what it shows."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from evalsuite.cli import app
from evalsuite.cli.table import reported_summary


def test_the_first_sentence_of_a_caption_says_what_a_table_shows():
    assert reported_summary("Comprehensive QA results on Qwen2.5-7B-Instruct. Bold indicates the best.") == "Comprehensive QA results on Qwen2.5-7B-Instruct."
    assert reported_summary("Ablation of the reward") == "Ablation of the reward."


def test_the_list_names_each_tables_paper_and_what_it_shows():
    result = CliRunner().invoke(app, ["table", "--list-reported"])  # not a terminal: Markdown, every cell whole
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.startswith("| oases:table1 "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells == ["oases:table1", "OASES: Outcome-Aligned Search-Evaluation Co-Training for Agentic Search, Table 1",
                     "Comprehensive QA benchmark results on Qwen2.5-7B-Instruct."]
    listing = json.loads(CliRunner().invoke(app, ["table", "--list-reported", "--json"]).output)
    assert "progress:table1" in listing["reported"] and listing["tables"][0]["title"].startswith("OASES: ")
