# The TensorJudge app image: the API (`python -m app serve`, the default command) and the grading
# worker (`python -m app worker`) are the same image; docker-compose.yml picks the command.
#
#   docker build -t tensorjudge/app:latest .
#
# Plain Dockerfile syntax (no BuildKit-only features): the legacy builder and docker-compose 1.x
# build it as well as BuildKit.
#
# BASE_IMAGE: a glibc image with python3 (3.11+) and its venv module, used by the Python stages.
# NODE_IMAGE: the front-end stage's image; when it has no npm, Debian's nodejs and npm are
# installed into it (machines without a registry pass a local Debian image for both:
# deploy/compose.local.yml).
# deploy/certs/build-ca.crt, when present, is trusted by pip and npm in the build stages only
# (networks that intercept TLS); the final image never contains it.
ARG BASE_IMAGE=python:3.11-slim
ARG NODE_IMAGE=node:20-bookworm-slim

# --- front-end assets: npm ci + esbuild -> /src/app/web/static/dist --------------------------
FROM ${NODE_IMAGE} AS frontend
RUN set -eu; \
    if ! command -v npm >/dev/null 2>&1; then \
        apt-get update -qq; \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm; \
        rm -rf /var/lib/apt/lists/*; \
    fi; \
    node --version
COPY deploy/certs/ /tmp/certs/
WORKDIR /src/frontend
COPY frontend/package.json frontend/package-lock.json ./
RUN set -eu; \
    if [ -f /tmp/certs/build-ca.crt ]; then export npm_config_cafile=/tmp/certs/build-ca.crt; fi; \
    npm ci --no-audit --no-fund --loglevel=error
COPY frontend/ ./
RUN npm run --silent build && test -f /src/app/web/static/dist/BUILT

# --- Python dependencies in a venv (the project's own code is copied, not installed) ----------
FROM ${BASE_IMAGE} AS python-deps
COPY deploy/certs/ /tmp/certs/
COPY pyproject.toml /tmp/build/
# The dependency list (with the scale-out extra) is read from pyproject.toml, so the image cannot
# drift from it.
RUN set -eu; \
    if [ -f /tmp/certs/build-ca.crt ]; then export PIP_CERT=/tmp/certs/build-ca.crt; fi; \
    python3 -c 'import tomllib; p = tomllib.load(open("/tmp/build/pyproject.toml", "rb"))["project"]; print("\n".join(p["dependencies"] + p["optional-dependencies"]["scale"]))' \
        > /tmp/build/requirements.txt; \
    python3 -m venv /opt/venv; \
    /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --quiet \
        -r /tmp/build/requirements.txt; \
    /opt/venv/bin/pip uninstall --yes --quiet --disable-pip-version-check pip setuptools; \
    /opt/venv/bin/python -c 'import fastapi, numpy, psycopg, celery, docker, pyseccomp'

# --- the client's wheel, served at /client/ for `pip install <server>/client/<wheel>` -------------
FROM ${BASE_IMAGE} AS client-wheel
COPY deploy/certs/ /tmp/certs/
COPY client/ /src/client/
# pip fetches the build backend client/pyproject.toml names (setuptools) from the index.
RUN set -eu; \
    if [ -f /tmp/certs/build-ca.crt ]; then export PIP_CERT=/tmp/certs/build-ca.crt; fi; \
    python3 -m venv /tmp/venv; \
    /tmp/venv/bin/pip wheel --no-cache-dir --disable-pip-version-check --quiet --no-deps \
        --wheel-dir /src/client/dist /src/client; \
    ls /src/client/dist/tensorjudge_client-*.whl

# --- the runtime image --------------------------------------------------------------------------
FROM ${BASE_IMAGE}
# libseccomp2: pyseccomp loads it (both sandbox backends use the filter); bubblewrap: the bwrap
# backend, for deployments that choose it over the docker one.
RUN set -eu; \
    apt-get update -qq; \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libseccomp2 bubblewrap; \
    rm -rf /var/lib/apt/lists/*; \
    useradd --system --uid 10000 --user-group --home-dir /app --shell /usr/sbin/nologin \
        tensorjudge; \
    mkdir -p /data; \
    chown tensorjudge:tensorjudge /data
COPY --from=python-deps /opt/venv /opt/venv
WORKDIR /app
# Root-owned and read-only for the service user: the code cannot be changed by the process
# that runs it. REPO_ROOT (app/core/config.py) is /app: problems/ and alembic/ are found there.
COPY pyproject.toml alembic.ini ./
COPY alembic/ alembic/
COPY problems/ problems/
COPY sandbox/ sandbox/
COPY app/ app/
COPY --from=frontend /src/app/web/static/dist/ app/web/static/dist/
# GRADER_CLIENT_WHEEL_DIR's default under REPO_ROOT=/app.
COPY --from=client-wheel /src/client/dist/ client/dist/
# Compiled once here: the service user cannot write __pycache__ next to the code.
RUN python3 -m compileall -q -j 0 app sandbox problems alembic
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    GRADER_HOST=0.0.0.0 \
    GRADER_PORT=8000 \
    GRADER_DATA_DIR=/data
USER tensorjudge
EXPOSE 8000
# The API's health; docker-compose.yml gives the worker a check of its own.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["python", "-m", "app", "serve"]
