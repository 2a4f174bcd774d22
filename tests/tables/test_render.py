"""Renderers on a small hand-built table: groups, emphasis, marks and escaping in every format."""

from __future__ import annotations

import csv
import io

import pytest

from evalsuite.errors import EvalsuiteError
from evalsuite.tables import Cell, Column, ColumnGroup, Row, RowGroup, Table, mark_best, render


def _table() -> Table:
    def row(name, a, b, mark=""):
        return Row([name], {"a": Cell(f"{a:.1f}", a), "b": Cell(f"{b:.1f}", b, "▲")}, mark)

    return Table(
        title="T", lead_headers=["Method"], caption="A & B",
        column_groups=[ColumnGroup("Group_1", [Column("a", "A%"), Column("b", "B†")])],
        row_groups=[RowGroup("", [row("x", 1.0, 5.0)]), RowGroup("Tuned", [row("y", 3.0, 5.0, "§"), row("z", 2.0, 4.0)])],
        footnotes=["note 1"],
    )


def test_best_and_second_with_ties():
    table = _table()
    mark_best(table)
    a = [r.cells["a"].emphasis for r in table.rows]
    b = [r.cells["b"].emphasis for r in table.rows]
    assert a == ["", "best", "second"]
    assert b == ["best", "best", "second"]  # 5.0 is tied for best; 4.0 is the next value


def test_lower_is_better_columns_rank_ascending():
    table = _table()
    table.column_groups[0].columns[0].higher_is_better = False
    mark_best(table)
    assert [r.cells["a"].emphasis for r in table.rows] == ["best", "", "second"]


def test_markdown():
    table = _table()
    mark_best(table)
    assert render(table, "markdown") == (
        "**T.** A & B\n\n"
        "| Method    |   Group_1 A% |   Group_1 B† |\n"
        "|:----------|-------------:|-------------:|\n"
        "| x         |          1.0 |     **5.0**▲ |\n"
        "| **Tuned** |              |              |\n"
        "| y§        |      **3.0** |     **5.0**▲ |\n"
        "| z         |   <u>2.0</u> |  <u>4.0</u>▲ |\n\n"
        "- note 1\n"
    )


def test_latex_escapes_and_marks():
    table = _table()
    mark_best(table)
    tex = render(table, "latex")
    assert r"\caption{T. A \& B}" in tex
    assert r"\multicolumn{2}{c}{Group\_1} \\" in tex
    assert r"\cmidrule(lr){2-3}" in tex
    assert r"A\%" in tex and r"B$^{\dagger}$" in tex
    assert r"\textbf{5.0}$^{\blacktriangle}$" in tex
    assert "y$^{\\S}$" in tex
    assert "\\midrule\n\\multicolumn{3}{l}{\\textit{Tuned}} \\\\" in tex


def test_html_escapes_and_spans():
    html = render(_table(), "html")
    assert "<caption><b>T.</b> A &amp; B</caption>" in html
    assert '<tr><th colspan="1"></th><th colspan="2">Group_1</th></tr>' in html
    assert '<tr class="row-group"><th colspan="3" style="text-align: left;">Tuned</th></tr>' in html
    assert '<ul class="footnotes"><li>note 1</li></ul>' in html


def test_csv_is_numbers_with_row_groups():
    rows = list(csv.reader(io.StringIO(render(_table(), "csv"))))
    assert rows == [["group", "Method", "Group_1 A%", "Group_1 B†"], ["", "x", "1.0", "5.0"], ["Tuned", "y", "3.0", "5.0"],
                    ["Tuned", "z", "2.0", "4.0"]]


def test_terminal_shows_groups_and_footnotes():
    text = render(_table(), "terminal")
    assert "Group_1" in text and "Tuned" in text and "y§" in text and "note 1" in text and "5.0▲" in text


def test_unknown_format():
    with pytest.raises(EvalsuiteError, match="unknown table format 'docx'"):
        render(_table(), "docx")


def test_latex_maps_symbols_pdflatex_lacks():
    from evalsuite.tables.render import latex_escape

    assert latex_escape("p ≤ 0.05, ×100, A–B, 50%") == r"p $\leq$ 0.05, $\times$100, A--B, 50\%"
