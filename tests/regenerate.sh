#!/usr/bin/env bash
# Rewrite the goldens (tests/goldens/<example>/attention.{dat,json}) from the compiled kernels,
# recording the oracle, jax, platform and machine they come from. Runs where the tests run: in
# the act-env image when a Docker engine answers, else on the host in .venv.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ -z "${ACT_IN_CONTAINER:-}" ] && command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    exec docker/run.sh env ACT_IN_CONTAINER=1 tests/regenerate.sh "$@"
fi
if [ -n "${ACT_IN_CONTAINER:-}" ]; then
    python3 -m pip install --user --quiet -e . -r tests/requirements.txt
    ACT_PYTHON=python3
else
    scripts/install-deps.sh
    # shellcheck source=tests/host-env.sh
    . "$root/tests/host-env.sh"
fi
"$ACT_PYTHON" tests/tools/regenerate_goldens.py "$@"
