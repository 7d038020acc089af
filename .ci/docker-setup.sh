#!/usr/bin/env bash
# Prepare a Docker engine and the sandbox image on a machine with no image registry.
# Idempotent: a second run only checks, and rebuilds the sandbox image from its cached layers.
#   1. installs docker.io if missing and starts dockerd in the background if it is not running;
#   2. makes tensorjudge/base:bookworm with debootstrap + `docker import` if it is missing
#      (the root filesystem tarball is cached, so later imports skip debootstrap);
#   3. downloads the numpy wheel on the host (the build needs no network) and builds
#      tensorjudge/sandbox:latest from sandbox/Dockerfile on that base.
# Real deployments skip steps 2-3's tricks: `docker build -f sandbox/Dockerfile sandbox`
# uses the official python:3.11-slim image and PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${TENSORJUDGE_CACHE:-/var/cache/tensorjudge}
BASE_IMAGE=${TENSORJUDGE_BASE_IMAGE:-tensorjudge/base:bookworm}
SANDBOX_IMAGE=${GRADER_DOCKER_IMAGE:-tensorjudge/sandbox:latest}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/tensorjudge-dockerd.log}

log() { echo "docker-setup [${SECONDS}s]: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

mkdir -p "$CACHE" 2>/dev/null || as_root mkdir -p "$CACHE"

# 1. Engine.
if ! command -v dockerd >/dev/null; then
    log "installing docker.io"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends docker.io
fi
if ! docker info >/dev/null 2>&1; then
    log "starting dockerd (log: $DOCKERD_LOG)"
    # setsid: the daemon outlives this script and its terminal, like a service would.
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

# 2. Local base image (stands in for python:3.11-slim where no registry can be reached).
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    rootfs_tar="$CACHE/rootfs-bookworm-minbase.tar"
    if [ ! -s "$rootfs_tar" ]; then
        command -v debootstrap >/dev/null || {
            as_root apt-get update -qq
            DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq debootstrap
        }
        rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
        log "debootstrap bookworm into $rootfs"
        as_root debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            bookworm "$rootfs" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
            tail -n 20 "$CACHE/debootstrap.log" >&2
            exit 1
        }
        # Package caches and lists are not needed at run time.
        as_root rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
        as_root tar -C "$rootfs" -cf "$rootfs_tar.part" .
        mv "$rootfs_tar.part" "$rootfs_tar"
        as_root rm -rf "$rootfs"
    fi
    log "importing $rootfs_tar as $BASE_IMAGE"
    docker import --change 'CMD ["/bin/bash"]' "$rootfs_tar" "$BASE_IMAGE" >/dev/null
fi

# 3. Sandbox image. numpy is pinned to the host venv's version when there is one, so outputs
# are computed by the same numpy the project is tested with.
numpy_version=$(.venv/bin/python -c 'import numpy; print(numpy.__version__)' 2>/dev/null || true)
numpy_spec=${numpy_version:+numpy==$numpy_version}
numpy_spec=${numpy_spec:-numpy>=2,<3}
wheels="$CACHE/wheels/$(echo "$numpy_spec" | tr -c 'A-Za-z0-9.=\n' _)"
if [ -z "$(ls "$wheels"/*.whl 2>/dev/null)" ]; then
    log "downloading $numpy_spec for CPython 3.11 manylinux into $wheels"
    mkdir -p "$wheels"
    # Any Python with pip will do: the wheel is chosen by the flags below, not by this Python.
    pip_python=.venv/bin/python
    if ! "$pip_python" -m pip --version >/dev/null 2>&1; then
        pip_python=python3
        if ! python3 -m pip --version >/dev/null 2>&1; then
            [ -x "$CACHE/pip-venv/bin/python" ] || python3 -m venv "$CACHE/pip-venv"
            pip_python="$CACHE/pip-venv/bin/python"
        fi
    fi
    # PIP_FIND_LINKS may point at a local wheel folder for the host; only PyPI is wanted here.
    PIP_FIND_LINKS= "$pip_python" -m pip download --quiet "$numpy_spec" --only-binary=:all: \
        --python-version 3.11 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d "$wheels"
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
# The same layout as sandbox/ (the Dockerfile's documented context) plus wheels/; only
# runner.py of the project goes in.
mkdir -p "$context/wheels"
cp sandbox/Dockerfile sandbox/runner.py "$context/"
cp "$wheels"/*.whl "$context/wheels/"
log "building $SANDBOX_IMAGE from sandbox/Dockerfile on $BASE_IMAGE"
docker build --quiet -t "$SANDBOX_IMAGE" \
    --build-arg BASE_IMAGE="$BASE_IMAGE" \
    --build-arg NUMPY_SPEC="$numpy_spec" \
    "$context" >/dev/null
# Earlier builds of the image, now untagged (the build stage's cache is kept: it has no label).
docker image prune --force --filter label=org.tensorjudge.image=sandbox >/dev/null
log "ready: $SANDBOX_IMAGE ($(docker image inspect --format '{{.Size}}' "$SANDBOX_IMAGE") bytes)"
