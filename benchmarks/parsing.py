"""Response parsing speed: `get_method("search-r1").parse` against Search-R1's own regular expressions.

    python benchmarks/parsing.py [--trajectories DIR]

The named alternative is what Search-R1's code runs on a response: `re.finditer(r"<information>(.*?)</information>")` to
find observations, `re.search(r"<(search|answer)>(.*?)</\\1>")` per turn for the action and
`re.findall(r"<answer>(.*?)</answer>")` for the answer. Those lazy `.*?` patterns rescan the rest of the text from
every unclosed opening tag, so their time grows with the square of the length on tag floods; evalsuite's parser scans
with `str.find` only.

1. All recorded Search-R1 responses in ../shared/data/trajectories (real model text): total time, both ways.
2. Tag floods (`<answer>` and `<information>` repeated, never closed) at growing sizes: both ways, and their ratio.
3. The 10 MB adversarial inputs of tests/parsing/test_response_shapes.py: evalsuite's parser only (the regexes would
   take hours).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from evalsuite.agent.method import get_method

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_INFORMATION = re.compile(r"<information>(.*?)</information>", re.DOTALL)
_ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def regex_parse(text: str) -> tuple[list[str | None], str | None]:
    """Search-R1's regexes over a response: the action of each stretch between observations, and the last answer."""
    actions = []
    for segment in _INFORMATION.split(text)[::2]:
        match = _ACTION.search(segment)
        actions.append(match.group(2).strip() if match else None)
    answers = _ANSWER.findall(text)
    return actions, answers[-1].strip() if answers else None


def timed(function, inputs) -> float:
    start = time.perf_counter()
    for text in inputs:
        function(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=Path, default=ROOT.parent / "shared" / "data" / "trajectories")
    args = parser.parse_args()
    method = get_method("search-r1")

    responses = [item["output"]["final_response"] for path in sorted(args.trajectories.glob("*.json")) for item in json.loads(path.read_text())]
    ours, theirs = timed(method.parse, responses), timed(regex_parse, responses)
    megabytes = sum(map(len, responses)) / 1e6
    print(f"1. {len(responses)} real responses ({megabytes:.1f} MB): evalsuite parse {ours:.2f} s, Search-R1 regexes {theirs:.2f} s "
          f"(evalsuite does more: passages, think spans, protocol errors; ratio {ours / theirs:.2f})")

    print("2. tag floods, never closed:")
    for unit in ("<answer>", "<information>"):
        for size in (10_000, 20_000, 40_000):
            text = unit * (size // len(unit))
            ours, theirs = timed(method.parse, [text]), timed(regex_parse, [text])
            print(f"   {unit!s:14} {size / 1000:>5.0f} KB: evalsuite {1000 * ours:8.1f} ms, Search-R1 regexes {1000 * theirs:9.1f} ms, {theirs / ours:7.0f}x")

    from tests.parsing.test_response_shapes import MB, huge_inputs

    inputs = huge_inputs(10 * MB)
    start = time.perf_counter()
    for text in inputs:
        method.parse(text)
    print(f"3. {len(inputs)} adversarial 10 MB responses: evalsuite parse {time.perf_counter() - start:.2f} s in all")


if __name__ == "__main__":
    main()
