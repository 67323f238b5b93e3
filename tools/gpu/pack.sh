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
for l in libsleef.so.3 libopenblas.so.0 libdnnl.so.2 libgfortran.so.5 libquadmath.so.0 libgomp.so.1 libOpenCL.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$l" "$stage/lib/"
done
# every test executable with GPU tests (they skip nothing there)
for t in $(grep -l 'cuda::is_available\|REQUIRE_CUDA' tests/*/test_*.cpp); do
  name=$(basename "$t" .cpp)
  [[ -x $build/tests/$name ]] && cp "$build/tests/$name" "$stage/tests/"
done
strip --strip-unneeded "$stage"/lib/libbrisk.so.*.*.* "$stage"/tests/* 2>/dev/null || true
tar -C "$stage" -cf - . | xz -T2 -6 >.gpu/bins.tar.xz
du -h .gpu/bins.tar.xz
