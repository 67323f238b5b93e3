#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: unpacks .gpu/bins.tar.xz (tools/gpu/pack.sh)
# and runs every test executable in it, one line per executable; the whole
# output goes to $OUT/gpu-tests.log when OUT is set. Extra arguments go to
# each test (e.g. --gtest_filter=...).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
tar -C "$dir" -xJf "$root/.gpu/bins.tar.xz"
# cuBLAS/cuDNN/CUPTI: the toolkit's, else the pip wheels' (the CUDA image has both)
extra=$(find / -path /proc -prune -o \( -name 'libcudnn.so.*' -o -name 'libcublas.so.*' -o -name 'libcupti.so.*' \) -print 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$dir/lib:${extra}${LD_LIBRARY_PATH:-}"
export BRISK_TEST_DIR="$root/tests"
log=${OUT:-/tmp}/gpu-tests.log
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$log"
echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee -a "$log"
status=0
for t in "$dir"/tests/test_*; do
  name=$(basename "$t")
  start=$SECONDS
  timeout 300 "$t" "$@" >"$dir/$name.log" 2>&1
  rc=$?
  cat "$dir/$name.log" >>"$log"
  summary=$(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$dir/$name.log" | tr '\n' ' ')
  skipped=$(grep -c '^\[  SKIPPED \]' "$dir/$name.log")
  printf '%-32s rc=%-3s %4ss skipped=%-3s %s\n' "$name" "$rc" $((SECONDS - start)) "$skipped" "$summary"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$dir/$name.log" | head -20
  (( rc == 0 )) || status=1
done
exit $status
