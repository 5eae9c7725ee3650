#!/usr/bin/env bash
# Run the test suite; arguments go on to pytest (./tests/pytest.sh -k qkv_new).
#
# In the act-env image (docker/act.env; the CUDA 13 tag where nvidia-smi succeeds and docker
# lists the nvidia runtime) when a Docker engine answers; otherwise, saying so in one line, on
# the host in a virtual environment this script manages (.venv, refreshed when
# tests/requirements.txt or pyproject.toml change).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

run_pytest() {
    local python="$1"; shift
    set +e
    "$python" -m pytest "$@"
    local rc=$?
    set -e
    # A selection that matches no test is not a failure of the suite.
    if [ "$rc" -eq 5 ]; then
        echo "tests/pytest.sh: no test matched the selection"
        rc=0
    fi
    return "$rc"
}

if [ -n "${ACT_IN_CONTAINER:-}" ]; then
    python3 -m pip install --user --quiet -e . -r tests/requirements.txt
    run_pytest python3 "$@"
    exit $?
fi

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    image="$(docker/run.sh --print-image)"
    echo "tests/pytest.sh: running in $image"
    docker image inspect "$image" >/dev/null 2>&1 || docker pull "$image"
    exec docker/run.sh env ACT_IN_CONTAINER=1 tests/pytest.sh "$@"
fi

echo "tests/pytest.sh: no Docker engine answers; running the suite on the host in .venv"
scripts/install-deps.sh
# shellcheck source=tests/host-env.sh
. "$root/tests/host-env.sh"
run_pytest "$ACT_PYTHON" "$@"
