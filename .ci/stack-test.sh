#!/usr/bin/env bash
# The deployment's proof: build every image, bring the docker-compose stack up (API, 2 workers,
# PostgreSQL, Redis, and Prometheus of the `prometheus` profile) under a unique project name,
# check it through the published ports (deploy/stack_check.py: the gradings, then Prometheus's
# query API), and tear it all down (volumes too) even when something fails.
#
#   bash .ci/stack-test.sh            # as root (or a member of the docker group)
#
# No image registry here: deploy/compose.local.yml builds every image from the local Debian base
# of .ci/docker-setup.sh. STACK_TEST_REGISTRY=1 uses the official images instead;
# STACK_TEST_KEEP=1 leaves the stack running (and its env file) for a look; STACK_TEST_NO_CACHE=1
# builds without the layer cache (cold timing); STACK_TEST_PROBLEM=ID grades another problem
# folder (default multi-head-attention).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "stack-test [${SECONDS}s]: $*" >&2; }

if ! command -v docker-compose >/dev/null; then
    log "installing docker-compose (Debian's 1.29)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose
fi
REGISTRY=${STACK_TEST_REGISTRY:-0}
if [ "$REGISTRY" = 1 ]; then
    bash .ci/docker-setup.sh engine
else
    # Engine, local base image and the sandbox image the workers run (seconds when warm).
    bash .ci/docker-setup.sh engine base sandbox
fi

PROJECT=${STACK_TEST_PROJECT:-tjstack$$}
# Sandbox containers are the engine's, not the project's: those a killed worker leaves behind are
# removed at the end (the new ones that are no longer running).
sandboxes_before=$(docker ps -aq --no-trunc --filter label=tensorjudge.sandbox | sort)
WORK=$(mktemp -d)
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
PROMETHEUS_PORT=$(free_port)
# Secrets of this run only: random, in a throwaway env file (never the repository's .env).
# The wall clock: the kill check's slow submission sleeps 6 s at import (deploy/stack_check.py).
# The lease: the kill check reads the killed worker's rows still 'running' after the kill, so
# they must outlive the docker and psql calls between (with 5 s, another worker's sweep re-queued
# them first on a loaded machine: load average 15 on 2 cores).
cat >"$WORK/env" <<EOF
POSTGRES_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
REDIS_PASSWORD=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
CASE_SEED_SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
DOCKER_GID=$(stat -c %g /var/run/docker.sock)
API_BIND=127.0.0.1
API_PORT=$PORT
PROMETHEUS_BIND=127.0.0.1
PROMETHEUS_PORT=$PROMETHEUS_PORT
WORKER_CONCURRENCY=2
GRADER_RATE_LIMIT=10000
GRADER_LEASE_SECONDS=15
GRADER_VISIBILITY_TIMEOUT=20
GRADER_SWEEP_SECONDS=1
GRADER_WALL_SECONDS=20
EOF
if [ "$REGISTRY" = 1 ]; then
    files=(-f docker-compose.yml)
    build_profile=(--profile build --profile prometheus)  # the sandbox image too
else
    files=(-f docker-compose.yml -f deploy/compose.local.yml)
    build_profile=(--profile prometheus)
fi
COMPOSE=(docker-compose -p "$PROJECT" --env-file "$WORK/env" "${files[@]}")

exited_sandboxes() {
    docker ps -aq --no-trunc --filter label=tensorjudge.sandbox --filter status=exited | sort
}

cleanup() {
    local rc=$?
    if [ $rc -ne 0 ]; then
        log "FAILED: logs of the stack follow"
        "${COMPOSE[@]}" ps >&2 || true
        "${COMPOSE[@]}" logs --no-color --tail=80 >&2 || true
    fi
    if [ "${STACK_TEST_KEEP:-0}" = 1 ]; then
        log "kept (STACK_TEST_KEEP=1): ${COMPOSE[*]} down -v"
        return
    fi
    log "tearing down $PROJECT"
    "${COMPOSE[@]}" --profile prometheus down -v --remove-orphans --timeout 10 >/dev/null 2>&1 || true
    # Only those still there 5 s later: the suite may run docker tests beside this one, and their
    # own backend removes each of their containers as soon as it has read it.
    local left
    left=$(comm -13 <(echo "$sandboxes_before") <(exited_sandboxes))
    if [ -n "$left" ]; then
        sleep 5
        comm -12 <(echo "$left") <(exited_sandboxes) | xargs -r docker rm -f >/dev/null 2>&1 || true
    fi
    rm -rf "$WORK"
    log "done (exit $rc)"
}
trap cleanup EXIT

# pip and npm in the build stages trust the host's CA bundle: this network intercepts TLS. The
# bundle stays out of the final image (deploy/certs/README.md).
[ "$REGISTRY" = 1 ] || cp /etc/ssl/certs/ca-certificates.crt deploy/certs/build-ca.crt

log "building images (log: $WORK/build.log)"
build_flags=()
[ "${STACK_TEST_NO_CACHE:-0}" = 1 ] && build_flags+=(--no-cache)  # a cold build, for timing
if ! "${COMPOSE[@]}" "${build_profile[@]}" build "${build_flags[@]}" >"$WORK/build.log" 2>&1; then
    tail -n 40 "$WORK/build.log" >&2
    exit 1
fi
build_done=$SECONDS

# GRADER_ENV=production must refuse the example passwords of .env.example.
if out=$(docker run --rm -e GRADER_ENV=production \
    -e GRADER_DATABASE_URL=postgresql+psycopg://tensorjudge:change-me@postgres/tensorjudge \
    "${APP_IMAGE:-tensorjudge/app:latest}" python -m app serve 2>&1); then
    log "the app started with an example password in production"
    exit 1
fi
grep -q "example default" <<<"$out" || { echo "$out" >&2; exit 1; }
log "production refuses example passwords"

log "starting $PROJECT: api, 2 workers, postgres, redis on 127.0.0.1:$PORT, prometheus on :$PROMETHEUS_PORT"
"${COMPOSE[@]}" --profile prometheus up -d --scale worker=2 >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; exit 1; }
for _ in $(seq 1 120); do
    health=$(docker inspect -f '{{.State.Health.Status}}' "$("${COMPOSE[@]}" ps -q api)")
    [ "$health" = healthy ] && break
    sleep 1
done
[ "$health" = healthy ] || { log "api not healthy: $health"; exit 1; }
log "stack up and api healthy ($((SECONDS - build_done)) s after the build)"

timeout 900 python3 deploy/stack_check.py --base "http://127.0.0.1:$PORT" --compose "${COMPOSE[*]}" \
    --problem "${STACK_TEST_PROBLEM:-multi-head-attention}" \
    --prometheus "http://127.0.0.1:$PROMETHEUS_PORT" --workers 2
log "passed: build ${build_done} s, total ${SECONDS} s"
