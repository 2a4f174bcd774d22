"""The transcribed paper tables: they load, their averages re-derive, and their numbers are the seeds'."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.reported import ReportedValue, default_root, list_reported, load_reported, parse_table_file

SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
KEYS = list_reported()

# Every printed average that is not exactly the rounded mean of its cells: (key, row, column, printed, recomputed).
# One last digit off ("rounding") is explained by averaging unrounded numbers; larger gaps are the paper's own errors.
AVERAGE_DISAGREEMENTS = {
    ("progress:table1", "Search-R1 (EM, FR)", "avg", 38.94, 38.57),
}


def _raw(key: str) -> dict:
    paper, stem = key.split(":")
    return yaml.safe_load((default_root() / paper / f"{stem}.yaml").read_text(encoding="utf-8"))


def _seed_tokens(source: str) -> list[str]:
    name = re.match(r"shared/seeds/(\S+\.txt)", source)
    assert name, f"source {source!r} must start with shared/seeds/<file>.txt"
    return (SEEDS / name[1]).read_text(encoding="utf-8").split()


def _unmarked(token: str) -> str:
    return token.removeprefix("**").removesuffix("**").removeprefix("__").removesuffix("__")


def test_expected_tables_are_transcribed():
    assert {"progress:table1"} <= set(KEYS)


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
    seed = _seed_tokens(raw["source"])
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
    table = load_reported("progress:table1")
    assert len(table.check_averages()) == 9 * 2


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
source: s
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
