"""Corpus reading: both row shapes, file:line errors, duplicate ids, the content hash and random access."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalsuite.errors import DataError
from evalsuite.retrieval import Document, Hit, read_corpus
from evalsuite.retrieval.corpus import CorpusReader, DocStore
from evalsuite.retrieval.types import split_contents


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_reads_wiki18_contents_rows(tmp_path):
    path = write(tmp_path, [json.dumps({"id": "1", "contents": '"Big Fish"\nBig Fish is a 1998 novel by Daniel Wallace.'})])
    assert list(read_corpus(path)) == [Document("1", "Big Fish", "Big Fish is a 1998 novel by Daniel Wallace.", '"Big Fish"\nBig Fish is a 1998 novel by Daniel Wallace.')]


def test_reads_title_text_rows_and_builds_contents(tmp_path):
    path = write(tmp_path, [json.dumps({"id": "a", "title": "Paris", "text": "Paris is the capital of France."})])
    (doc,) = read_corpus(path)
    assert doc.contents == '"Paris"\nParis is the capital of France.'
    assert (doc.title, doc.text) == ("Paris", "Paris is the capital of France.")


def test_integer_ids_become_strings_and_blank_lines_are_skipped(tmp_path):
    path = write(tmp_path, [json.dumps({"id": 7, "contents": '"T"\nx'}), "", "   ", json.dumps({"id": 8, "contents": '"U"\ny'})])
    assert [doc.id for doc in read_corpus(path)] == ["7", "8"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "1", "contents": ', "invalid JSON"),
        ('["1", "text"]', "expected a JSON object"),
        ('{"contents": "\\"T\\"\\nx"}', "'id' must be a string"),
        ('{"id": true, "contents": "x"}', "'id' must be a string"),
        ('{"id": "1", "contents": 5}', "'contents' must be a string"),
        ('{"id": "1", "title": "T"}', "no 'contents' string and no 'title' and 'text'"),
        ('{"id": " ", "contents": "x"}', "empty 'id'"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, line, message):
    path = write(tmp_path, [json.dumps({"id": "0", "contents": '"A"\na'}), line])
    with pytest.raises(DataError) as caught:
        list(read_corpus(path))
    assert f"{path}:2:" in str(caught.value)
    assert message in str(caught.value)


def test_duplicate_ids_are_rejected_naming_both_lines(tmp_path):
    path = write(tmp_path, [json.dumps({"id": "x", "contents": "a"}), json.dumps({"id": "y", "contents": "b"}), json.dumps({"id": "x", "contents": "c"})])
    with pytest.raises(DataError, match=r"corpus\.jsonl:3: duplicate id 'x' \(first used at line 1\)"):
        list(read_corpus(path))


def test_reader_records_the_file_hash_size_and_offsets(tmp_path):
    path = write(tmp_path, [json.dumps({"id": "a", "contents": "one"}), "", json.dumps({"id": "b", "contents": "two"})])
    reader = CorpusReader(path)
    docs = list(reader)
    data = path.read_bytes()
    assert reader.sha256 == hashlib.sha256(data).hexdigest()
    assert reader.size_bytes == len(data)
    assert reader.num_documents == 2
    store = DocStore(path, reader.offsets)
    assert [store.document(i) for i in range(2)] == docs
    with pytest.raises(IndexError):
        store.document(2)


def test_real_corpus_has_27761_unique_passages(multihop_corpus):
    reader = CorpusReader(multihop_corpus)
    ids = [doc.id for doc in reader]
    assert len(ids) == len(set(ids)) == 27761
    store = DocStore(multihop_corpus, reader.offsets)
    first = store.document(0)
    assert first.id == "mh0" and first.title == "Meet Corliss Archer"
    assert store.document(27760).id == ids[-1]


def test_split_contents_follows_search_r1():
    # Search-R1: title = content.split("\n")[0].strip('"'), text = "\n".join(content.split("\n")[1:])
    assert split_contents('"Big Fish (novel)"\nline one\nline two') == ("Big Fish (novel)", "line one\nline two")
    assert split_contents("no newline") == ("no newline", "")


def test_hit_exposes_title_text_and_search_r1_document():
    hit = Hit(doc_id="42", contents='"Eiffel Tower"\nA tower in Paris.', score=1.5, rank=1)
    assert (hit.title, hit.text) == ("Eiffel Tower", "A tower in Paris.")
    assert hit.document() == {"id": "42", "contents": '"Eiffel Tower"\nA tower in Paris.'}
    assert Hit.from_json(hit.to_json()) == hit
