#!/usr/bin/env bash
# On a GPU machine, after tools/gpu/run.sh unpacked the pack to DIR (its
# libraries on LD_LIBRARY_PATH): all-MiniLM-L6-v2's architecture with seeded
# random weights (the real 87 MB file cannot travel to a lent machine;
# tools/gpu/minilm/README.md), brisk against sentence-transformers/PyTorch
# on CUDA at batch 1 and 8, 128 tokens: eager, brisk's GraphRunner and
# PyTorch's CUDA graph, and the embeddings against sentence-transformers.
#   tools/gpu/minilm_bench.sh DIR
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${1:?usage: tools/gpu/minilm_bench.sh UNPACKED_PACK_DIR}
model=$(mktemp -d)/minilm-random
python3 "$root/tools/gpu/minilm_random.py" "$model" --std 0.05
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 "$root/bench/minilm_bench.py" --device cuda --brisk "$dir/bin/brisk_minilm_bench" --model "$model" \
  --batches 1,8 --threads 1
