"""The approximate token count (backends without a tokenizer: replay, HTTP endpoints) counts exactly what its
definition counts, the matches of its regex (tests/text_definitions.py): on hand-counted text, on random text of every
character class, ASCII or not, and on every prompt, turn and passage of the recorded trajectories."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from text_definitions import approx_token_count_by_definition as counted_by_definition

from evalsuite.models.base import approx_token_count


def test_hand_counted_text():
    # Hello , world ! It ' s 3 . 5 km .
    assert approx_token_count("Hello, world! It's 3.5 km.") == 12
    # Café – “ quoted ” 北京 (the dash and the curly quotes are marks, the letters of every script word characters)
    assert approx_token_count("Café – “quoted” 北京") == 6
    assert approx_token_count("snake_case\tx\x1fy") == 3  # "_" is a word character; \x1f is white space
    assert approx_token_count("a\x00b") == 3  # a control character that is not white space is a mark
    assert approx_token_count("") == 0
    assert approx_token_count("   \n ") == 0


# Characters of every class, in and out of ASCII: letters, digits, marks, white space, control characters, combining
# accents, CJK, fullwidth punctuation, a lone surrogate.
_CHARACTERS = st.sampled_from(list("ab Z09_.,'\"<>/\t\n\x0b\x1c\x1f\x00\x7féü\u0301–—“”’北京，。\u3000\u00a0\ud800"))


@settings(max_examples=400, deadline=None)
@given(st.text(_CHARACTERS, max_size=40) | st.text(max_size=40))
def test_same_count_as_the_definition_on_any_text(text: str):
    assert approx_token_count(text) == counted_by_definition(text)


def test_same_count_on_every_recorded_text(trajectories_dir: Path):
    texts = []
    for path in sorted(trajectories_dir.glob("*.json")):
        for example in json.loads(path.read_text(encoding="utf-8")):
            texts += [example["output"]["query"], example["output"]["final_response"], example["question"]]
    assert len(texts) == 7500 and any(not text.isascii() for text in texts)
    assert [approx_token_count(t) for t in texts] == [counted_by_definition(t) for t in texts]
