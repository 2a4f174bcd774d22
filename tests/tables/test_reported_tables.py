"""`evalsuite table --reported KEY` prints each transcribed paper table with every number as the paper printed it."""

from __future__ import annotations

import csv
import io
import re

import pytest

from evalsuite.reported import list_reported, load_reported
from tests.conftest import require_seeds
from evalsuite.tables import render, table_from_reported



def _markdown_rows(text: str) -> list[list[str]]:
    """Body rows of the first pipe table, cells stripped of emphasis markup."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    rows = []
    for line in lines[2:]:
        cells = [re.sub(r"\*\*|</?u>", "", c).strip() for c in line.strip("|").split("|")]
        rows.append(cells)
    return rows


def _printed_rows(key: str) -> list[list[str]]:
    table = load_reported(key)
    keys = [k for _, ks in table.column_groups for k in ks]
    rows = []
    for _, labels in table.row_groups:
        for label in labels:
            rows.append([table.cells[(label, k)].printed + (table.columns[k].unit if table.cells[(label, k)].value is not None else "")
                         + _own_marks(table, label, k) for k in keys])
    return rows


def _own_marks(table, label, key) -> str:
    marks, column = table.cells[(label, key)].marks, table.columns[key].marks
    return marks[len(column):] if marks.startswith(column) else marks


@pytest.mark.parametrize("key", list_reported())
def test_markdown_prints_every_transcribed_number(key, cli):
    result = cli("table", "--reported", key, "--format", "markdown")
    assert result.exit_code == 0
    table = load_reported(key)
    lead = 1 + (len(_markdown_rows(result.output)[0]) - 1 - len(table.columns))
    body = [row for row in _markdown_rows(result.output) if any(cell for cell in row[1:])]
    assert [row[lead:] for row in body] == _printed_rows(key)


def test_progress_table1_equals_the_seed_text(cli):
    # Independent of the transcription: each printed row of the seed's Table 1 reappears cell for cell.
    seed = (require_seeds() / "000_3eb2e7720ac63a45.txt").read_text().splitlines()[46:55]
    result = cli("table", "--reported", "progress:table1", "--format", "markdown")
    body = _markdown_rows(result.output)
    assert len(body) == len(seed) == 9
    for ours, printed in zip(body, seed):
        assert ours == [c.strip() for c in printed.split("\t")]


def test_progress_table1_layout_groups_and_marks(cli):
    text = cli("table", "--reported", "progress:table1", "--format", "markdown").output
    header = next(line for line in text.splitlines() if line.startswith("| Method"))
    assert [h.strip() for h in header.strip("|").split("|")] == [
        "Method", "Trainset", "General QA NQ†", "General QA TriviaQA⋆", "General QA PopQA⋆", "Multi-hop QA HotpotQA†",
        "Multi-hop QA 2Wiki⋆", "Multi-hop QA MuSiQue⋆", "Multi-hop QA Average", "Combined QA Average",
    ]
    # best bold and second underlined per column, recomputed from the printed cells
    assert "| Progress           | NQ, HotpotQA |        **43.82** |           <u>59.52</u> |" in text
    assert "| Zero-search        | NQ, HotpotQA |     <u>43.00</u> |              **61.60** |" in text


def test_latex_has_booktabs_spanning_headers_and_emphasis():
    tex = render(table_from_reported(load_reported("progress:table1")), "latex")
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex and r"\hline" not in tex
    assert r"\multicolumn{3}{c}{General QA} & \multicolumn{3}{c}{Multi-hop QA} & Multi-hop QA & Combined QA \\" in tex
    assert r"\cmidrule(lr){3-5} \cmidrule(lr){6-8}" in tex
    assert r"NQ$^{\dagger}$" in tex and r"TriviaQA$^{\star}$" in tex
    assert r"\textbf{43.82}" in tex and r"\underline{43.00}" in tex


def test_csv_holds_the_printed_numbers():
    text = render(table_from_reported(load_reported("progress:table1")), "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:4] == ["group", "Method", "Trainset", "General QA NQ†"]
    assert rows[-1] == ["", "Progress", "NQ, HotpotQA", "43.82", "59.52", "44.39", "36.45", "38.12", "16.01", "30.19", "39.72"]


def test_html_spans_column_groups_and_row_groups():
    html = render(table_from_reported(load_reported("oases:table1")), "html")
    assert '<th colspan="2">NQ</th>' in html and '<th colspan="2">Avg.</th>' in html
    assert '<tr class="row-group"><th colspan="13" style="text-align: left;">Agentic Search</th></tr>' in html


def test_rows_grouped_by_dataset_rank_within_their_group():
    table = table_from_reported(load_reported("progress:table3"))
    cells = {(g.title, r.lead[0]): r.cells["completeness"] for g in table.row_groups for r in g.rows}
    assert cells[("MuSiQue", "Progress")].emphasis == "best"  # 24.88 is best among MuSiQue rows, not overall
    assert cells[("2wiki", "Search-R1")].emphasis == "second"
    assert table.lead_headers == ["Method"]


def test_raw_tables_get_no_emphasis_and_keep_units():
    table = table_from_reported(load_reported("oases:table5"))
    assert all(c.emphasis == "" for r in table.rows for c in r.cells.values())
    assert [c.text for c in table.rows[0].cells.values()] == ["1.00", "1041.76", "1041.76", "85.06%"]
    assert table.rows[2].cells["tokens_per_rollout"].text == "–"


def test_repeated_methods_print_method_and_train_set():
    table = table_from_reported(load_reported("progress:table2"))
    assert [r.lead for r in table.rows] == [["Search-R1", "NQ, HotpotQA"], ["Search-R1", "HotpotQA"], ["Progress", "HotpotQA"]]


def test_reported_and_runs_together_is_an_error(tmp_path, cli):
    from evalsuite.errors import EvalsuiteError

    with pytest.raises(EvalsuiteError, match="either --reported or run directories"):
        cli("table", str(tmp_path), "--reported", "progress:table1")
