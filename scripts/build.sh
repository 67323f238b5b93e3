#!/usr/bin/env bash
# Configures (first time only) and builds one CMake preset.
#
#   scripts/build.sh PRESET [TARGET...]    # PRESET: release, asan or dev
#
# The build directory is build/PRESET. Once it holds build.ninja it is not
# configured again (ninja re-runs CMake by itself when a CMakeLists.txt
# changes); delete it to pick up edited presets. Compiles go through ccache
# when it is installed, with paths made relative to the checkout so that two
# clones share cache entries.
set -euo pipefail

if (( $# < 1 )); then
  sed -n '2,4s/^# \{0,1\}//p' "$0" >&2
  exit 2
fi
preset=$1
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# The tests share a precompiled header (cmake/BriskTestTargets.cmake), which
# ccache caches only with this sloppiness.
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros}

if [[ ! -f build/$preset/build.ninja ]]; then
  log=$(mktemp)
  if ! cmake --preset "$preset" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "build: configuring preset '$preset' failed" >&2
    exit 1
  fi
  grep -E '^-- brisk|Warning|warning' "$log" || true
  rm -f "$log"
fi

targets=()
(( $# )) && targets=(--target "$@")
cmake --build --preset "$preset" "${targets[@]}"
