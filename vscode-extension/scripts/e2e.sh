#!/usr/bin/env bash
# Runs the end-to-end smoke test: packages the extension, then drives it in code-server through
# headless Chromium (test/e2e/smoke.ts). Screenshots and, on failure, logs go to test-results/.
# Install what it needs first with scripts/install-e2e-deps.sh.
#
#   scripts/e2e.sh                  every step: diagnostic, quickfix, generate, compile, report,
#                                   simulate
#   scripts/e2e.sh compile          only the steps up to the one named
#
# Environment: ACT_E2E_PYTHON (default: $ACT_PYTHON, else python3), the interpreter the
# language server runs with; ACT_E2E_CACHE and CODE_SERVER_VERSION as for the install script;
# ACT_E2E_SIDE_CHECKS=0 skips the Restricted Mode and missing-interpreter checks;
# ACT_E2E_KEEP=1 keeps the temp dir.
set -euo pipefail

EXT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
CACHE="${ACT_E2E_CACHE:-$HOME/.cache/act-vscode-e2e}"
CODE_SERVER="$CACHE/code-server-$CODE_SERVER_VERSION/node_modules/.bin/code-server"

if [[ ! -x "$CODE_SERVER" ]]; then
    echo "e2e.sh: code-server $CODE_SERVER_VERSION is not installed in $CACHE; run scripts/install-e2e-deps.sh" >&2
    exit 2
fi
CHROMIUM="$(command -v chromium || true)"
if [[ -z "$CHROMIUM" ]]; then
    echo "e2e.sh: chromium is not installed; run scripts/install-e2e-deps.sh" >&2
    exit 2
fi
PYTHON="${ACT_E2E_PYTHON:-${ACT_PYTHON:-python3}}"
PYTHON="$(command -v "$PYTHON")"

cd "$EXT_DIR"
if [[ ! -d node_modules/playwright-core ]]; then
    npm ci --no-audit --no-fund
fi
npm run --silent package >/dev/null

ACT_E2E_CODE_SERVER="$CODE_SERVER" \
ACT_E2E_CHROMIUM="$CHROMIUM" \
ACT_E2E_PYTHON="$PYTHON" \
ACT_E2E_VSIX="$EXT_DIR/act-backend.vsix" \
ACT_E2E_RESULTS="$EXT_DIR/test-results" \
ACT_E2E_UNTIL="${1:-simulate}" \
ACT_E2E_SIDE_CHECKS="${ACT_E2E_SIDE_CHECKS:-1}" \
    node out/e2e/smoke.js
