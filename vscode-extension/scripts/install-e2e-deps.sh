#!/usr/bin/env bash
# Installs what the end-to-end smoke test needs on a fresh Debian machine, idempotently:
# Debian packages (chromium for the browser, ripgrep/libkrb5-dev/build-essential for
# code-server's native modules), code-server into a cache directory, and the extension's own
# npm dependencies. Run it again at any time: every step checks before it acts.
#
# Environment:
#   ACT_E2E_CACHE   where code-server is installed (default: ~/.cache/act-vscode-e2e)
#   CODE_SERVER_VERSION  pinned to the newest release that still runs on Node 20
set -euo pipefail

CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
CACHE="${ACT_E2E_CACHE:-$HOME/.cache/act-vscode-e2e}"
EXT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { printf '[install-e2e-deps] %s\n' "$*"; }

# --- Debian packages --------------------------------------------------------------------------
APT_PACKAGES=(chromium ripgrep libkrb5-dev build-essential python3)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$pkg")
    fi
done
if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
    $SUDO apt-get update -q
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
    log "Debian packages present: ${APT_PACKAGES[*]}"
fi

# --- Node.js ----------------------------------------------------------------------------------
# code-server 4.100.3's postinstall refuses any Node.js but 20 (Debian 12's own nodejs is 18).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "Node.js 20 and npm are needed (https://nodejs.org or NodeSource); none found on PATH"
    exit 1
fi
node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [[ "$node_major" != "20" ]]; then
    log "Node.js 20 is needed by code-server $CODE_SERVER_VERSION; found $(node --version)"
    exit 1
fi

# --- ripgrep pre-seed -------------------------------------------------------------------------
# code-server's @vscode/ripgrep postinstall downloads a release tarball from GitHub, which may be
# unreachable. It looks in its cache directory first, so we place the system rg there.
RG_CACHE="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
RG_TARBALL="$RG_CACHE/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [[ ! -s "$RG_TARBALL" ]]; then
    log "pre-seeding ripgrep cache at $RG_TARBALL"
    mkdir -p "$RG_CACHE"
    tar -czf "$RG_TARBALL" -C "$(dirname "$(command -v rg)")" rg
fi

# --- code-server ------------------------------------------------------------------------------
CS_PREFIX="$CACHE/code-server-$CODE_SERVER_VERSION"
CS_BIN="$CS_PREFIX/node_modules/.bin/code-server"
# The postinstall step installs VS Code's own modules; their presence marks a complete install.
CS_VSCODE_MODULES="$CS_PREFIX/node_modules/code-server/lib/vscode/node_modules"
if [[ -x "$CS_BIN" && -d "$CS_VSCODE_MODULES" ]] &&
    "$CS_BIN" --version 2>/dev/null | grep -q "^$CODE_SERVER_VERSION"; then
    log "code-server $CODE_SERVER_VERSION present in $CS_PREFIX"
else
    log "installing code-server $CODE_SERVER_VERSION into $CS_PREFIX (several minutes)"
    mkdir -p "$CS_PREFIX"
    rm -rf "$CS_PREFIX/node_modules"
    # unsafe_perm lets its postinstall build native modules when run as root (npm 10); yes
    # answers the npx prompts inside that postinstall. npm 11 only warns about dependency
    # install scripts that no allowScripts entry names, and is set to skip them in the future;
    # the postinstall's nested installs of VS Code's native modules need them, so the
    # permission travels through the environment.
    # Native modules are built against Node's headers; node-gyp would download them, so
    # point it at the ones the installed Node.js package ships when their version matches.
    headers_env=()
    headers=/usr/include/node/node_version.h
    if [[ -f "$headers" ]]; then
        version="$(awk '/define NODE_(MAJOR|MINOR|PATCH)_VERSION/ {printf "%s.", $3}' "$headers")"
        if [[ "v${version%.}" == "$(node --version)" ]]; then
            headers_env=(npm_config_nodedir=/usr)
        fi
    fi
    (cd "$CS_PREFIX" &&
        env "${headers_env[@]}" npm_config_unsafe_perm=true npm_config_yes=true \
            npm_config_dangerously_allow_all_scripts=true \
            npm install --no-audit --no-fund --no-save "code-server@$CODE_SERVER_VERSION")
    if [[ ! -d "$CS_VSCODE_MODULES" ]]; then
        log "code-server's postinstall did not install VS Code's modules ($CS_VSCODE_MODULES)"
        exit 1
    fi
fi

# --- the extension's own dependencies (playwright-core drives chromium) -----------------------
# Reinstalled whenever package-lock.json changes; the stamp records the lock installed.
STAMP="$EXT_DIR/node_modules/.act-installed-lock"
WANT="$(sha256sum "$EXT_DIR/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]]; then
    log "installing the extension's npm dependencies (npm ci)"
    (cd "$EXT_DIR" && npm ci --no-audit --no-fund)
    echo "$WANT" >"$STAMP"
fi

log "ready: code-server at $CS_BIN, chromium at $(command -v chromium)"
