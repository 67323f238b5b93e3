#!/usr/bin/env bash
# The main program on a fresh machine: installs what is missing, builds the
# release preset's demo and runs it. Re-runs are fast (no reconfigure, ccache).
#
#   scripts/run-demo.sh [--nproc N] [demo options...]
#
# --nproc N trains with N processes (DistributedDataParallel over Gloo, or
# over NCCL with --device cuda, one GPU per process; started by brisk-run, as
# torchrun would); the rest goes to the demo (--help lists its options).
set -euo pipefail
demo=train_fashion_mnist    # examples/<demo>.cpp
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

nproc=1
args=()
while (( $# > 0 )); do
  case "$1" in
    --nproc) nproc=${2:?--nproc needs a number}; shift 2 ;;
    --nproc=*) nproc=${1#--nproc=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done

# All deps, PyTorch included: build/release is configured once, and a
# configure without libtorch would leave the parity tests out of later
# scripts/run-tests.sh runs.
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release "$demo" brisk-run
# The checkpoint lives in build/: a second run resumes from it (--fresh
# starts over; --help lists the options).
exe="$root/build/release/examples/$demo"
if (( nproc > 1 )); then
  port=${MASTER_PORT:-$((29500 + RANDOM % 1000))}
  exec "$root/build/release/tools/brisk-run" --nproc-per-node "$nproc" --master-port "$port" \
    "$exe" --checkpoint-dir "$root/build" "${args[@]}"
fi
exec "$exe" --checkpoint-dir "$root/build" "${args[@]}"
