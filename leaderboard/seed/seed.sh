#!/usr/bin/env bash
# Re-creates the seeded verified entries of leaderboard/entries/ from the real Search-R1 trajectories in shared/data.
# Usage (from the repository root): bash leaderboard/seed/seed.sh [SHARED_DATA_DIR]
set -euo pipefail
DATA="${1:-../shared/data}"
SEED="leaderboard/seed"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export EVALSUITE_DATA_DIR="$DATA/benchmarks"
T="$DATA/trajectories"

# 1. Import and rescore the published checkpoints' outputs (FlashRAG-style metrics) into run directories.
evalsuite score "$T"/*.json -o "$WORK/scored" > /dev/null
S="$WORK/scored"

# 2. Pack one submission per system (NQ and TriviaQA outputs cover reason_over_search's 1,000-question subsamples).
evalsuite submit "$S/bamboogle_2026_04_28_16_36_search_r1_base_seed1" "$S/nq_2026_04_28_16_43_search_r1_base_seed1" \
  "$S/triviaqa_2026_04_28_17_40_search_r1_base_seed1" --split nq=test_sub1000 --split triviaqa=test_sub1000 \
  --info "$SEED/search-r1-base-seed1.yaml" -o "$WORK/base-seed1"
evalsuite submit "$S/bamboogle_2026_04_29_06_48_search_r1_instruct_seed1" --info "$SEED/search-r1-instruct-seed1.yaml" -o "$WORK/instruct-seed1"
evalsuite submit "$S/bamboogle_2026_04_24_16_17_search_r1_base" --info "$SEED/search-r1-base-top5.yaml" -o "$WORK/base-top5"
evalsuite submit "$S/bamboogle_2026_04_24_17_37_search_r1_instruct" --info "$SEED/search-r1-instruct-top5.yaml" -o "$WORK/instruct-top5"

# 3. Verify against the registry's gold answers and file them under leaderboard/entries/<entry-id>/.
for sub in base-seed1 instruct-seed1 base-top5 instruct-top5; do
  evalsuite leaderboard add "$WORK/$sub" --leaderboard leaderboard --overwrite
done
