"""A wiki-18-shaped corpus at full size: 21,015,324 passages, written as a stream, deterministic from a seed.

wiki-18 itself (DPR's psgs_w100, Search-R1's corpus) cannot be downloaded here, and the derived corpora of
`retrieval_scale.py` reuse the vocabulary of a few thousand real passages (about 100,000 terms), which
underestimates every vocabulary-driven cost. This generator grows its vocabulary as natural text does:

- **Vocabulary (Heaps' law).** After t tokens the expected number of distinct terms is K * t**beta, with K and beta
  fitted on the real passages (`--fit`). The token at position t is a new term with probability
  d/dt K t**beta = K beta t**(beta - 1); otherwise it repeats a known term.
- **Term frequencies (Zipf).** A repeated term's rank r (1 = the first term ever seen) is drawn from a Zipf law of
  exponent s, fitted on the real rank-frequency curve (ranks 10 to 10,000), truncated to the terms known so far
  (inverse CDF of the continuous law, floored). Early terms are the frequent ones, as in text.
- **Lengths.** Text lengths in words follow the empirical distribution of the real wiki-18 passages in the shared
  sample (94% are exactly 100 words, the rest the last chunk of an article); titles follow the real titles' lengths.
  The sample's passages were retrieved by Search-R1 runs, so its short-chunk share may differ from the whole of
  wiki-18's; the passage count and the 100-word chunking are wiki-18's own.
- **Format.** wiki-18's: ids "1" .. "21015324", `contents` = '"Title"\\ntext' (FlashRAG's corpus format, which
  `evalsuite index build` reads). Terms are pronounceable lower-case strings made from the term's rank (consonant +
  vowel syllables, no 'e', 'y' or 's', so English stemmers leave almost all of them alone: of the first 991,347
  ranks, Snowball merges 6 pairs, such as bilogi and bilogiti, so the 1 M index has 6 terms fewer).

The defaults below are the fit on the real corpus (38,574 passages, 3,564,120 tokens). `--check N` generates N
passages and prints their statistics beside the real corpus's at equal size; `--fit` refits from the real corpus.

    python benchmarks/wiki18_corpus.py -o /tmp/wiki18_synth.jsonl            # all 21,015,324 passages
    python benchmarks/wiki18_corpus.py -n 100000 -o /tmp/synth_100k.jsonl
    python benchmarks/wiki18_corpus.py --check 38574                         # statistics against the real corpus
    python benchmarks/wiki18_corpus.py --fit                                 # refit K, beta, s from the real corpus
    python benchmarks/wiki18_corpus.py --vocabulary                          # distinct terms at 0.1 M ... 21 M
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("EVALSUITE_SHARED_DATA", REPO.parent / "shared" / "data"))
WIKI18_PASSAGES = 21_015_324
CHUNK = 4096  # passages drawn per numpy call; part of the seed's meaning (another chunk size, another corpus)
TOKEN = re.compile(r"\w+")

# The fit on ../shared/data/corpus (`--fit` prints the same numbers): title and text tokens, lower-cased \w+ runs.
HEAPS_K = 11.24
HEAPS_BETA = 0.6176
ZIPF_S = 1.093
# text length in words -> count, over the real wiki-18 passages of corpus/wiki18_sample.jsonl
TEXT_LENGTHS = {
    5: 1, 14: 1, 17: 1, 19: 1, 20: 1, 22: 1, 25: 2, 26: 1, 27: 1, 28: 2, 29: 1, 30: 1, 31: 2, 32: 3, 34: 1, 35: 1,
    36: 3, 38: 1, 39: 2, 40: 1, 42: 1, 43: 3, 44: 1, 45: 1, 46: 1, 47: 1, 48: 1, 49: 2, 51: 4, 52: 1, 53: 1, 54: 7,
    55: 3, 56: 3, 57: 5, 58: 1, 59: 7, 60: 6, 61: 4, 62: 3, 63: 8, 64: 7, 65: 8, 66: 6, 67: 5, 68: 9, 69: 9, 70: 6,
    71: 10, 72: 14, 73: 5, 74: 7, 75: 6, 76: 9, 77: 11, 78: 18, 79: 10, 80: 9, 81: 12, 82: 12, 83: 14, 84: 20,
    85: 19, 86: 14, 87: 19, 88: 16, 89: 24, 90: 30, 91: 27, 92: 32, 93: 19, 94: 30, 95: 22, 96: 22, 97: 30, 98: 37,
    99: 28, 100: 10139, 102: 2, 107: 1, 108: 1, 109: 1, 160: 1,
}  # fmt: skip
# title length in words -> count, over every real passage's title
TITLE_LENGTHS = {
    1: 3440, 2: 14738, 3: 9030, 4: 5164, 5: 3151, 6: 1711, 7: 848, 8: 282, 9: 126, 10: 51, 11: 12, 12: 9, 13: 4,
    14: 6, 18: 2,
}  # fmt: skip

ONSETS = "bdfgklmnprtvz"
VOWELS = "aiou"
SYLLABLES = [c + v for c in ONSETS for v in VOWELS]  # 52


@dataclass(frozen=True)
class CorpusShape:
    """The parameters the generator draws from (the defaults are the fit on the real corpus)."""

    heaps_k: float = HEAPS_K
    heaps_beta: float = HEAPS_BETA
    zipf_s: float = ZIPF_S


def term(rank: int) -> str:
    """The term of a rank: its base-52 digits as syllables, at least two, so no term is an English stop word."""
    digits = []
    n = rank
    while True:
        n, d = divmod(n, len(SYLLABLES))
        digits.append(SYLLABLES[d])
        if n == 0:
            break
    if len(digits) < 2:
        digits.append(SYLLABLES[0])
    return "".join(reversed(digits))


def _lengths(table: dict[int, int], rng: np.random.Generator, n: int) -> np.ndarray:
    values = np.fromiter(table, dtype=np.int64)
    weights = np.fromiter(table.values(), dtype=np.float64)
    return rng.choice(values, size=n, p=weights / weights.sum())


class TermStream:
    """Draws term ranks token by token so that distinct terms follow Heaps' law and repeats follow Zipf's."""

    def __init__(self, shape: CorpusShape, rng: np.random.Generator) -> None:
        self.shape = shape
        self.rng = rng
        self.tokens = 0  # tokens drawn so far
        self.vocabulary = 0  # distinct terms so far (ranks 1..vocabulary)

    def draw(self, n: int) -> np.ndarray:
        """The ranks of the next n tokens."""
        k, beta, s = self.shape.heaps_k, self.shape.heaps_beta, self.shape.zipf_s
        t = np.arange(self.tokens + 1, self.tokens + n + 1, dtype=np.float64)
        p_new = np.minimum(1.0, k * beta * t ** (beta - 1.0))
        new = self.rng.random(n) < p_new
        known = self.vocabulary + np.cumsum(new)  # vocabulary after each token, the new one included
        # a repeat draws from the terms known before it (at least one: the first token is always new, p_new = 1)
        before = np.maximum(known - new, 1).astype(np.float64)
        u = self.rng.random(n)
        top = (before + 1.0) ** (1.0 - s)
        ranks = np.floor((1.0 + u * (top - 1.0)) ** (1.0 / (1.0 - s))).astype(np.int64)
        ranks = np.minimum(ranks, before.astype(np.int64))
        ranks = np.where(new, known, ranks)
        self.tokens += n
        self.vocabulary = int(known[-1])
        return ranks


def passages(n: int = WIKI18_PASSAGES, seed: int = 0, shape: CorpusShape | None = None) -> Iterator[dict[str, str]]:
    """The first n passages of the corpus of `seed`, one dict at a time (nothing of size n is held in memory)."""
    rng = np.random.default_rng(seed)
    stream = TermStream(shape or CorpusShape(), rng)
    words: dict[int, str] = {}  # rank -> term, for the frequent ranks that repeat most
    done = 0
    while done < n:
        # always a whole chunk, so the first n passages of a longer corpus are the corpus of n
        title_lengths = _lengths(TITLE_LENGTHS, rng, CHUNK)
        text_lengths = _lengths(TEXT_LENGTHS, rng, CHUNK)
        ranks = stream.draw(int(title_lengths.sum() + text_lengths.sum()))
        at = 0
        for i in range(min(CHUNK, n - done)):
            row = []
            for length in (int(title_lengths[i]), int(text_lengths[i])):
                chunk = ranks[at : at + length].tolist()
                at += length
                row.append(" ".join(words.get(r) or _remember(words, r) for r in chunk))
            title, text = row
            done += 1
            yield {"id": str(done), "title": title, "text": text}


def vocabulary_growth(n: int, seed: int, marks: list[int]) -> list[tuple[int, int, int]]:
    """(passages, tokens, distinct terms) of the corpus's first `mark` passages, for each mark up to n. It draws what
    `passages` draws (the same generator calls in the same order) without making any text, so the full corpus's
    vocabulary takes a minute, not the time it takes to write the corpus. New terms take the next rank, so the
    distinct terms of a prefix are the largest rank in it."""
    rng = np.random.default_rng(seed)
    stream = TermStream(CorpusShape(), rng)
    pending = sorted(m for m in marks if 0 < m <= n)
    out: list[tuple[int, int, int]] = []
    done = tokens = distinct = 0
    while done < n:
        lengths = _lengths(TITLE_LENGTHS, rng, CHUNK) + _lengths(TEXT_LENGTHS, rng, CHUNK)
        ranks = stream.draw(int(lengths.sum()))
        ends = np.cumsum(lengths)  # where each passage's tokens end in `ranks`
        take = min(CHUNK, n - done)
        while pending and pending[0] <= done + take:
            cut = int(ends[pending[0] - done - 1])
            out.append((pending.pop(0), tokens + cut, max(distinct, int(ranks[:cut].max(initial=0)))))
        used = int(ends[take - 1])
        distinct, tokens, done = max(distinct, int(ranks[:used].max(initial=0))), tokens + used, done + take
    return out


def _remember(words: dict[int, str], rank: int) -> str:
    word = term(rank)
    if rank < 2_000_000:  # about 150 MB at most: the frequent ranks, which are most of the tokens
        words[rank] = word
    return word


def write(path: Path, n: int, seed: int) -> None:
    """Stream n passages to path as JSON lines; the file appears under its name only when complete."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        for i, passage in enumerate(passages(n, seed), 1):
            # wiki-18's own rows: id and contents only
            contents = f'"{passage["title"]}"\n{passage["text"]}'
            handle.write(json.dumps({"id": passage["id"], "contents": contents}, ensure_ascii=False) + "\n")
            if i % 1_000_000 == 0:
                print(f"{i:,} passages", file=sys.stderr, flush=True)
    partial.replace(path)


@dataclass
class TextStatistics:
    """What the check compares: size, vocabulary growth, term frequencies and lengths."""

    passages: int
    tokens: int
    distinct: int
    heaps_k: float
    heaps_beta: float
    zipf_s: float
    text_length_percentiles: list[float]
    title_length_mean: float
    share_of_100_words: float


def statistics(rows: Iterator[tuple[str, str]], every: int = 1000) -> TextStatistics:
    """Statistics of (title, text) pairs, tokenized as lower-cased \\w+ runs (the same for both corpora)."""
    counts: Counter[str] = Counter()
    tokens = 0
    curve_t: list[int] = []
    curve_v: list[int] = []
    text_lengths: list[int] = []
    title_lengths: list[int] = []
    for i, (title, text) in enumerate(rows, 1):
        text_lengths.append(len(text.split()))
        title_lengths.append(len(title.split()))
        words = TOKEN.findall(title.lower()) + TOKEN.findall(text.lower())
        counts.update(words)
        tokens += len(words)
        if i % every == 0:
            curve_t.append(tokens)
            curve_v.append(len(counts))
    beta, log_k = np.polyfit(np.log(curve_t), np.log(curve_v), 1)
    frequencies = np.array(sorted(counts.values(), reverse=True), dtype=np.float64)
    ranks = np.arange(1, len(frequencies) + 1)
    window = (ranks >= 10) & (ranks <= 10_000)
    slope, _ = np.polyfit(np.log(ranks[window]), np.log(frequencies[window]), 1)
    lengths = np.array(text_lengths)
    return TextStatistics(
        passages=len(text_lengths),
        tokens=tokens,
        distinct=len(counts),
        heaps_k=float(np.exp(log_k)),
        heaps_beta=float(beta),
        zipf_s=float(-slope),
        text_length_percentiles=[float(p) for p in np.percentile(lengths, [5, 25, 50, 75, 95])],
        title_length_mean=float(np.mean(title_lengths)),
        share_of_100_words=float(np.mean(lengths == 100)),
    )


def real_rows(corpus_dir: Path, pattern: str = "*.jsonl") -> Iterator[tuple[str, str]]:
    """(title, text) of the real passages in the files matching pattern, in a fixed order."""
    for path in sorted(corpus_dir.glob(pattern)):
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                doc = json.loads(line)
                yield doc["title"], doc["text"]


def generated_rows(n: int, seed: int) -> Iterator[tuple[str, str]]:
    for passage in passages(n, seed):
        yield passage["title"], passage["text"]


def print_comparison(real: TextStatistics, synthetic: TextStatistics) -> None:
    print(f"{'statistic':32} {'real':>16} {'generated':>16}")
    for field in TextStatistics.__dataclass_fields__:
        a, b = getattr(real, field), getattr(synthetic, field)
        if isinstance(a, list):
            a, b = "/".join(f"{x:g}" for x in a), "/".join(f"{x:g}" for x in b)
        elif isinstance(a, float):
            a, b = f"{a:.4g}", f"{b:.4g}"
        print(f"{field:32} {a!s:>16} {b!s:>16}")


def _mean(table: dict[int, int]) -> float:
    return sum(k * v for k, v in table.items()) / sum(table.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=WIKI18_PASSAGES, help="passages to write (default: wiki-18's count)")
    parser.add_argument("-o", "--output", type=Path, help="where to write the JSONL corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--check", type=int, metavar="N", help="compare N generated passages with the real corpus")
    parser.add_argument("--fit", action="store_true", help="fit K, beta and s on the real corpus and print them")
    parser.add_argument("--corpus-dir", type=Path, default=SHARED / "corpus")
    parser.add_argument(
        "--vocabulary", action="store_true", help="print the distinct terms of prefixes up to -n, writing no text"
    )
    args = parser.parse_args(argv)
    if args.vocabulary:
        marks = [m for m in (100_000, 1_000_000, 5_000_000, 10_000_000) if m < args.n] + [args.n]
        print(f"{'passages':>12} {'tokens':>15} {'distinct terms':>15} {'K * tokens^beta':>16}")
        for passages_, tokens, distinct in vocabulary_growth(args.n, args.seed, marks):
            print(f"{passages_:>12,} {tokens:>15,} {distinct:>15,} {HEAPS_K * tokens**HEAPS_BETA:>16,.0f}")
        return 0
    if args.fit or args.check:
        if not args.corpus_dir.is_dir():
            print(f"error: no real corpus at {args.corpus_dir} (set EVALSUITE_SHARED_DATA)", file=sys.stderr)
            return 2
        real = statistics(real_rows(args.corpus_dir))
        if args.fit:
            print(f"HEAPS_K = {real.heaps_k:.2f}\nHEAPS_BETA = {real.heaps_beta:.4f}\nZIPF_S = {real.zipf_s:.3f}")
        if args.check:
            print("vocabulary: all real passages; lengths: the real wiki-18 passages (wiki18_sample.jsonl)")
            lengths = statistics(real_rows(args.corpus_dir, "wiki18_sample.jsonl"))
            real.text_length_percentiles = lengths.text_length_percentiles
            real.share_of_100_words = lengths.share_of_100_words
            print_comparison(real, statistics(generated_rows(args.check, args.seed)))
            per_passage = _mean(TEXT_LENGTHS) + _mean(TITLE_LENGTHS)
            full = HEAPS_K * (WIKI18_PASSAGES * per_passage) ** HEAPS_BETA
            print(
                f"distinct terms expected at {WIKI18_PASSAGES:,} passages ({per_passage:.1f} tokens each): {full:,.0f}"
            )
        return 0
    if args.output is None:
        parser.error("-o/--output is required to write a corpus")
    write(args.output, args.n, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
