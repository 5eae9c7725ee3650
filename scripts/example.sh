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
report="$(mktemp -d)"
trap 'rm -rf "$report"' EXIT
./backends/QKV --input kernels/attention.hlo --output attention.py --report-dir "$report"
"$ACT_PYTHON" - "$report/report.json" "$root/examples/QKV/attention.py" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
calls = sum(1 for line in open(sys.argv[2]) if line.strip().startswith("api."))
print(f"assembly: {sys.argv[2]} ({calls} instructions, cost {report['chosen_cost']:g}; "
      f"candidate {report['chosen'] + 1} of {report['candidates_tried']} tried)")
PY
