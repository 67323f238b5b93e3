#!/usr/bin/env bash
# All the tests on a fresh machine: installs what is missing (PyTorch
# included, for the parity tests), builds the release preset and runs every
# test with CTest. Extra arguments go to ctest, e.g. `-R binary`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release
cd "$root"
exec ctest --preset release "$@"
