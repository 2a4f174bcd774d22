"""Renderers: one table model printed as terminal (rich), Markdown, LaTeX (booktabs), CSV or HTML.

tabulate lays out the grid; the spanning column-group header and the row-group headers, which tabulate has no
notion of, are spliced into its output at fixed line positions.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Callable

from tabulate import tabulate

from evalsuite.console import FittedTable
from evalsuite.errors import EvalsuiteError
from evalsuite.tables.model import Cell, Table


def _align(table: Table) -> tuple[str, ...]:
    return ("left",) * len(table.lead_headers) + ("right",) * len(table.columns)


def _flat_headers(table: Table) -> list[str]:
    # Markdown and CSV have one header row: a group title prefixes its columns ("Multi-hop QA Average").
    return list(table.lead_headers) + [f"{g.title} {c.label}".strip() for g in table.column_groups for c in g.columns]


def _body(table: Table, cell_fn: Callable[[Cell], str], lead_fn: Callable[[str], str] = str) -> list[list[str]]:
    lines = []
    for row in table.rows:
        lead = [lead_fn(x) for x in row.lead]
        if row.mark and lead:
            lead[0] = lead[0] + lead_fn(row.mark)
        lines.append(lead + [cell_fn(row.cells[c.key]) if c.key in row.cells else "" for c in table.columns])
    return lines


def _group_starts(table: Table) -> dict[int, str]:
    """Body line index → title of the titled row group that starts there."""
    starts, index = {}, 0
    for group in table.row_groups:
        if group.title:
            starts[index] = group.title
        index += len(group.rows)
    return starts


# ---------------------------------------------------------------- Markdown


def _md_cell(cell: Cell) -> str:
    text = cell.text
    if cell.emphasis == "best":
        text = f"**{text}**"
    elif cell.emphasis == "second":
        text = f"<u>{text}</u>"
    return text + cell.marks + (f" {cell.detail}" if cell.detail else "")


def render_markdown(table: Table) -> str:
    """GitHub Markdown: best **bold**, second <u>underlined</u>, row groups as bold rows, footnotes below."""
    body = _body(table, _md_cell, lambda s: s.replace("|", "\\|"))
    width = len(table.lead_headers) + len(table.columns)
    for index, title in sorted(_group_starts(table).items(), reverse=True):
        body.insert(index, [f"**{title}**"] + [""] * (width - 1))
    grid = tabulate(body, headers=_flat_headers(table), tablefmt="pipe", colalign=_align(table), disable_numparse=True)
    parts = []
    if table.title or table.caption:
        parts.append(" ".join(x for x in (f"**{table.title}.**" if table.title else "", table.caption) if x))
    parts.append(grid)
    if table.footnotes:
        parts.append("\n".join(f"- {note}" for note in table.footnotes))
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------- LaTeX

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "†": r"$^{\dagger}$",
    "⋆": r"$^{\star}$",
    "∗": r"$^{*}$",
    "‡": r"$^{\ddagger}$",
    "§": r"$^{\S}$",
    "▲": r"$^{\blacktriangle}$",
    "×": r"$\times$",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "·": r"$\cdot$",
    "▼": r"$^{\blacktriangledown}$",
    "±": r"$\pm$",
    "Δ": r"$\Delta$",
    "–": "--",
    "−": "$-$",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX specials and map the table marks (†, ⋆, ▲, ...) to math superscripts."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _tex_cell(cell: Cell) -> str:
    text = latex_escape(cell.text)
    if cell.emphasis == "best":
        text = rf"\textbf{{{text}}}"
    elif cell.emphasis == "second":
        text = rf"\underline{{{text}}}"
    return text + latex_escape(cell.marks) + (f" {latex_escape(cell.detail)}" if cell.detail else "")


def _tex_group_header(table: Table) -> list[str]:
    cells, rules, col = [""] * len(table.lead_headers), [], len(table.lead_headers) + 1
    for group in table.column_groups:
        span = len(group.columns)
        cells.append(
            rf"\multicolumn{{{span}}}{{c}}{{{latex_escape(group.title)}}}" if span > 1 else latex_escape(group.title)
        )
        if group.title:
            rules.append(rf"\cmidrule(lr){{{col}-{col + span - 1}}}")
        col += span
    return [" & ".join(cells) + r" \\", " ".join(rules)]


def render_latex(table: Table) -> str:
    """A booktabs `table` environment (needs \\usepackage{booktabs,amssymb}); best \\textbf, second \\underline."""
    headers = [latex_escape(h) for h in table.lead_headers] + [latex_escape(c.label) for c in table.columns]
    body = _body(table, _tex_cell, latex_escape)
    grid = tabulate(body, headers=headers, tablefmt="latex_raw", colalign=_align(table), disable_numparse=True).split(
        "\n"
    )
    # tabulate's latex_raw grid: [begin, hline, header, hline, *rows, hline, end]
    begin, header, rows, end = grid[0], grid[2], grid[4:-2], grid[-1]
    width = len(headers)
    for index, title in sorted(_group_starts(table).items(), reverse=True):
        block = [rf"\multicolumn{{{width}}}{{l}}{{\textit{{{latex_escape(title)}}}}} \\"]
        rows[index:index] = ([r"\midrule"] if index else []) + block
    lines = [r"\begin{table}[t]", r"\centering"]
    if table.title or table.caption:
        lines.append(
            rf"\caption{{"
            f"{latex_escape(' '.join(x for x in (table.title + '.' if table.title else '', table.caption) if x))}}}"
        )
    lines += [begin, r"\toprule"]
    if table.has_column_groups:
        lines += [line for line in _tex_group_header(table) if line]
    lines += [header, r"\midrule", *rows, r"\bottomrule", end]
    if table.footnotes:
        lines.append(r"\par\smallskip\footnotesize " + r" \\ ".join(latex_escape(n) for n in table.footnotes))
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- HTML


def _html_cell(cell: Cell) -> str:
    text = html.escape(cell.text)
    if cell.emphasis == "best":
        text = f"<b>{text}</b>"
    elif cell.emphasis == "second":
        text = f"<u>{text}</u>"
    return text + html.escape(cell.marks) + (f" <small>{html.escape(cell.detail)}</small>" if cell.detail else "")


def render_html(table: Table) -> str:
    """An HTML <table> with a spanning group header, row-group rows, a caption and footnotes."""
    headers = [html.escape(h) for h in table.lead_headers] + [html.escape(c.label) for c in table.columns]
    grid = tabulate(
        _body(table, _html_cell, html.escape),
        headers=headers,
        tablefmt="unsafehtml",
        colalign=_align(table),
        disable_numparse=True,
    ).split("\n")
    # tabulate's unsafehtml grid: [<table>, <thead>, header row, </thead>, <tbody>, *rows, </tbody>, </table>]
    head, rows, tail = grid[:3], grid[5:-2], grid[-2:]
    width = len(headers)
    for index, title in sorted(_group_starts(table).items(), reverse=True):
        rows.insert(
            index,
            f'<tr class="row-group"><th colspan="{width}" style="text-align: left;">{html.escape(title)}</th></tr>',
        )
    if table.has_column_groups:
        spans = [f'<th colspan="{len(table.lead_headers)}"></th>'] if table.lead_headers else []
        spans += [f'<th colspan="{len(g.columns)}">{html.escape(g.title)}</th>' for g in table.column_groups]
        head.insert(2, "<tr>" + "".join(spans) + "</tr>")
    caption = " ".join(
        x for x in (f"<b>{html.escape(table.title)}.</b>" if table.title else "", html.escape(table.caption)) if x
    )
    if caption:
        head.insert(1, f"<caption>{caption}</caption>")
    parts = [*head, "</thead>", "<tbody>", *rows, *tail]
    if table.footnotes:
        parts.append(
            '<ul class="footnotes">' + "".join(f"<li>{html.escape(n)}</li>" for n in table.footnotes) + "</ul>"
        )
    return "\n".join(parts) + "\n"


# ---------------------------------------------------------------- CSV


def render_csv(table: Table) -> str:
    """Wide CSV: the row group, the lead cells, then one column per value column holding the printed number only."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["group", *_flat_headers(table)])
    for group in table.row_groups:
        for row in group.rows:
            writer.writerow(
                [group.title, *row.lead] + [row.cells[c.key].text if c.key in row.cells else "" for c in table.columns]
            )
    return out.getvalue()


# ---------------------------------------------------------------- terminal


def rich_table(table: Table):
    """The table as a rich renderable: bold best, underlined second, group titles over their first column."""
    from rich.markup import escape
    from rich.table import Table as RichTable

    title = " ".join(x for x in (table.title, table.caption) if x)
    rich = RichTable(
        title=escape(title) if title else None,
        caption=escape("\n".join(table.footnotes)) or None,
        caption_justify="left",
    )
    for header in table.lead_headers:
        rich.add_column(escape(header), justify="left")
    for group in table.column_groups:
        for i, column in enumerate(group.columns):
            top = group.title if i == 0 else ""
            rich.add_column(
                escape(f"{top}\n{column.label}" if table.has_column_groups else column.label), justify="right"
            )

    def cell(c: Cell) -> str:
        style = {"best": "bold", "second": "underline"}.get(c.emphasis)
        text = escape(c.text)
        return (
            (f"[{style}]{text}[/{style}]" if style else text)
            + escape(c.marks)
            + (f" {escape(c.detail)}" if c.detail else "")
        )

    body = _body(table, cell, escape)
    starts = _group_starts(table)
    for index, line in enumerate(body):
        if index in starts:
            if index:
                rich.add_section()
            rich.add_row(f"[bold]{escape(starts[index])}[/bold]", *[""] * (len(line) - 1))
        rich.add_row(*line)
    return FittedTable(rich)  # never a word cut or split: rows turn into blocks when the terminal is too narrow


def render_terminal(table: Table, width: int = 160) -> str:
    """The rich table as plain text (for files and tests; the CLI prints the renderable itself, with colour)."""
    from rich.console import Console

    console = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    console.print(rich_table(table))
    return console.export_text()


RENDERERS: dict[str, Callable[[Table], str]] = {
    "terminal": render_terminal,
    "markdown": render_markdown,
    "latex": render_latex,
    "csv": render_csv,
    "html": render_html,
}


def render(table: Table, fmt: str) -> str:
    """Render a table in one of RENDERERS' formats."""
    try:
        return RENDERERS[fmt](table)
    except KeyError:
        raise EvalsuiteError(f"unknown table format {fmt!r}", hint=f"choose one of {', '.join(RENDERERS)}") from None
