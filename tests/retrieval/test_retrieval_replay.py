"""The replay retriever serves a recording's passages per query, as retrieval Hits."""

from __future__ import annotations

import json

from evalsuite.models.replay import ReplayBackend
from evalsuite.protocol.recording import load_recording
from evalsuite.protocol.search_r1 import INVALID_ACTION
from evalsuite.retrieval import Hit
from evalsuite.retrieval.replay import ReplayRetriever

RESPONSE = (
    "<think> find it </think>\n<search> capital of France </search>\n\n"
    '<information>Doc 1(Title: "Paris") Paris is the capital of France.\nDoc 2(Title: Lyon) Lyon is a city.\n</information>\n\n'
    "nothing valid here" + INVALID_ACTION + "<answer> Paris </answer>"
)


def test_recorded_passages_come_back_per_query_with_their_wiki18_titles(tmp_path):
    path = tmp_path / "recording.json"
    path.write_text(json.dumps([{"id": "q1", "question": "capital of France?", "output": {"query": "P", "final_response": RESPONSE}}]))
    examples = load_recording(path)
    assert examples["q1"].observations[1] is None  # the invalid-action message: no passages
    retriever = ReplayRetriever(examples)
    hits = retriever.search(["  capital of France ", "never asked"], k=5)
    assert [(h.contents, h.rank, h.score) for h in hits[0]] == [
        ('"Paris"\nParis is the capital of France.', 1, 0.0),
        ("Lyon\nLyon is a city.", 2, 0.0),
    ]
    assert all(isinstance(h, Hit) and h.doc_id.startswith("replay:") for h in hits[0]) and hits[1] == []
    assert retriever.search(["capital of France"], k=1)[0] == hits[0][:1]
    assert retriever.info()["queries"] == 1 and ReplayBackend(str(path)).examples.keys() == examples.keys()
