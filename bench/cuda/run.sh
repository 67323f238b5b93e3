#!/usr/bin/env bash
# GPU benchmarks, brisk against the PyTorch installed on the machine:
#   bench/cuda/run.sh BRISK_BUILD_DIR
#   bench/cuda/run.sh --build-torch EXE   (only builds the libtorch side; pass
#                                          it back with TORCH_CUDA_BENCH=EXE)
# BRISK_BUILD_DIR holds a build with -DBRISK_BUILD_BENCH=ON (bench/cuda/brisk_cuda_bench).
# Builds bench/cuda/torch_cuda_bench.cpp against torch's C++ headers and
# libraries, runs both and prints a markdown table of the figures and ratios.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:?usage: bench/cuda/run.sh BRISK_BUILD_DIR | --build-torch EXE}
torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))')
torch_version=$(python3 -c 'import torch; print(torch.__version__)')
abi=$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
cuda_home=${CUDA_HOME:-/usr/local/cuda}
out=$(mktemp -d)
build_torch() {
  g++ -O2 -std=c++17 -D_GLIBCXX_USE_CXX11_ABI=$abi "$here/torch_cuda_bench.cpp" -o "$1" \
    -I"$torch_dir/include" -I"$torch_dir/include/torch/csrc/api/include" -I"$cuda_home/include" \
    -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" -Wl,--no-as-needed -ltorch -ltorch_cuda -ltorch_cpu -lc10_cuda -lc10 \
    -L"$cuda_home/lib64" -lcudart
}
if [[ $build == --build-torch ]]; then
  build_torch "${2:?--build-torch EXE}"
  exit
fi
torch_bench=${TORCH_CUDA_BENCH:-$out/torch_cuda_bench}
[[ -x $torch_bench ]] || build_torch "$torch_bench"
"$build/bench/brisk_cuda_bench" | tee "$out/brisk.txt"
"$torch_bench" | tee "$out/torch.txt"
device=$(sed -n 's/^device //p' "$out/brisk.txt")
echo
echo "GPU: $device; PyTorch $torch_version (libtorch C++ from the wheel), same process order, medians"
echo
echo "| case | brisk | PyTorch | brisk / PyTorch |"
echo "| --- | ---: | ---: | ---: |"
while read -r name value unit; do
  [[ $name == device ]] && continue
  t=$(awk -v n="$name" '$1 == n { print $2 }' "$out/torch.txt")
  if [[ -n $t ]]; then
    echo "| $name | $value $unit | $t $unit | $(awk -v a="$value" -v b="$t" 'BEGIN { printf "%.2f", a / b }') |"
  else
    echo "| $name | $value $unit | - | - |"
  fi
done <"$out/brisk.txt"
