"""Task registry, loaders (every error message), question normalization and subsets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.tasks import apply_subset, get_task, list_tasks, load_split, normalize_question, parse_subset, register_task
from evalsuite.tasks.registry import Task
from evalsuite.tasks.subset import ids_hash

PUBLIC = ["nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle"]


def test_registry_has_the_seven_public_tasks_with_search_r1_splits() -> None:
    names = [t.name for t in list_tasks()]
    assert set(PUBLIC) <= set(names)
    splits = {name: get_task(name).eval_split for name in PUBLIC}
    assert splits == {"nq": "test", "triviaqa": "test", "popqa": "test", "hotpotqa": "dev", "2wikimultihopqa": "dev", "musique": "dev", "bamboogle": "test"}
    assert {t for t in PUBLIC if get_task(t).in_domain} == {"nq", "hotpotqa"}
    assert {t for t in PUBLIC if get_task(t).category == "general"} == {"nq", "triviaqa", "popqa"}
    assert get_task("musique").hub_config == "musique"


def test_unknown_task_suggests_the_closest_name() -> None:
    with pytest.raises(EvalsuiteError) as info:
        get_task("hotpotq")
    assert "did you mean hotpotqa" in str(info.value)


def test_registering_a_task_is_one_declaration() -> None:
    from evalsuite.tasks.registry import scratch_registry

    with scratch_registry():  # forgotten after the test: later tests list the shipped tasks only
        task = register_task(Task("toyqa_test_only", "ToyQA", "general", "test", hub_path=None))
        assert get_task("toyqa_test_only") is task


def test_every_shared_benchmark_file_loads(benchmarks_dir: Path) -> None:
    files = sorted(benchmarks_dir.glob("*.jsonl"))
    assert len(files) == 15
    for path in files:
        task, split = path.name[: -len(".jsonl")].split(".", 1)
        loaded = load_split(task, split, data_dir=benchmarks_dir)
        assert len(loaded.rows) > 0
        assert all(row.question.endswith("?") for row in loaded.rows)
        assert all(isinstance(g, str) for row in loaded.rows for g in row.golden_answers)
        assert loaded.source_hash and len(loaded.source_hash) == 64


def test_eval_split_row_counts(benchmarks_dir: Path) -> None:
    counts = {name: len(load_split(name, data_dir=benchmarks_dir).rows) for name in ["nq", "triviaqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle"]}
    assert counts == {"nq": 3610, "triviaqa": 11313, "hotpotqa": 7405, "2wikimultihopqa": 12576, "musique": 2417, "bamboogle": 125}


def test_data_dir_from_environment(benchmarks_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALSUITE_DATA_DIR", str(benchmarks_dir))
    assert len(load_split("bamboogle").rows) == 125


def test_task_subdirectory_layout(tmp_path: Path) -> None:
    (tmp_path / "nq").mkdir()
    (tmp_path / "nq" / "test.jsonl").write_text('{"id": "1", "question": "who", "golden_answers": ["x"]}\n')
    rows = load_split("nq", data_dir=tmp_path).rows
    assert rows[0].question == "who?"


def test_question_normalization_is_switchable(tmp_path: Path) -> None:
    (tmp_path / "nq.test.jsonl").write_text('{"id": "1", "question": "  who is it  ", "golden_answers": ["x"]}\n')
    assert load_split("nq", data_dir=tmp_path).rows[0].question == "who is it?"
    assert load_split("nq", data_dir=tmp_path, normalize_questions=False).rows[0].question == "  who is it  "
    assert normalize_question("Is it?") == "Is it?"


def test_numbers_as_answers_become_strings(tmp_path: Path) -> None:
    (tmp_path / "nq.test.jsonl").write_text('{"id": "1", "question": "when?", "golden_answers": [1969, 2.5, 3.0]}\n')
    assert load_split("nq", data_dir=tmp_path).rows[0].golden_answers == ["1969", "2.5", "3"]


def _write(tmp_path: Path, *lines: str) -> Path:
    (tmp_path / "nq.test.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "1", "question": "q", "golden_answers": ["a"]}', '{"id": "2", "question": '], ":2: invalid JSON"),
        (['{"id": "1", "question": "q"}'], ":1: missing 'golden_answers'"),
        (['{"id": "1", "question": "q", "golden_answers": "a"}'], ":1: 'golden_answers' must be a list, got str"),
        (['{"id": "1", "golden_answers": ["a"]}'], ":1: missing or empty 'question'"),
        (['{"question": "q", "golden_answers": ["a"]}'], ":1: missing 'id'"),
        (['{"id": "1", "question": "q", "golden_answers": [null]}'], ":1: 'golden_answers' holds a NoneType"),
        (['[1, 2]'], ":1: expected a JSON object"),
        (['{"id": "1", "question": "q", "golden_answers": ["a"]}', "", '{"id": "1", "question": "r", "golden_answers": ["b"]}'], ":3: duplicate id '1' (first seen at line 1)"),
    ],
)
def test_loader_errors_name_file_line_and_problem(tmp_path: Path, lines: list[str], message: str) -> None:
    directory = _write(tmp_path, *lines)
    with pytest.raises(DataError) as info:
        load_split("nq", data_dir=directory)
    assert str(tmp_path / "nq.test.jsonl") + message in str(info.value)


def test_missing_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EvalsuiteError, match="does not exist"):
        load_split("nq", data_dir=tmp_path / "nope")


def test_missing_split_offline_names_the_flag_and_what_is_there(benchmarks_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # popqa has only test_sub1000 locally; the hub is unreachable here (datasets may not even be installed).
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path))  # and no download cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(EvalsuiteError) as info:
        load_split("popqa", data_dir=benchmarks_dir)
    assert "test_sub1000" in str(info.value)


def test_hub_error_without_data_dir_names_flag_and_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("EVALSUITE_DATA_DIR", raising=False)
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path))  # no download cache either
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(EvalsuiteError) as info:
        load_split("nq")
    assert "--data-dir" in str(info.value) and "EVALSUITE_DATA_DIR" in str(info.value)


def test_subsets_record_their_ids(benchmarks_dir: Path) -> None:
    rows = load_split("bamboogle", data_dir=benchmarks_dir).rows
    assert [r.id for r in apply_subset(rows, "first:3")] == ["test_0", "test_1", "test_2"]
    sample = apply_subset(rows, "sample:10:7")
    assert [r.id for r in sample] == [r.id for r in apply_subset(rows, parse_subset("sample:10:7"))]
    assert [r.id for r in sample] != [r.id for r in apply_subset(rows, "sample:10:8")]
    positions = [rows.index(r) for r in sample]
    assert positions == sorted(positions) and len(set(positions)) == 10
    assert len(apply_subset(rows, "full")) == 125 == len(apply_subset(rows, "first:1000"))
    assert ids_hash(["a", "b"]) != ids_hash(["b", "a"])


@pytest.mark.parametrize("spec", ["first", "first:0", "first:x", "sample:3", "all", "sample:a:1"])
def test_bad_subset_specs(spec: str) -> None:
    with pytest.raises(EvalsuiteError, match="invalid subset"):
        parse_subset(spec)


def test_a_sample_subset_built_without_its_size_is_refused_in_one_line() -> None:
    from evalsuite.tasks.subset import Subset

    # before: random.sample(range(n), None) raised a bare TypeError from inside the standard library
    with pytest.raises(EvalsuiteError, match="invalid subset sample:None:3: a sample needs its size"):
        apply_subset([], Subset("sample", None, 3))
