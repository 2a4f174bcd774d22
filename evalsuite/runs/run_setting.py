"""A run's setting, read once from its manifest into typed records, with every part identified by content.

The manifest stores model, backend, retriever, corpus and decoding as typed sections (runs/schema.py; version-1
manifests, whose sections were free dicts, are migrated when read); `RunSetting.from_manifest` is the one place
that turns them into a setting. Which of its fields make runs comparable, and how each check reads them, is declared
in runs/comparable.py; resume and merge checks, tables, the paper-setting comparison (agent/papers.py) and leaderboard
verification all take the setting from here.

Identity is by content, never by name: a corpus is its passage count and sha256, named only when both match a
known corpus (`KNOWN_CORPORA`); an index is its manifest hash; an encoder is its weights' identity (the hub repo
it was loaded from by name, or the hash of its files), named only when that matches a known encoder. A file called
`wiki-18.jsonl` with 2,000 passages is "custom corpus (2,000 passages, sha …)", and `my-e5-finetune` is not E5.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalsuite.runs.schema import BackendSection, CorpusSection, EncoderSection, Manifest, ModelSection


class KnownCorpus(BaseModel):
    """A corpus the project can name: its passage count and, where pinned, the sha256 of its file."""

    key: str
    label: str
    num_passages: int
    # None: the hash is not pinned yet (the file is too large to fetch here); the passage count alone is matched and
    # the label says so, so it is never shown as a content match (docs/guarantees.md, "How a corpus is named").
    sha256: str | None = None

    @property
    def basis(self) -> str:
        """What a match with this corpus rests on, as the site says it."""
        return "passage count and sha256" if self.sha256 is not None else "passage count only"


KNOWN_CORPORA: tuple[KnownCorpus, ...] = (
    # Search-R1's release (PeterJinGo/wiki-18-corpus), docs/retrieval.md.
    KnownCorpus(key="wiki18", label="wiki-18", num_passages=21_015_324),
    # ../shared/data/corpus/wiki18_sample.jsonl: the development sample of wiki-18.
    KnownCorpus(
        key="wiki18-sample",
        label="wiki-18 sample",
        num_passages=10_813,
        sha256="609bfd8ea834cfe05ce1ffddead0859f8571bcba29713da4a99be7ce0b03724f",
    ),
    # ../shared/data/corpus/multihop_contexts.jsonl: the multi-hop benchmarks' context paragraphs.
    KnownCorpus(
        key="multihop-contexts",
        label="multi-hop contexts",
        num_passages=27_761,
        sha256="4eb61224456d711a1dbad86fb06fb46981a7b81c968a2789e08501c3b0e806e1",
    ),
    # The shipped AD-QA corpus as its index writes it (tasks/adqa/index.py; `--retriever adqa`).
    KnownCorpus(
        key="adqa",
        label="AD-QA corpus",
        num_passages=7_111,
        sha256="3f3aef80b990176b2ce0bd0763f5ae3b13f2d5b30572338d84d8725fa3ca5196",
    ),
)


class KnownEncoder(BaseModel):
    """An encoder the project can name: the hub repo it is loaded from, and pinned file hashes of local copies."""

    key: str
    hub_repo: str
    file_hashes: tuple[str, ...] = ()


KNOWN_ENCODERS: tuple[KnownEncoder, ...] = (KnownEncoder(key="e5", hub_repo="intfloat/e5-base-v2"),)


def name_key(name: str) -> str:
    """`Search-R1`, `search_r1` and `search r1` all → `search-r1` (the registry's spelling)."""
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _letters_and_digits(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def corpus_name_key(name: str | None) -> str | None:
    """`wiki-18`, `wiki18.jsonl` and `Wiki_18.jsonl.gz` → `wiki18`: how a *declared* corpus name is spelled in
    `KNOWN_CORPORA`. Only ever compared with a corpus identified by content, never with another name."""
    if name is None:
        return None
    stem = re.sub(r"(\.(jsonl|json|tsv|parquet|gz))+$", "", name.strip().lower().rsplit("/", 1)[-1])
    key = _letters_and_digits(stem)
    # a known corpus is declared by its key or by its label (`evalsuite submit` writes the label: "AD-QA corpus")
    return next(
        (c.key for c in KNOWN_CORPORA if key in (_letters_and_digits(c.key), _letters_and_digits(c.label))), key
    )


class CorpusIdentity(BaseModel):
    """A corpus as a run recorded it: its file name (shown, never trusted), passage count and content hash."""

    model_config = ConfigDict(extra="ignore")
    name: str | None = None
    num_documents: int | None = None
    sha256: str | None = None

    def known(self) -> KnownCorpus | None:
        """The known corpus this content is, or None: the count must match, and the hash wherever it is pinned."""
        if self.num_documents is None:
            return None
        for corpus in KNOWN_CORPORA:
            if corpus.num_passages == self.num_documents and (corpus.sha256 is None or corpus.sha256 == self.sha256):
                return corpus
        return None

    @property
    def key(self) -> str | None:
        known = self.known()
        return known.key if known else None

    def label(self) -> str:
        """ "wiki-18 sample" for a content match; "wiki-18 (by passage count only: 21,015,324; sha256 not pinned)"
        where only the count can be matched; otherwise "custom corpus (N passages, sha …)", whatever the file is
        called."""
        known = self.known()
        if known is not None and known.sha256 is not None:
            return known.label
        if known is not None:
            return f"{known.label} (by passage count only: {known.num_passages:,}; sha256 not pinned)"
        count = f"{self.num_documents:,} passages" if self.num_documents is not None else "passage count not recorded"
        sha = f"sha {self.sha256[:12]}…" if self.sha256 else "no content hash"
        return f"custom corpus ({count}, {sha})"


class EncoderIdentity(BaseModel):
    """A dense retriever's encoder: the name it was loaded by (shown) and its fingerprint (what identifies it:
    `name:<hub repo>` when loaded from the hub, else the sha256 of its weight, config and tokenizer files)."""

    model_config = ConfigDict(extra="ignore")
    name: str | None = None
    fingerprint: str | None = None
    # The hub commit the weights were loaded at, or a local directory's content hash (shown; None in indexes built
    # before it was recorded).
    revision: str | None = None

    @property
    def key(self) -> str | None:
        """The known encoder these weights are ("e5"), or None: never guessed from a name's prefix."""
        for encoder in KNOWN_ENCODERS:
            if self.fingerprint == f"name:{encoder.hub_repo}" or (self.fingerprint in encoder.file_hashes):
                return encoder.key
        return None


class RetrieverSetting(BaseModel):
    """The retriever: the names it goes by, the index it searched (by manifest hash), its encoder and corpus."""

    index_hash: str | None = None
    spec: str | None = None
    names: frozenset[str] = frozenset()
    encoder: EncoderIdentity | None = None
    corpus: CorpusIdentity | None = None

    @property
    def used(self) -> bool:
        return bool(self.names or self.index_hash or self.spec)

    def keys(self) -> set[str]:
        """The names this retriever may be declared by: its kind ("dense", "bm25", "replay") and, for a dense index,
        the known encoder its weights are ("e5"); a name the encoder only *contains* does not count."""
        keys = set(self.names)
        if self.encoder is not None and self.encoder.key is not None:
            keys.add(self.encoder.key)
        return keys

    def label(self) -> str | None:
        if not self.used:
            return None
        encoder = ""
        if self.encoder is not None:
            revision = self.encoder.revision.removeprefix("sha256:")[:12] if self.encoder.revision else None
            encoder = (
                f" ({self.encoder.key or 'encoder ' + str(self.encoder.name)}{' @ ' + revision if revision else ''})"
            )
        return f"{', '.join(sorted(self.names)) or self.spec or 'index'}{encoder}"


def _identity(model: type[BaseModel], section: CorpusSection | EncoderSection | None) -> Any:
    """A recorded corpus or encoder section as its identity (None: not recorded)."""
    if section is None or not section.model_dump():
        return None
    return model.model_validate(section.model_dump())


def _retriever(manifest: Manifest) -> RetrieverSetting:
    section = manifest.retriever
    kinds = {section.name, section.retriever, section.kind}
    return RetrieverSetting(
        index_hash=section.index_hash,
        spec=section.spec,
        names=frozenset(name_key(str(v)) for v in kinds if v),
        encoder=_identity(EncoderIdentity, section.encoder),
        corpus=_identity(CorpusIdentity, section.corpus),
    )


def _corpus(manifest: Manifest, retriever: RetrieverSetting) -> CorpusIdentity | None:
    """The corpus the run searched: the retriever index's record (it hashed and counted the file), else the
    manifest's own corpus record (imports)."""
    if retriever.corpus is not None:
        return retriever.corpus
    return _identity(CorpusIdentity, manifest.corpus)


class RunSetting(BaseModel):
    """Everything that decides a run's results, typed, from its manifest (`from_manifest`)."""

    kind: str
    method: str | None
    model: ModelSection
    backend: BackendSection
    decoding: dict[str, Any]
    prompt_template_hash: str | None
    retriever: RetrieverSetting
    corpus: CorpusIdentity | None
    topk: int | None
    max_turns: int | None
    tasks: list[str]
    splits: dict[str, str]
    subset: str | None
    subset_ids_hash: dict[str, str]
    task_rows: dict[str, Any]
    shard: str | None = None

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> RunSetting:
        retriever = _retriever(manifest)
        return cls(
            kind=manifest.kind,
            method=manifest.method,
            model=manifest.model,
            backend=manifest.backend,
            decoding=manifest.decoding.model_dump(),
            prompt_template_hash=manifest.prompt_template_hash,
            retriever=retriever,
            corpus=_corpus(manifest, retriever),
            topk=manifest.topk,
            max_turns=manifest.max_turns,
            tasks=list(manifest.tasks),
            splits=dict(manifest.splits),
            subset=manifest.subset,
            subset_ids_hash=dict(manifest.subset_ids_hash),
            task_rows={
                task: (files or {}).get("rows_sha256") for task, files in sorted((manifest.data_files or {}).items())
            },
            shard=getattr(manifest, "shard", None),
        )

    @property
    def corpus_key(self) -> str | None:
        """The known corpus the run searched, identified by content (None: custom, or not recorded)."""
        return self.corpus.key if self.corpus is not None else None

    def corpus_label(self) -> str | None:
        return self.corpus.label() if self.corpus is not None else None
