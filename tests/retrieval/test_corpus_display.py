"""A corpus as output names it: what it is and how many passages, never a cache file's hashed name."""

from __future__ import annotations

from evalsuite.agent.papers import manifest_paper_check
from evalsuite.provenance import provenance_fields
from evalsuite.retrieval.manifest import corpus_display
from evalsuite.runs.schema import Manifest


def test_a_corpus_is_named_as_a_person_would():
    assert corpus_display({"name": "wiki18_sample.jsonl", "path": "/data/corpus/wiki18_sample.jsonl", "num_documents": 38574}) == "wiki-18 sample, 38,574 passages"
    adqa = {"name": "bm25-30305de26455c438.corpus.jsonl", "path": "/root/.cache/evalsuite/adqa/bm25-30305de26455c438.corpus.jsonl", "num_documents": 7111}
    assert corpus_display(adqa) == "AD-QA corpus, 7,111 passages"
    assert corpus_display({"name": "wiki-18.jsonl.gz"}) == "wiki-18"
    assert corpus_display({"name": "bm25-0123456789abcdef.my_docs.jsonl", "path": "/x/bm25-0123456789abcdef.my_docs.jsonl", "num_documents": 5}) == "my docs, 5 passages"
    assert corpus_display({}) is None and corpus_display(None) is None


def test_the_paper_check_names_the_corpus_and_the_papers_by_what_they_are():
    manifest = Manifest(method="search-r1", tasks=["nq"], splits={"nq": "test"}, topk=3, max_turns=4, subset="full",
                        retriever={"name": "e5", "corpus": {"name": "wiki18_sample.jsonl", "path": "/d/wiki18_sample.jsonl", "num_documents": 38574}},
                        **provenance_fields())
    check = manifest_paper_check(manifest)
    # a name is not an identity (the trust model of docs/guarantees.md): without its content hash the corpus is named
    # by what is known of it, and the paper's corpus by what the paper used
    assert check.differences == ("corpus: custom corpus (38,574 passages, no content hash) (paper wiki-18)",)
