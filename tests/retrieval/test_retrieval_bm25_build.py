"""The chunked, parallel BM25 build: the same index as bm25s's in-memory build, and clear errors on bad corpora."""

from __future__ import annotations

import json

import numpy as np
import pytest

from evalsuite.errors import DataError
from evalsuite.retrieval import build_index, load_retriever
from evalsuite.retrieval.bm25_build import reference_bm25s_index


def bm25_files(directory) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir()) if path.name != "stopwords.json"}


def test_real_corpus_index_equals_bm25s_in_memory_build(tmp_path, multihop_corpus, full_bm25, hotpot_rows):
    import bm25s

    reference_bm25s_index(multihop_corpus, tmp_path / "ref")
    chunked = bm25_files(full_bm25 / "bm25")
    assert chunked == bm25_files(tmp_path / "ref")  # byte for byte: vocabulary ids, float32 scores, CSC order
    # and so the same top-k ids and scores, checked through bm25s's own retrieval on both
    reference = bm25s.BM25.load(str(tmp_path / "ref"))
    ours = load_retriever(full_bm25)
    questions = [row["question"] for row in hotpot_rows[:100]]
    for question, hits in zip(questions, ours.search(questions, 5)):
        ids = ours._tokenizer.ids(question)
        scores = reference.get_scores_from_ids(ids)
        expected = np.lexsort((np.arange(len(scores)), -scores))[:5].tolist()  # best first, ties by corpus order
        assert [hit.doc_id for hit in hits] == [ours.docstore.document(row).id for row in expected]
        assert [hit.score for hit in hits] == [float(scores[row]) for row in expected]


def test_block_size_and_worker_count_do_not_change_the_index(tmp_path, small_corpus):
    one = build_index(small_corpus, tmp_path / "one", workers=1)
    many = build_index(small_corpus, tmp_path / "many", workers=2, block_bytes=16 * 1024)  # ~8 blocks
    assert load_retriever(many).info()["build"]["blocks"] > 4
    assert bm25_files(one / "bm25") == bm25_files(many / "bm25")
    assert load_retriever(one).info()["index_hash"] == load_retriever(many).info()["index_hash"]


def test_passages_without_terms_are_indexed_as_bm25s_does(tmp_path):
    rows = ["apple banana", "the of and", "!!! ...", '"A"\nthe apple', "banana banana cherry"]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "contents": c}) + "\n" for i, c in enumerate(rows)), encoding="utf-8")
    reference_bm25s_index(path, tmp_path / "ref")
    built = build_index(path, tmp_path / "idx", workers=1, block_bytes=40)  # one line per block
    assert bm25_files(built / "bm25") == bm25_files(tmp_path / "ref")


def write_lines(path, lines: list[str]):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def passage(i: int, text: str = "some words here") -> str:
    return json.dumps({"id": f"p{i}", "contents": f'"T{i}"\n{text}'})


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "invalid JSON"),
        (json.dumps({"id": "x", "contents": '"Title only"\n'}), "has no text"),
        (json.dumps({"id": "x", "title": "T", "text": "  "}), "has no text"),
        (json.dumps({"contents": "text"}), "'id' must be a string"),
    ],
)
def test_a_bad_line_in_a_later_block_names_file_and_line(tmp_path, bad_line, message):
    lines = [passage(i) for i in range(40)]
    lines[33] = bad_line
    path = write_lines(tmp_path / "c.jsonl", lines)
    with pytest.raises(DataError, match=message) as caught:
        build_index(path, tmp_path / "idx", workers=2, block_bytes=256)
    assert f"{path}:34:" in str(caught.value)
    if message == "invalid JSON":
        assert "fix or delete that line" in str(caught.value)  # through a worker process, the hint kept
    assert not (tmp_path / "idx" / "index.json").exists()


def test_duplicate_ids_across_blocks_name_both_lines(tmp_path):
    lines = [passage(i) for i in range(30)]
    lines[25] = passage(3, "another text")
    path = write_lines(tmp_path / "c.jsonl", lines)
    with pytest.raises(DataError, match=r"c\.jsonl:26: duplicate id 'p3' \(first used at line 4\)") as caught:
        build_index(path, tmp_path / "idx", workers=1, block_bytes=200)
    assert "drop or renumber one of the two lines" in str(caught.value)
    assert not (tmp_path / "idx" / "index.json").exists()


def test_line_numbers_of_offsets_are_counted_chunk_by_chunk(tmp_path):
    from evalsuite.retrieval.bm25_build import _lines_of

    path = tmp_path / "c.txt"
    lines = [b"x" * (i % 7) for i in range(200)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    starts = np.cumsum([0] + [len(line) + 1 for line in lines[:-1]])
    wanted = [0, 3, 57, 58, 199]
    assert _lines_of(path, [int(starts[i]) for i in wanted], chunk_bytes=5) == [i + 1 for i in wanted]
