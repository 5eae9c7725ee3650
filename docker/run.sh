#!/usr/bin/env bash
# Run a command in the act-env image with the checkout mounted at /work and the caller's
# uid/gid, picking the image tag for this host: CUDA 13 where nvidia-smi works and docker
# lists the nvidia runtime, else amd64 or arm64.
#
#   docker/run.sh [--print-image] COMMAND [ARGS...]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
# shellcheck source=docker/act.env
. "$here/act.env"

pick_tag() {
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1 \
        && docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q nvidia; then
        echo "$ACT_TAG_CUDA13"
        return
    fi
    case "$(uname -m)" in
        x86_64 | amd64) echo "$ACT_TAG_AMD64" ;;
        aarch64 | arm64) echo "$ACT_TAG_ARM64" ;;
        *) echo "docker/run.sh: no act-env image for architecture $(uname -m)" >&2; exit 1 ;;
    esac
}

tag="$(pick_tag)"
image="$ACT_IMAGE:$tag"
if [ "${1:-}" = "--print-image" ]; then
    echo "$image"
    exit 0
fi
[ $# -gt 0 ] || { echo "usage: docker/run.sh [--print-image] COMMAND [ARGS...]" >&2; exit 2; }

gpu_args=()
[ "$tag" = "$ACT_TAG_CUDA13" ] && gpu_args=(--gpus all)
tty_args=()
[ -t 0 ] && [ -t 1 ] && tty_args=(-it)

exec docker run --rm "${tty_args[@]}" "${gpu_args[@]}" \
    --user "$(id -u):$(id -g)" \
    -e HOME=/tmp/home -e CI="${CI:-}" \
    -v "$root:/work" -w /work \
    "$image" bash -c 'mkdir -p "$HOME" && exec "$@"' bash "$@"
