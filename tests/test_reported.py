"""The transcribed paper tables: they load, their averages re-derive, and their numbers are the seeds'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from evalsuite.errors import DataError, EvalsuiteError
from tests.conftest import require_seeds
from evalsuite.reported import (
    ReportedValue,
    reported_folders,
    list_reported,
    list_reported_notes,
    load_reported,
    load_reported_notes,
    parse_table_file,
)

KEYS = list_reported()

# Every printed average that is not exactly the rounded mean of its cells: (key, row, column, printed, recomputed).
# One last digit off ("rounding") is explained by averaging unrounded numbers; larger gaps are the paper's own errors.
AVERAGE_DISAGREEMENTS = {
    ("progress:table1", "Search-R1 (EM, FR)", "avg", 38.94, 38.57),  # 37 last digits off
    ("progress:table4", "Search-R1 [HotpotQA]", "avg", 36.31, 36.32),  # rounding
    ("oases:table4", "Qwen3-4B-Base", "avg.em", 11.73, 13.31),  # 158 last digits off
}

# Bamboogle has 125 questions: a per-question binary score over all of them is a multiple of 1/125.
# These printed cells are not, so they are not one run over the full set: (key, row, column).
BAMBOOGLE_OFF_GRID = {
    ("oases:table3", "Search-R1", "bamboogle.em"),
    ("subsearch:table4", "SubSearch-base", "bamboogle"),
    ("subsearch:table4", "SubSearch-instruct", "bamboogle"),
}


def _raw(key: str) -> dict:
    paper, stem = key.split(":")
    return yaml.safe_load((reported_folders()[paper] / f"{stem}.yaml").read_text(encoding="utf-8"))


def _seed_tokens(source: str) -> list[str]:
    """Whitespace tokens of the seed lines a table's `seed_lines` names ('F.txt, lines A-B')."""
    m = re.fullmatch(r"(\S+\.txt), lines (\d+)-(\d+)", source)
    assert m, f"seed_lines {source!r} must read '<file>.txt, lines A-B'"
    lines = (require_seeds() / m[1]).read_text(encoding="utf-8").splitlines()[int(m[2]) - 1 : int(m[3])]
    return " ".join(lines).split()


def _unmarked(token: str) -> str:
    return token.removeprefix("**").removesuffix("**").removeprefix("__").removesuffix("__")


def test_expected_tables_are_transcribed():
    assert KEYS == [
        "oases:table1", "oases:table3", "oases:table4", "oases:table5",
        "progress:table1", "progress:table2", "progress:table3", "progress:table4", "progress:table5",
        "subsearch:table4",
    ]
    assert list_reported_notes() == ["search-p1", "smartsearch", "subsearch"]


@pytest.mark.parametrize("key", KEYS)
def test_table_loads_with_a_cell_for_every_row_and_column(key):
    table = load_reported(key)
    labels = [r for _, rows in table.row_groups for r in rows]
    columns = [c for _, cols in table.column_groups for c in cols]
    assert set(table.cells) == {(r, c) for r in labels for c in columns}
    assert len(table.long_rows()) == len(labels) * len(columns)
    assert set(table.column_labels) == set(columns)


@pytest.mark.parametrize("key", KEYS)
def test_every_row_is_printed_in_the_seed_in_the_same_order(key):
    raw = _raw(key)
    seed = _seed_tokens(raw["seed_lines"])
    for group in raw["row_groups"]:
        for row in group["rows"]:
            wanted = [_unmarked(t) for t in row["cells"].split()]
            found = any(seed[i : i + len(wanted)] == wanted for i in range(len(seed) - len(wanted) + 1))
            assert found, f"{key} row {row['label']!r}: {' '.join(wanted)} is not a run of tokens in the seed"


def test_printed_averages_match_their_cells_except_the_listed_disagreements():
    found = {
        (c.key, c.row, c.column, c.printed, c.recomputed)
        for key in KEYS
        for c in load_reported(key).check_averages()
        if c.kind != "exact"
    }
    assert found == AVERAGE_DISAGREEMENTS


def test_averages_are_checked_for_every_average_cell():
    assert len(load_reported("progress:table1").check_averages()) == 9 * 2
    assert len(load_reported("oases:table3").check_averages()) == 4 * 2
    assert load_reported("subsearch:table4").check_averages() == []


def test_bamboogle_binary_scores_off_the_125_question_grid_are_the_listed_ones():
    off = set()
    for key in KEYS:
        t = load_reported(key)
        for (row, col), cell in t.cells.items():
            c = t.columns[col]
            if c.dataset != "bamboogle" or c.metric != "em" or cell.value is None:
                continue
            per_question = 100 / 125 if t.scale == "percent" else 1 / 125
            count = cell.value / per_question
            if abs(count - round(count)) > 1e-6:
                off.add((key, row, col))
    assert off == BAMBOOGLE_OFF_GRID


def test_progress_table1_pinned_cells():
    t = load_reported("progress:table1")
    assert t.cells[("Progress", "musique")] == ReportedValue(16.01, "⋆", printed="16.01")
    assert t.cells[("Direct Inference", "nq")] == ReportedValue(10.6, "†", printed="10.60")
    assert t.cells[("Search-R1 (EM, FR)", "triviaqa")].value == 58.48
    assert t.cells[("Zero-search", "avg")].printed == "38.47"
    assert t.rows["RAG"].train_set is None and t.rows["R1"].train_set == "NQ, HotpotQA"
    assert t.column_groups[0] == ("General QA", ["nq", "triviaqa", "popqa"])
    assert t.column_labels["2wikimultihopqa"] == "2Wiki⋆"


def test_progress_combined_average_of_search_r1_em_fr_is_not_its_cells_mean():
    # 42.90+58.48+44.09+36.04+36.23+13.65 = 231.39; /6 = 38.565 -> 38.57, but the paper prints 38.94.
    (check,) = [c for c in load_reported("progress:table1").check_averages()
                if c.row == "Search-R1 (EM, FR)" and c.column == "avg"]
    assert (check.printed, check.recomputed, check.ulps, check.kind) == (38.94, 38.57, 37, "disagrees")


def test_progress_table2_repeats_table1_search_r1_em_fr_multihop_cells():
    t1, t2 = load_reported("progress:table1"), load_reported("progress:table2")
    for col in ["hotpotqa", "2wikimultihopqa", "musique"]:
        assert t2.cells[("Search-R1 [NQ, HotpotQA]", col)].printed == t1.cells[("Search-R1 (EM, FR)", col)].printed
    assert t2.cells[("Search-R1 [NQ, HotpotQA]", "avg")].printed == t1.cells[("Search-R1 (EM, FR)", "avg_multihop")].printed


def test_progress_tables_2_to_5_pinned_cells():
    t2 = load_reported("progress:table2")
    assert t2.cells[("Progress [HotpotQA]", "musique")].value == 18.57
    assert (t2.rows["Search-R1 [HotpotQA]"].method, t2.rows["Search-R1 [HotpotQA]"].train_set) == ("Search-R1", "HotpotQA")
    t3 = load_reported("progress:table3")
    assert t3.row_groups == [("2wiki", ["2wiki / Search-R1", "2wiki / Progress"]),
                             ("MuSiQue", ["MuSiQue / Search-R1", "MuSiQue / Progress"])]
    assert t3.cells[("MuSiQue / Progress", "granularity")].value == 64.38
    long3 = {(r.dataset, r.method, r.metric): r.value for r in t3.long_rows()}
    assert long3[("2wikimultihopqa", "Search-R1", "completeness")] == 29.77
    t4 = load_reported("progress:table4")
    assert t4.metric == "retrieval_hit" and t4.cells[("Progress [NQ + HotpotQA]", "hotpotqa")].value == 55.54
    t5 = load_reported("progress:table5")
    assert t5.rows["Progress"].model == "Qwen2.5-1.5B-Base" and t5.cells[("Progress", "avg")].printed == "19.58"


def test_oases_tables_pinned_cells():
    t1 = load_reported("oases:table1")
    assert t1.row_groups == [("Standard", ["Direct LLM", "Naive RAG"]), ("Agentic Search", ["Search-o1"])]
    assert t1.cells[("Naive RAG", "musique.f1")].value == 9.32
    assert t1.cells[("Search-o1", "avg.em")].printed == "24.16"
    assert t1.column_groups[5] == ("Avg.", ["avg.f1", "avg.em"])
    assert t1.column_labels["bamboogle.em"] == "EM"
    rec = [r for r in t1.long_rows() if r.method == "Direct LLM" and r.column == "2wikimultihopqa.f1"]
    assert [(r.dataset, r.metric, r.value) for r in rec] == [("2wikimultihopqa", "f1", 25.8)]
    t3 = load_reported("oases:table3")
    assert t3.cells[("OASES (Ours)", "hotpotqa.em")].value == 38.69 and t3.rows["OASES (Ours)"].method == "OASES"
    t4 = load_reported("oases:table4")
    assert t4.rows["Qwen3-8B-Base"].model == "Qwen3-8B-Base" and t4.cells[("Qwen3-8B-Base", "bamboogle.em")].value == 49.6


def test_oases_table5_components_add_up_to_the_total():
    t = load_reported("oases:table5")
    v = {k: cell.value for k, cell in t.cells.items()}
    assert t.cells[("Search rollout", "token_share")] == ReportedValue(85.06, printed="85.06")
    assert t.cells[("Total", "tokens_per_rollout")].value is None
    for row in ["Search rollout", "State-evaluation rollouts"]:
        per_query = v[(row, "rollouts_per_query")] * v[(row, "tokens_per_rollout")]
        assert round(per_query, 2) == v[(row, "tokens_per_query")]
        assert round(100 * v[(row, "tokens_per_query")] / v[("Total", "tokens_per_query")], 2) == v[(row, "token_share")]
    for col in ["rollouts_per_query", "tokens_per_query", "token_share"]:
        total = v[("Search rollout", col)] + v[("State-evaluation rollouts", col)]
        assert round(total, 2) == v[("Total", col)]


def test_subsearch_table4_pinned_cells():
    t = load_reported("subsearch:table4")
    assert t.scale == "fraction"
    assert t.cells[("SubSearch-base", "nq")] == ReportedValue(0.463, "†", printed="0.463")
    assert t.cells[("SubSearch-instruct", "musique")] == ReportedValue(0.11, "∗", printed="0.110")
    assert t.column_labels["bamboogle"] == "Bamboogle ∗"


@pytest.mark.parametrize("paper", list_reported_notes())
def test_every_claim_is_quoted_verbatim_from_its_seed_line(paper):
    notes = load_reported_notes(paper)
    lines = (require_seeds() / notes.seed_lines).read_text(encoding="utf-8").splitlines()
    assert notes.claims
    for claim in notes.claims:
        assert claim.quote in lines[claim.line - 1], f"{paper}: quote not on seed line {claim.line}"
        for value in claim.values:
            assert value in claim.quote


def test_search_p1_headline_deltas():
    claims = load_reported_notes("search-p1").claims
    by_line = {c.line: c.values for c in claims}
    assert by_line[70] == ["7.7", "7.9", "20.6"]
    assert by_line[72] == ["5.3", "3.1"]


def test_unknown_notes_paper_suggests_the_closest():
    with pytest.raises(EvalsuiteError) as err:
        load_reported_notes("search_p1")
    assert "search-p1" in err.value.hint


def test_unknown_dataset_is_an_error_listing_the_task_names(tmp_path):
    body = _HEADER.replace("dataset: nq}", "dataset: nq_open}") + '      - {label: A, cells: "1.0 1.0"}\n'
    with pytest.raises(DataError, match=r"column_groups.0.columns.0: dataset 'nq_open' is not an evalsuite task"):
        parse_table_file(_write(tmp_path, body))


def test_unknown_key_suggests_the_closest():
    with pytest.raises(EvalsuiteError) as err:
        load_reported("progress:tabel1")
    assert "progress:table1" in err.value.hint


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "demo" / "t1.yaml"
    path.parent.mkdir()
    path.write_text(body, encoding="utf-8")
    return path


_HEADER = """paper: demo
table: 1
caption: c
metric: em
paper_title: Demo
seed_lines: s
column_groups:
  - columns:
      - {key: nq, label: NQ, dataset: nq}
      - {key: avg, label: Avg, average_of: [nq]}
row_groups:
  - rows:
"""


def test_wrong_cell_count_names_file_row_and_columns(tmp_path):
    path = _write(tmp_path, _HEADER + '      - {label: A, cells: "1.0"}\n')
    with pytest.raises(DataError, match=r"t1.yaml: row_groups.0.rows.0 \('A'\): 1 cells for 2 columns"):
        parse_table_file(path)


def test_unquoted_numbers_are_rejected_because_yaml_drops_trailing_zeros(tmp_path):
    path = _write(tmp_path, _HEADER + "      - {label: A, cells: 1.10}\n")
    with pytest.raises(DataError, match=r"row_groups.0.rows.0.cells"):
        parse_table_file(path)


def test_cell_tokens_carry_emphasis_marks_and_missing_values(tmp_path):
    path = _write(tmp_path, _HEADER + '      - {label: A, cells: "**__36.40†__** -"}\n')
    t = parse_table_file(path)
    assert t.cells[("A", "nq")] == ReportedValue(36.4, "†", bold=True, underline=True, printed="36.40")
    assert t.cells[("A", "avg")].value is None
    assert t.check_averages() == []


def test_unreadable_cell_is_an_error_naming_the_column(tmp_path):
    path = _write(tmp_path, _HEADER + '      - {label: A, cells: "1.0 abc"}\n')
    with pytest.raises(DataError, match=r"column 'avg': cannot read cell 'abc'"):
        parse_table_file(path)
