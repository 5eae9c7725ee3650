#!/usr/bin/env bash
# Lint everything the project ships and generates:
#   - ruff over the Python code (configuration in pyproject.toml);
#   - shellcheck over the shell scripts, hadolint over the Dockerfile (when installed), and a
#     check that every file the Dockerfile COPYs exists;
#   - each example's generated backend: cargo clippy over its crate with warnings denied, and
#     its allocator built with -Wall -Wextra -Werror;
#   - clippy over a crate generated with a cost library.
# Generating a backend never runs these; CI runs this script after the tests.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ -z "${ACT_IN_CONTAINER:-}" ]; then
    # shellcheck source=tests/host-env.sh
    . "$root/tests/host-env.sh"
else
    ACT_PYTHON=python3
fi

step() { echo; echo "== lint: $*"; }

step "ruff"
"$ACT_PYTHON" -m ruff check .

step "shell scripts"
scripts=(tests/*.sh docker/*.sh scripts/*.sh .ci/run)
if command -v shellcheck >/dev/null 2>&1; then
    shellcheck -x "${scripts[@]}"
else
    for s in "${scripts[@]}"; do bash -n "$s"; done
    echo "shellcheck not installed: checked syntax only"
fi

step "Dockerfile"
while read -r src; do
    [ -e "$src" ] || { echo "docker/Dockerfile copies $src, which does not exist" >&2; exit 1; }
done < <(awk 'toupper($1) == "COPY" { for (i = 2; i < NF; i++) if ($i !~ /^--/) print $i }' docker/Dockerfile)
if command -v hadolint >/dev/null 2>&1; then
    hadolint --no-color --ignore DL3008 --ignore DL3013 docker/Dockerfile
else
    echo "hadolint not installed: checked COPY sources only"
fi

step "generated backends"
"$ACT_PYTHON" tests/tools/lint_generated.py
