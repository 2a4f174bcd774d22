"""What each method's paper prints about its own setting, and where: the provenance of every "paper" value.

A `PaperValue` is one setting with one of three labels:

- `paper`: the method's paper prints it; `seed` names the line ("000:88" is line 88 of the seed text whose name
  starts with 000) and `quote` holds words that stand on that line. Search-R1 is not among the seed texts: its own
  values cite its released training scripts (`origin`), which evalsuite cannot check offline.
- `inherited`: the paper is silent on the value but says it follows Search-R1; `seed`/`quote` give that sentence and
  `origin` where Search-R1 sets the value.
- `assumed`: the paper is silent and does not say it follows anyone; `why` says why we chose this value.

The same records describe a recipe's training setting (the `paper:` block of evalsuite/methods/<name>/configs/gpu.yaml,
read by `evalsuite.training.paper_deviations`) and each paper's evaluation setting (`PAPERS` below, printed by
`evalsuite methods --paper METHOD`). Seed texts are optional: `check_quote` needs them, nothing else does.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalsuite.errors import DataError
from evalsuite.registry import Registry, packaged_papers
from evalsuite.runs.schema import Manifest
from evalsuite.runs.comparable import recorded_values
from evalsuite.runs.run_setting import RunSetting, corpus_name_key, name_key

LABELS = ("paper", "inherited", "assumed")
SEARCH_R1_CODE = "github.com/PeterGriffinJin/Search-R1"


def seed_files() -> dict[str, str]:
    """The seed text of each method whose paper is one (its package's `PAPER["seed"]`); Search-R1 has none."""
    return {name: paper["seed"] for name, paper in packaged_papers().items() if paper.get("seed")}


def paper_name(seed: str) -> str:
    """The paper a seed citation ('003:69') points into, as output names it: 'the OASES paper' (a seed file's number
    means nothing to a user)."""
    prefix = seed.split(":", 1)[0]
    names = {paper["seed"][:3]: paper["name"] for paper in packaged_papers().values() if paper.get("seed")}
    return f"the {names[prefix]} paper" if prefix in names else f"seed text {prefix}"


@dataclass(frozen=True)
class PaperValue:
    """One setting of a paper with its label and where it comes from (see the module docstring)."""

    name: str
    value: Any
    label: str
    seed: str | None = None
    quote: str | None = None
    origin: str | None = None
    why: str | None = None
    because: str | None = None  # why our run differs from it, when it does

    def source(self) -> str:
        """One line naming where the value comes from."""
        if self.label == "assumed":
            return f"assumed: {self.why}"
        cited = f'{paper_name(self.seed)}: "{self.quote}"' if self.seed else ""
        if self.label == "inherited":
            return f"inherited from Search-R1 ({self.origin}); {cited}"
        return cited or f"Search-R1 ({self.origin})"

    def record(self) -> dict[str, Any]:
        """The manifest's form: value, label and source fields (empty ones left out)."""
        fields = {
            "value": self.value,
            "label": self.label,
            "seed": self.seed,
            "quote": self.quote,
            "origin": self.origin,
            "why": self.why,
            "because": self.because,
        }
        return {key: value for key, value in fields.items() if value is not None}


def parse_value(name: str, raw: Any, where: str) -> PaperValue:
    """A `paper:` entry `{value, seed, quote}` / `{value, inherited: search-r1, seed, quote, origin}` /
    `{value, assumed: WHY}` / `{value, origin}` (Search-R1's own) as a PaperValue; anything else is refused."""
    if not isinstance(raw, dict) or "value" not in raw:
        raise DataError(
            f"{where}: paper.{name} must be a mapping with a value and its source",
            hint=(
                "e.g. {value: 600, seed: '000:88', quote: 'train the "
                "policy model for 600 steps'}, or {value: 1, assumed: WHY}"
            ),
        )
    known = {"value", "seed", "quote", "inherited", "origin", "assumed", "because"}
    if set(raw) - known:
        raise DataError(
            f"{where}: paper.{name} has unknown keys {sorted(set(raw) - known)}",
            hint=f"known: {', '.join(sorted(known))}",
        )
    seed, quote, origin = raw.get("seed"), raw.get("quote"), raw.get("origin")
    if seed is not None and not _is_citation(str(seed)):
        raise DataError(
            f"{where}: paper.{name}.seed {seed!r} is not FILE_PREFIX:LINE",
            hint="e.g. '000:88' for line 88 of seeds/000_*.txt",
        )
    if (seed is None) != (quote is None):
        raise DataError(f"{where}: paper.{name} needs both seed and quote (the words on that line)")
    common = {"name": name, "value": raw["value"], "because": raw.get("because")}
    if "assumed" in raw:
        if not str(raw["assumed"] or "").strip() or seed or "inherited" in raw:
            raise DataError(f"{where}: paper.{name}: an assumed value says why (assumed: WHY) and cites no line")
        return PaperValue(label="assumed", why=str(raw["assumed"]), **common)
    if "inherited" in raw:
        if raw["inherited"] != "search-r1" or not seed or not origin:
            raise DataError(
                f"{where}: paper.{name}: an inherited value is `inherited: search-r1` with the seed line that says "
                "the paper follows Search-R1 (seed, quote) and where Search-R1 sets it (origin)"
            )
        return PaperValue(label="inherited", seed=str(seed), quote=str(quote), origin=str(origin), **common)
    if not seed and not origin:
        raise DataError(
            f"{where}: paper.{name} cites nothing", hint="give seed and quote, inherited: search-r1, or assumed: WHY"
        )
    return PaperValue(label="paper", seed=None if seed is None else str(seed), quote=quote, origin=origin, **common)


def _is_citation(text: str) -> bool:
    prefix, _, line = text.partition(":")
    return prefix.isdigit() and line.isdigit()


def seeds_dir(start: Path | None = None) -> Path | None:
    """The seed texts: $EVALSUITE_SHARED_SEEDS (the name the README and the tests use), else ../shared/seeds beside
    the repository root; None when absent."""
    if os.environ.get("EVALSUITE_SHARED_SEEDS"):
        path = Path(os.environ["EVALSUITE_SHARED_SEEDS"])
        return path if path.is_dir() else None
    root = (start or Path(__file__)).resolve()
    for parent in root.parents:
        candidate = parent.parent / "shared" / "seeds"
        if (parent / "pyproject.toml").is_file() and candidate.is_dir():
            return candidate
    return None


def seed_line(seeds: Path, citation: str) -> str:
    """The text of line N of the seed text whose file name starts with the citation's prefix ("000:88")."""
    prefix, _, number = citation.partition(":")
    matches = sorted(seeds.glob(f"{prefix}_*.txt"))
    if len(matches) != 1:
        raise DataError(f"seeds/{prefix}_*.txt: {len(matches)} files match the citation {citation!r}")
    lines = matches[0].read_text(encoding="utf-8").splitlines()
    index = int(number)
    if not 1 <= index <= len(lines):
        raise DataError(f"{matches[0].name} has {len(lines)} lines; the citation {citation!r} points past them")
    return lines[index - 1]


def check_quote(value: PaperValue, seeds: Path) -> str | None:
    """None when the quoted words stand on the cited line, else what is wrong (values citing no seed pass)."""
    if value.seed is None:
        return None
    line = seed_line(seeds, value.seed)
    if _squash(value.quote or "") in _squash(line):
        return None
    return f"{value.name}: {value.quote!r} is not on seeds/{value.seed}: {line[:160]!r}"


def _squash(text: str) -> str:
    return " ".join(text.split())


# A number in text: digits not glued to a preceding digit or point, optionally a thousands suffix (90K) or a model-size
# B (3B), and then no further letter, so "2wikimultihopqa" holds none and "Qwen2.5-3B" holds 2.5 and 3.
_NUMBER = re.compile(r"(?<![\d.])(\d+(?:,\d{3})*(?:\.\d+)?(?:e-?\d+)?)([KMB]?)(?![A-Za-z\d])")
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_SCALE = {"K": 1e3, "M": 1e6, "B": 1.0}  # B: a model size, compared as its count of billions


def numbers_in(value: Any) -> list[float]:
    """The numbers a value states: itself for a number, those written in a string (digits or one..ten); none for a
    boolean or a list (benchmark names)."""
    if isinstance(value, bool) or isinstance(value, list):
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    text = str(value)
    found = [float(digits.replace(",", "")) * _SCALE.get(unit, 1.0) for digits, unit in _NUMBER.findall(text)]
    return found + [float(_WORDS[w]) for w in re.findall(r"[a-z]+", text.lower()) if w in _WORDS]


def check_numbers(value: PaperValue) -> str | None:
    """None when every number of a `paper` value stands in its quote (so the quote supports the value, not only the
    line), else what is missing. Values with no quote, no number, or another label pass."""
    if value.label != "paper" or not value.quote:
        return None
    stated = numbers_in(value.quote)
    missing = [n for n in numbers_in(value.value) if not any(math.isclose(n, m, rel_tol=1e-9) for m in stated)]
    if not missing:
        return None
    shown = ", ".join(f"{n:g}" for n in missing)
    return f"{value.name}: the quote {value.quote!r} does not state {shown} of the value {value.value!r}"


# --- Evaluation settings ----------------------------------------------------------------------------------------


def from_paper(name: str, value: Any, seed: str, quote: str) -> PaperValue:
    return PaperValue(name, value, "paper", seed=seed, quote=quote)


def inherited(name: str, value: Any, seed: str, quote: str, origin: str) -> PaperValue:
    return PaperValue(name, value, "inherited", seed=seed, quote=quote, origin=origin)


def assumed(name: str, value: Any, why: str) -> PaperValue:
    return PaperValue(name, value, "assumed", why=why)


def from_search_r1(name: str, value: Any, origin: str) -> PaperValue:
    return PaperValue(name, value, "paper", origin=origin)


R1_SPLITS = "test: nq, triviaqa, popqa, bamboogle; dev: hotpotqa, 2wikimultihopqa, musique"
R1_SPLITS_ORIGIN = "its evaluation data: the test split where a dataset has one, else dev (FlashRAG's files)"
FOLLOWS_R1 = ("000:15", "Progress builds upon the Search-R1 training paradigm")

# Each paper's evaluation setting (benchmarks, splits, metric, retriever, top-k, max turns and the evaluated models)
# lives with its method (`evalsuite/methods/<name>/paper.py`, the package's `PARTS["paper"]`), as a PaperSetting.


@dataclass(frozen=True)
class PaperSetting:
    """A paper's evaluation setting, one PaperValue per item, and the retriever and corpus the paper names itself
    (label `paper`), as run manifests and submissions spell them once normalized (`e5`; `wiki18` for wiki-18 /
    wiki18.jsonl; None where the paper leaves it open). A paper that names no retriever (or only `assumed` ones) is
    not checked on it."""

    evaluation: list[PaperValue]  # an item left out (a paper that states no top-k) is not checked
    named_retriever: tuple[str, str | None] | None = None


def _check_setting(name: str, value: Any) -> PaperSetting:
    if not isinstance(value, PaperSetting):
        raise DataError(f"paper setting {name!r} is a {type(value).__name__}, not an agent.papers.PaperSetting")
    return value


PAPERS: Registry[PaperSetting] = Registry("paper setting", check=_check_setting, packaged="paper")


def evaluation_setting(method: str) -> list[PaperValue]:
    """The paper's evaluation setting of `method`, one PaperValue per item."""
    if method not in PAPERS:
        raise DataError(f"no paper setting for {method!r}", hint=f"one of: {', '.join(PAPERS.names())}")
    return PAPERS.get(method).evaluation


# The retriever and corpus a paper names itself (label `paper`), as run manifests and submissions spell them once
# normalized (`e5`; `wiki18` for wiki-18 / wiki18.jsonl); None where the paper leaves it open. Methods whose paper
# names no retriever (or only `assumed` ones) are not checked on it.
# The named corpora as output spells them (`wiki18` is only the key they are compared by).
NAMED_CORPORA = {"wiki18": "wiki-18"}


@dataclass(frozen=True)
class PaperCheck:
    """A run's or a leaderboard entry's setting checked against its method's paper evaluation setting.

    `declared_only` names the settings that matched only as the submitter declared them (imported runs do not
    record them): a match that rests on them is never shown as a checked "paper setting"."""

    method: str
    differences: tuple[str, ...]
    declared_only: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        return not self.differences

    def summary(self) -> str:
        """ "paper setting", "paper setting as declared (not recorded by the runs: …)", or "differs from the paper's
        evaluation setting in: …" (one line)."""
        if self.matches and self.declared_only:
            return "paper setting as declared (not recorded by the runs: " + ", ".join(self.declared_only) + ")"
        if self.matches:
            return "paper setting"
        return "differs from the paper's evaluation setting in: " + "; ".join(self.differences)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "matches": self.matches,
            "differences": list(self.differences),
            "declared_only": list(self.declared_only),
        }


def paper_splits(method: str) -> dict[str, str]:
    """The paper's split of each benchmark, read from its `splits` value ("test: nq, popqa; dev: hotpotqa")."""
    text = next((v.value for v in evaluation_setting(method) if v.name == "splits"), "")
    splits: dict[str, str] = {}
    for group in text.split(";"):
        split, _, tasks = group.partition(":")
        splits.update({task.strip(): split.strip() for task in tasks.split(",") if task.strip()})
    return splits


def run_differences(
    method: str,
    tasks: list[str],
    topk: int | None,
    max_turns: int | None,
    *,
    splits: Mapping[str, str | None] | None = None,
    retriever: Collection[str] | None = None,
    corpus: str | None = None,
    subset: str | None = None,
    corpus_label: str | None = None,
) -> list[str]:
    """Where a run's setting differs from the paper's evaluation setting (empty: the paper setting).

    A setting given as None is not checked, nor is one the paper does not state. `splits` maps task → evaluated
    split (a split of None: not recorded); `retriever` holds the normalized names the run's retriever goes by
    (empty: no retriever), checked with `corpus` (normalized, None: not recorded) only where the paper names its
    retriever (`PaperSetting.named_retriever`); `subset` is the run's `--subset` (the papers evaluate whole splits);
    `corpus_label` is how the corpus is printed (`wiki-18 sample, 38,574 passages`; default: `corpus` itself).
    """
    setting = {v.name: v.value for v in evaluation_setting(method)}
    out = []
    outside = [t for t in tasks if "benchmarks" in setting and t not in setting["benchmarks"]]
    if outside:
        out.append(f"benchmarks: {', '.join(outside)} not in the paper's")
    if splits is not None:
        theirs = paper_splits(method)
        other = [
            f"{task} {split or 'not recorded'} (paper {theirs[task]})"
            for task, split in splits.items()
            if task in theirs and split != theirs[task]
        ]
        if other:
            out.append(f"splits: {', '.join(other)}")
    if subset not in (None, "full"):
        out.append(f"subset: {subset} (paper: whole splits)")
    if topk is not None and "topk" in setting and topk != setting["topk"]:
        out.append(f"topk: {topk} (paper {setting['topk']})")
    if max_turns is not None and "max_turns" in setting and max_turns != setting["max_turns"]:
        out.append(f"max_turns: {max_turns} (paper {setting['max_turns']})")
    named_retriever = PAPERS.get(method).named_retriever if method in PAPERS else None
    if retriever is not None and named_retriever is not None:
        named, named_corpus = named_retriever
        if named not in retriever:
            out.append(f"retriever: {', '.join(sorted(retriever)) or 'none'} (paper {named})")
        if named_corpus is not None and corpus != named_corpus:
            out.append(
                f"corpus: {corpus_label or corpus or 'not recorded'} "
                f"(paper {NAMED_CORPORA.get(named_corpus, named_corpus)})"
            )
    return out


# What a run manifest records of its setting, spelled as submissions declare it (the leaderboard checks entries
# with the same functions).


def method_key(name: str) -> str:
    """`Search-R1`, `search_r1` and `search r1` all → `search-r1` (the registry's spelling)."""
    return name_key(name)


def setting_names(*values: Any) -> set[str]:
    """The names given, spelled as `method_key` spells them; empty values left out."""
    return {method_key(str(v)) for v in values if v}


def recorded_settings(manifest: Manifest) -> dict[str, Any]:
    """What a run manifest records of each setting a submission declares (`runs.comparable.recorded_values`): the
    corpus as a `CorpusIdentity` (identified by content), the retriever as the names its kind and its known encoder go
    by."""
    return recorded_values(RunSetting.from_manifest(manifest))


def corpus_key(name: str | None) -> str | None:
    """A *declared* corpus name spelled as `KNOWN_CORPORA` keys it (`wiki-18`, `wiki18.jsonl` → `wiki18`)."""
    return corpus_name_key(name)


def manifest_paper_check(manifest: Manifest) -> PaperCheck | None:
    """A run manifest's setting (tasks, splits, subset, top-k, turns, retriever, corpus) against its method's paper
    evaluation setting; None for a method without one."""
    if manifest.method is None or manifest.method not in PAPERS:
        return None
    setting = RunSetting.from_manifest(manifest)
    differences = run_differences(
        manifest.method,
        list(manifest.tasks),
        manifest.topk,
        manifest.max_turns,
        splits={t: manifest.splits.get(t) for t in manifest.tasks},
        subset=manifest.subset,
        retriever=setting.retriever.keys(),
        # a known corpus by its key; any other by its content ("custom corpus (N passages, sha …)")
        corpus=setting.corpus_key or setting.corpus_label(),
    )
    return PaperCheck(manifest.method, tuple(differences))
