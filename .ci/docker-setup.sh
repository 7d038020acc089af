#!/usr/bin/env bash
# Prepare a Docker engine and the sandbox image on a machine with no image registry.
#
#   bash .ci/docker-setup.sh [engine] [base] [sandbox]     (no argument: all three, in order)
#
#   engine   installs docker.io if missing and starts dockerd in the background if no engine
#            answers;
#   base     makes tensorjudge/base:bookworm (debootstrap + `docker import`) if it is missing; the
#            root file system tarball is cached, so a later import skips debootstrap;
#   sandbox  downloads the numpy wheel on the host (the build needs no network) and builds
#            tensorjudge/sandbox:latest from sandbox/Dockerfile on that base, with the venv's
#            torch (pruned as the runtime tree) where .venv has it.
#
# Idempotent: a second run only checks, and rebuilds the sandbox image from its cached layers.
# Where a registry can be reached none of this is needed:
#   docker build -t tensorjudge/sandbox:latest -f sandbox/Dockerfile sandbox
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${TENSORJUDGE_CACHE:-/var/cache/tensorjudge}
BASE_IMAGE=${TENSORJUDGE_BASE_IMAGE:-tensorjudge/base:bookworm}
SANDBOX_IMAGE=${GRADER_DOCKER_IMAGE:-tensorjudge/sandbox:latest}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/tensorjudge-dockerd.log}

log() { echo "docker-setup [${SECONDS}s]: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install() {
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@"
}

ensure_engine() {
    if ! command -v dockerd >/dev/null; then
        log "installing docker.io"
        apt_install docker.io
    fi
    if ! docker info >/dev/null 2>&1; then
        log "starting dockerd (log: $DOCKERD_LOG)"
        # setsid: the daemon outlives this script and its terminal, as a service would.
        as_root setsid nohup dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &
        for _ in $(seq 1 60); do
            docker info >/dev/null 2>&1 && break
            sleep 1
        done
        if ! docker info >/dev/null 2>&1; then
            log "dockerd did not come up in 60 s; last lines of $DOCKERD_LOG:"
            tail -n 20 "$DOCKERD_LOG" >&2 || true
            exit 1
        fi
    fi
    log "engine ready: $(docker version --format 'server {{.Server.Version}}')"
}

# A stand-in for python:3.11-slim: Debian bookworm's python3 (3.11) and its venv module.
ensure_base_image() {
    if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        return
    fi
    local rootfs_tar="$CACHE/rootfs-bookworm-minbase.tar" rootfs
    if [ ! -s "$rootfs_tar" ]; then
        command -v debootstrap >/dev/null || apt_install debootstrap
        rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
        log "debootstrap bookworm into $rootfs (log: $CACHE/debootstrap.log)"
        as_root debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            bookworm "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
            tail -n 20 "$CACHE/debootstrap.log" >&2
            exit 1
        }
        # Downloaded packages and package lists are not needed in an image.
        as_root rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
        as_root tar -C "$rootfs" -cf "$rootfs_tar.part" .
        mv "$rootfs_tar.part" "$rootfs_tar"
        as_root rm -rf "$rootfs"
    fi
    log "importing $rootfs_tar as $BASE_IMAGE"
    docker import --change 'CMD ["/bin/bash"]' "$rootfs_tar" "$BASE_IMAGE" >/dev/null
}

# numpy is pinned to the host venv's version when there is one, so the sandbox computes with the
# numpy the project is tested with; otherwise the newest of the same major.
numpy_wheels() {
    local version spec dir pip_python
    version=$(.venv/bin/python -c 'import numpy; print(numpy.__version__)' 2>/dev/null || true)
    spec=${version:+numpy==$version}
    spec=${spec:-numpy>=2,<3}
    dir="$CACHE/wheels/$(echo "$spec" | tr -c 'A-Za-z0-9.=\n' _)"
    if [ -z "$(ls "$dir"/*.whl 2>/dev/null)" ]; then
        log "downloading $spec for CPython 3.11 manylinux into $dir"
        mkdir -p "$dir"
        # Any Python with pip will do: the flags below choose the wheel, not this Python.
        pip_python=.venv/bin/python
        if ! "$pip_python" -m pip --version >/dev/null 2>&1; then
            pip_python=python3
            if ! python3 -m pip --version >/dev/null 2>&1; then
                [ -x "$CACHE/pip-venv/bin/python" ] || python3 -m venv "$CACHE/pip-venv"
                pip_python="$CACHE/pip-venv/bin/python"
            fi
        fi
        # PIP_FIND_LINKS may name a local wheel folder meant for the host: only PyPI here.
        PIP_FIND_LINKS='' "$pip_python" -m pip download --quiet "$spec" --only-binary=:all: \
            --python-version 3.11 --implementation cp \
            --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d "$dir"
    fi
    echo "$spec" "$dir"
}

build_sandbox_image() {
    local wheels spec dir context
    wheels=$(numpy_wheels)  # an assignment, so that a failed download stops the script
    read -r spec dir <<<"$wheels"
    context=$(mktemp -d)
    # sandbox/'s layout (the Dockerfile's documented context), plus wheels/; of the project, only
    # the in-sandbox package's sources go in.
    mkdir -p "$context/wheels" "$context/inside"
    cp sandbox/Dockerfile "$context/"
    cp sandbox/inside/*.py "$context/inside/"
    cp "$dir"/*.whl "$context/wheels/"
    # torch, where the host venv has it (make install-test), pruned as the runtime tree prunes it.
    local copied=0
    if [ -x .venv/bin/python ]; then
        .venv/bin/python -m sandbox.backends.imagetorch "$context/site" || copied=$?
    else
        copied=3
    fi
    case "$copied" in
        0) log "with torch from .venv (pruned as the runtime tree)" ;;
        3) log "without torch: not installed in .venv" ;;
        *)
            rm -rf "$context"
            exit 1
            ;;
    esac
    log "building $SANDBOX_IMAGE from sandbox/Dockerfile on $BASE_IMAGE (log: $CACHE/build.log)"
    if ! docker build -t "$SANDBOX_IMAGE" --build-arg BASE_IMAGE="$BASE_IMAGE" \
        --build-arg NUMPY_SPEC="$spec" "$context" >"$CACHE/build.log" 2>&1; then
        tail -n 40 "$CACHE/build.log" >&2
        rm -rf "$context"
        exit 1
    fi
    rm -rf "$context"
    # Earlier builds of the image, now untagged (the build stage's cache has no label: kept).
    docker image prune --force --filter label=org.tensorjudge.image=sandbox >/dev/null
    log "ready: $SANDBOX_IMAGE ($(docker image inspect --format '{{.Size}}' "$SANDBOX_IMAGE") bytes)"
}

mkdir -p "$CACHE" 2>/dev/null || as_root mkdir -p "$CACHE"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(engine base sandbox)
for target in "${targets[@]}"; do
    case "$target" in
        engine) ensure_engine ;;
        base) ensure_base_image ;;
        sandbox) build_sandbox_image ;;
        *)
            echo "usage: $0 [engine] [base] [sandbox]" >&2
            exit 2
            ;;
    esac
done
