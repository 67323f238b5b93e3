#!/usr/bin/env bash
# Packs what the GPU check needs into .gpu/bins.tar.xz (ignored by git) for a
# lent GPU machine (the `device` tool of the development sessions, which
# carries at most 64 MiB): libbrisk from build/release, the test executables
# that have GPU tests, and the Debian libraries they link that a bare CUDA
# image lacks (OpenBLAS, oneDNN, gfortran). Run tools/gpu/run.sh there.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
build=${1:-build/release}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/tests" .gpu
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
cp -a "$build"/src/libbrisk.so* "$stage/lib/"
# brisk::text (the BERT tokenizer that examples/embed_sentences and
# bench/brisk_minilm_bench link), when built
if compgen -G "$build/src/libbrisk_text.so*" >/dev/null; then cp -a "$build"/src/libbrisk_text.so* "$stage/lib/"; fi
# the libraries a file links that a bare CUDA image lacks (OpenBLAS, oneDNN,
# Sleef, Gloo and theirs; ICU for brisk::text), from ldd: everything but glibc,
# the compiler runtime and brisk's own (packed above), each once
pack_deps() {
  { ldd "$1" || true; } | awk '/=> \// {print $1, $3}' | while read -r soname path; do
    case $soname in
      libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libstdc++.so.*|libgcc_s.so.*|ld-linux*) ;;
      libbrisk.so*|libbrisk_text.so*) ;;
      *) [[ -e $stage/lib/$soname ]] || cp -L "$path" "$stage/lib/$soname" ;;
    esac
  done
}
pack_deps "$build"/src/libbrisk.so
[[ -e $build/src/libbrisk_text.so ]] && pack_deps "$build"/src/libbrisk_text.so
# every test executable with GPU tests (they skip nothing there)
for t in $(grep -l 'cuda::is_available\|REQUIRE_CUDA' tests/*/test_*.cpp); do
  name=$(basename "$t" .cpp)
  [[ -x $build/tests/$name ]] && cp "$build/tests/$name" "$stage/tests/"
done
# what test_process_group starts (run.sh points it there) and the example
# that checks a whole training step captured in a graph against eager
mkdir -p "$stage/bin"
# and the GPU benchmarks (tools/gpu/run.sh runs them with BENCH=1)
for x in tests/brisk_dist_worker tools/brisk-run examples/cuda_graph_training bench/brisk_cuda_bench \
         bench/brisk_amp_bench bench/brisk_graph_bench examples/embed_sentences bench/brisk_minilm_bench; do
  [[ -x $build/$x ]] && cp "$build/$x" "$stage/bin/" && pack_deps "$build/$x"
done
# KEEP_SYMBOLS=1 keeps libbrisk's symbol table (backtraces under cuda-gdb name its functions)
if [[ ${KEEP_SYMBOLS:-0} == 1 ]]; then
  strip --strip-unneeded "$stage"/tests/* "$stage"/bin/* 2>/dev/null || true
else
  strip --strip-unneeded "$stage"/lib/libbrisk*.so.*.*.* "$stage"/tests/* "$stage"/bin/* 2>/dev/null || true
fi
tar -C "$stage" -cf - . | xz -T2 -6 >.gpu/bins.tar.xz
du -h .gpu/bins.tar.xz
