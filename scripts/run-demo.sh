#!/usr/bin/env bash
# The main program on a fresh machine: installs what is missing, builds the
# release preset's demo and runs it. Re-runs are fast (no reconfigure, ccache).
set -euo pipefail
demo=train_fashion_mnist    # examples/<demo>.cpp
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# All deps, PyTorch included: build/release is configured once, and a
# configure without libtorch would leave the parity tests out of later
# scripts/run-tests.sh runs.
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" release "$demo"
# The checkpoint lives in build/: a second run resumes from it (--fresh
# starts over; --help lists the options).
exec "$root/build/release/examples/$demo" --checkpoint-dir "$root/build" "$@"
