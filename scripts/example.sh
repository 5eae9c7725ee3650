#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, generate the QKV accelerator's
# oracle and backend (examples/QKV/targets, examples/QKV/backends/QKV), compile the attention
# kernel, and print where the assembly went and its cost.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/install-deps.sh
# shellcheck source=tests/host-env.sh
. "$root/tests/host-env.sh"

cd examples/QKV
"$ACT_PYTHON" QKV.py
./backends/QKV --input kernels/attention.hlo --output attention.py
echo "assembly: $root/examples/QKV/attention.py"
