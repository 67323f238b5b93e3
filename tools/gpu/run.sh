#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: unpacks .gpu/bins.tar.xz (tools/gpu/pack.sh)
# and runs every test executable in it, several at once (JOBS, default 6),
# then prints one line per executable and the failed tests; the whole output
# goes to $OUT/gpu-tests.log when OUT is set. Extra arguments go to each
# test (e.g. --gtest_filter=...). TEST_TIMEOUT (default 240 s) bounds each.
# SANITIZE="test_a test_b" then runs those under compute-sanitizer memcheck;
# GDB="test_a" runs those under cuda-gdb and prints the backtrace of a crash;
# BENCH=1 then runs the GPU benchmarks (bench/cuda/run.sh against the
# machine's PyTorch, whose libtorch side builds while the tests run; the
# table goes to $OUT/gpu-bench.log too); BENCHES= runs the others (below).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d)
tar -C "$dir" -xJf "$root/.gpu/bins.tar.xz"
# cuBLAS/cuDNN/CUPTI: the toolkit's, else the pip wheels' (the CUDA image has both)
extra=$(find / \( -path /proc -o -path /sys \) -prune -o \( -name 'libcudnn.so.*' -o -name 'libcublas.so.*' -o -name 'libcupti.so.*' -o -name 'libnvrtc.so.*' \) -print 2>/dev/null | xargs -r -n1 dirname | sort -u | tr '\n' ':')
export LD_LIBRARY_PATH="$dir/lib:${extra}${LD_LIBRARY_PATH:-}"
# compile's generated CUDA kernels: NVRTC reads brisk's codegen headers from
# this tree and cuda_fp16.h / libcu++ (cccl/) from a toolkit or the wheels
export BRISK_CODEGEN_DIR="$root"
if [[ ! -f ${CUDA_HOME:-/usr/local/cuda}/include/cuda_fp16.h ]]; then
  inc=$(find / \( -path /proc -o -path /sys \) -prune -o -name cuda_fp16.h -print 2>/dev/null | while read -r h; do
    [[ -d $(dirname "$h")/cccl ]] && dirname "$(dirname "$h")" && break; done)
  [[ -n $inc ]] && export CUDA_HOME="$inc"
fi
export BRISK_TEST_DIR="$root/tests" PYTHONUNBUFFERED=1
# test_process_group's workers and launcher, from the pack (not the build tree's paths)
export BRISK_DIST_WORKER_EXE="$dir/bin/brisk_dist_worker" BRISK_RUN_EXE_PATH="$dir/bin/brisk-run"
log=${OUT:-/tmp}/gpu-tests.log
if [[ ${BENCH:-0} == 1 ]]; then
  bash "$root/bench/cuda/run.sh" --build-torch "$dir/torch_cuda_bench" >"$dir/torch_build.log" 2>&1 &
  torch_build=$!
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$log"
echo "tree $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee -a "$log"
start=$SECONDS
# TESTS="test_a test_b": only those executables
if [[ -n ${TESTS:-} ]]; then
  for t in "$dir"/tests/test_*; do [[ " $TESTS " == *" $(basename "$t") "* ]] || rm -f "$t"; done
fi
ls "$dir"/tests/test_* | xargs -P "${JOBS:-6}" -I{} sh -c \
  'timeout '"${TEST_TIMEOUT:-240}"' "$0" "$@" > "$0.log" 2>&1; echo $? > "$0.rc"' {} "$@"
status=0
for t in "$dir"/tests/test_*; do
  [[ $t == *.log || $t == *.rc ]] && continue
  name=$(basename "$t")
  rc=$(cat "$t.rc")
  cat "$t.log" >>"$log"
  summary=$(grep -E '^\[  (PASSED|FAILED)  \]|tests? ran' "$t.log" | tr '\n' ' ')
  skipped=$(grep -c '^\[  SKIPPED \]' "$t.log")
  printf '%-28s rc=%-3s skipped=%-3s %s\n' "$name" "$rc" "$skipped" "$summary"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$t.log" | head -20
  (( rc == 0 )) || status=1
done
echo "all tests: $((SECONDS - start)) s"
# a whole training step as one CUDA graph, and make_graphed_callables, against eager
if [[ -x $dir/bin/cuda_graph_training ]]; then
  timeout "${TEST_TIMEOUT:-240}" "$dir/bin/cuda_graph_training" --steps 20 --batch 128 2>&1 | tee -a "$log" ||
    { echo "cuda_graph_training FAILED"; status=1; }
fi
for t in ${GDB:-}; do
  echo "cuda-gdb: $t"
  timeout "${SANITIZE_TIMEOUT:-120}" cuda-gdb -q -batch -ex 'set pagination off' -ex run -ex bt -ex 'info sharedlibrary' \
    --args "$dir/tests/$t" >"$dir/$t.gdb.log" 2>&1
  cat "$dir/$t.gdb.log" >>"$log"
  grep -E -A40 'received signal|SIGSEGV|SIGABRT' "$dir/$t.gdb.log" | grep -E '^#|signal' | head -40
done

if [[ ${BENCH:-0} == 1 ]]; then
  wait "$torch_build" || { cat "$dir/torch_build.log"; echo "the libtorch bench did not build"; }
  mkdir -p "$dir/bench" && ln -sf ../bin/brisk_cuda_bench "$dir/bench/brisk_cuda_bench"
  TORCH_CUDA_BENCH="$dir/torch_cuda_bench" bash "$root/bench/cuda/run.sh" "$dir" 2>&1 | tee "${OUT:-/tmp}/gpu-bench.log"
fi
# BENCHES="graph amp minilm": the benchmarks of issues 17, 16 and 20 against
# the machine's PyTorch (each table to $OUT/gpu-bench-NAME.log)
for b in ${BENCHES:-}; do
  blog=${OUT:-/tmp}/gpu-bench-$b.log
  echo "== bench $b"
  case $b in
    graph) timeout 150 python3 "$root/bench/cuda/graph_bench.py" --brisk "$dir/bin/brisk_graph_bench" ${GRAPH_BENCH_ARGS:-} ;;
    amp) timeout 200 python3 "$root/bench/amp_bench.py" --brisk "$dir/bin/brisk_amp_bench" --device cuda ;;
    minilm) timeout 200 bash "$root/tools/gpu/minilm_bench.sh" "$dir" ;;
    *) echo "unknown bench $b" ;;
  esac >"$blog" 2>&1 || { echo "bench $b FAILED"; status=1; }
  grep -E '^\|' "$blog" || tail -20 "$blog"
done
# compute-sanitizer memcheck (SANITIZE=all: every test executable), in
# parallel, each under its own timeout
[[ ${SANITIZE:-} == all ]] && SANITIZE=$(cd "$dir/tests" && ls | grep -v '\.')
for t in ${SANITIZE:-}; do
  timeout "${SANITIZE_TIMEOUT:-120}" compute-sanitizer --tool memcheck --error-exitcode 99 "$dir/tests/$t" \
    >"$dir/$t.memcheck.log" 2>&1 &
done
wait
for t in ${SANITIZE:-}; do
  rc=0; grep -q 'ERROR SUMMARY: 0 errors' "$dir/$t.memcheck.log" || rc=1
  cat "$dir/$t.memcheck.log" >>"$log"
  printf 'memcheck %-24s %s %s\n' "$t" "$(grep -E '^\[  (PASSED|FAILED)  \]|ERROR SUMMARY' "$dir/$t.memcheck.log" | tr '\n' ' ')" \
    "$( ((rc == 0)) || echo '(no clean summary: errors or timed out)')"
  (( rc == 0 )) || status=1
done
exit $status
