#!/usr/bin/env bash
# vLLM smoke run on a GPU machine with the weights available (hub access or a local directory).
#   MODEL=PeterJinGo/SearchR1-nq_hotpotqa_train-qwen2.5-3b-em-ppo TP=1 scripts/gpu_smoke.sh
# Needs: pip install -e ".[vllm]"; ../shared/data (or DATA_DIR) with bamboogle.test.jsonl and the wiki18 sample corpus.
set -euo pipefail
MODEL="${MODEL:?set MODEL to a hub name or local checkpoint directory}"
TP="${TP:-1}"
DATA_DIR="${DATA_DIR:-../shared/data}"
OUT="${OUT:-runs/gpu-smoke-$(date +%Y%m%d-%H%M%S)}"
INDEX="${INDEX:-runs/gpu-smoke-index}"
python -c "from evalsuite.retrieval import build_index; build_index('$DATA_DIR/corpus/wiki18_sample.jsonl', '$INDEX')" 2>/dev/null || true
evalsuite run --backend vllm --model "$MODEL" --backend-option tensor_parallel_size="$TP" \
  --tasks bamboogle --data-dir "$DATA_DIR/benchmarks" --retriever "$INDEX" --subset first:20 --batch-size 20 -o "$OUT"
python - "$OUT" <<'PY'
import sys
from evalsuite.runs import RunDirectory
records = RunDirectory(sys.argv[1]).read_predictions()
assert len(records) == 20 and all(r.status == "ok" for r in records), "some examples failed"
searched = sum(any(t.query for t in r.turns) for r in records)
print(f"gpu smoke: {len(records)} examples, {searched} searched, answered {sum(r.prediction is not None for r in records)}")
PY
