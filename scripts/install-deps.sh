#!/usr/bin/env bash
# Install what a fresh Debian machine lacks to build backends and run the tests: the C++
# allocator's headers (protozero, nlohmann/json), CMake and a C++17 compiler, Rust's clippy,
# Python's venv, shellcheck for tests/lint.sh; with --editor also what the VS Code
# extension's end-to-end test needs (chromium, code-server's build dependencies; Node.js 20
# must be there already). Idempotent: installs only what is missing, and says what it
# installed.
set -euo pipefail

editor=0
for arg in "$@"; do
    case "$arg" in
        --editor) editor=1 ;;
        -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
        *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
    esac
done

missing=()
need_pkg() { dpkg -s "$1" >/dev/null 2>&1 || missing+=("$1"); }
need_pkg libprotozero-dev
need_pkg nlohmann-json3-dev
need_pkg cmake
need_pkg g++
need_pkg make
need_pkg shellcheck
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=("python3-venv")
if [ "$editor" -eq 1 ]; then
    need_pkg chromium
    need_pkg libkrb5-dev
    need_pkg ripgrep
    need_pkg build-essential
    if ! node --version 2>/dev/null | grep -q '^v20\.'; then
        # code-server 4.100.3 (the extension's end-to-end test) runs on Node.js 20 only, which
        # Debian 12 does not package.
        echo "install-deps.sh: the editor tests need Node.js 20 with npm (found: $(node --version 2>/dev/null || echo none))" >&2
        exit 1
    fi
fi

if [ "${#missing[@]}" -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if [ -n "$sudo" ] && ! command -v sudo >/dev/null 2>&1; then
        echo "install-deps.sh: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
        exit 1
    fi
    echo "install-deps.sh: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "install-deps.sh: cargo not found; install Rust (https://rustup.rs) and rerun" >&2
    exit 1
fi
if ! cargo clippy --version >/dev/null 2>&1; then
    echo "install-deps.sh: adding the clippy component"
    rustup component add clippy
fi
