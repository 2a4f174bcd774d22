"""How often a model follows the Search-R1 protocol, from `evalsuite run` directories (issue 40's probe).

    evalsuite run --model qwen2.5-coder-0.5b --backend xllamacpp --method search-r1 --tasks adqa-single --split train \
      --subset first:30 --retriever adqa --temperature 0 --max-tokens 128 --max-turns 2 -o PROBE/search-r1
    evalsuite run ... --method naive-rag --max-tokens 48 -o PROBE/naive-rag
    python benchmarks/protocol_probe.py PROBE/search-r1 PROBE/naive-rag

Per run directory: trajectories, how many have a turn with a query (search-r1: a `<search>` the model wrote;
naive-rag: always, its retrieval before answering), how many closed an `<answer>`
block in the model's own text, how many stopped with an answer, protocol errors, EM and cover-EM (greedy).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summary(run: Path) -> dict[str, object]:
    rows = [json.loads(line) for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    searched = sum(any(t.get("query") or t.get("sub_queries") for t in r["turns"]) for r in rows)
    tagged = sum("<answer>" in r["trajectory"] and "</answer>" in r["trajectory"] for r in rows)
    return {
        "run": run.name,
        "n": len(rows),
        "with_query": searched,
        "answer_tags": tagged,
        "answered": sum(r["prediction"] is not None for r in rows),
        "protocol_errors": sum(bool(r["protocol_errors"]) for r in rows),
        "em": sum(r["metrics"].get("em", 0.0) for r in rows),
        "cover_em": sum(r["metrics"].get("cover_em", 0.0) for r in rows),
    }


if __name__ == "__main__":
    for directory in sys.argv[1:]:
        print(json.dumps(summary(Path(directory))))
