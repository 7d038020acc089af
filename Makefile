# Two commands on a fresh Debian/Ubuntu machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Debian packages: what serving needs (the bubblewrap sandbox), and what only the test suite
# adds (the scale-out databases and queue, a browser, the docker backend, a root tree).
RUN_DEB_PACKAGES := bubblewrap libseccomp2
TEST_DEB_PACKAGES := redis-server postgresql chromium debootstrap docker.io
STAMP_TEST := $(VENV)/.installed-test
# `make deb-packages` alone installs both lists.
DEB_PACKAGES ?= $(RUN_DEB_PACKAGES) $(TEST_DEB_PACKAGES)

.PHONY: install install-test run test lint ruff deb-packages clean frontend node-packages client-wheel

# End-to-end latency/throughput benchmark of the real server per sandbox backend (< 5 min);
# prints its figures and writes bench/results/latest.json and bench/results/latency.png.
.PHONY: bench
# PROBLEM=id benches another problem folder (default multi-head-attention).
bench: install-test
	$(BIN)/python -c 'import matplotlib' 2>/dev/null || $(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python bench/run.py $(if $(PROBLEM),--problem $(PROBLEM))
	$(if $(PROBLEM),,$(BIN)/python bench/problems.py)
	$(if $(PROBLEM),,$(BIN)/python bench/torch_vs_numpy.py)

# A 300-student class submitting around a deadline, twice on fresh servers: due in ten minutes
# (then the gradebook API and page timed), and due 3 s into the burst; on-time refused or stored
# late, accept p50/p95/p99, all answered/graded in, nothing lost (< 4 min on 2 cores); writes
# bench/results/deadline-latest.json.
.PHONY: bench-deadline
bench-deadline: install-test frontend
	$(BIN)/python bench/deadline.py

# Browser assets: frontend/ bundled by npm + esbuild into app/web/static/dist, rebuilt when
# missing or older than their sources. Debian's nodejs+npm are installed only when no npm is
# on PATH (not via DEB_PACKAGES: a NodeSource nodejs provides npm and conflicts with Debian's).
FRONTEND_STAMP := app/web/static/dist/BUILT
FRONTEND_SRC := $(shell find frontend/src -type f 2>/dev/null) frontend/package.json frontend/package-lock.json frontend/build.mjs
NODE_DEB_PACKAGES := nodejs npm

# `make run` installs what serving needs: the package alone, the bubblewrap sandbox.
install: $(STAMP)

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory deb-packages DEB_PACKAGES='$(RUN_DEB_PACKAGES)'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

# `make test` adds the test extras (which pull in the scale-out ones: PostgreSQL, Redis, Celery,
# Docker) and the client, installed editable: the tests run `tj` and import it.
install-test: $(STAMP_TEST)

$(STAMP_TEST): $(STAMP) client/pyproject.toml
	@$(MAKE) --no-print-directory deb-packages DEB_PACKAGES='$(TEST_DEB_PACKAGES)'
	$(BIN)/pip install --quiet -e '.[test,torch]' -e ./client
	touch $(STAMP_TEST)

deb-packages:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian packages: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else \
		echo "Not root: these Debian packages are missing. Run:"; \
		echo "  sudo apt-get install -y $$missing"; \
	fi

run: install frontend client-wheel
	$(BIN)/python -m app serve

# The suite in two phases (tests/conftest.py's SERIAL): most tests on TEST_WORKERS parallel
# workers, then the serial ones in one process with nothing else running. Each phase writes a
# JUnit XML under var/ci/, and .ci/test-times.py prints the slowest tests and the time per area.
# PYTEST_ARGS goes to both phases (`make test PYTEST_ARGS='-x tests/lti'`); a phase that the
# arguments leave empty (pytest's exit 5) is not a failure.
TEST_WORKERS ?= 3
JUNIT_DIR := var/ci
# A command run between the phases: .ci/run waits there for the compose stack's test, which runs
# beside the parallel phase, so that the serial phase has the machine to itself.
SERIAL_WAIT ?= true

# mypy (~40 s from a cold cache) runs beside the parallel phase; its report follows that phase's.
test: install-test ruff frontend client-wheel
	@mkdir -p $(JUNIT_DIR) && rm -f $(JUNIT_DIR)/junit-*.xml
	@$(BIN)/mypy >$(JUNIT_DIR)/mypy.log 2>&1 & mypy=$$!; \
	status=0; \
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal -m 'not serial' \
		--junitxml=$(JUNIT_DIR)/junit-parallel.xml $(PYTEST_ARGS) || status=$$?; \
	[ $$status = 5 ] && status=0; \
	wait $$mypy || status=1; \
	echo "mypy:"; cat $(JUNIT_DIR)/mypy.log; \
	$(SERIAL_WAIT); \
	$(BIN)/python -m pytest -m serial --junitxml=$(JUNIT_DIR)/junit-serial.xml $(PYTEST_ARGS) \
		|| { code=$$?; [ $$code = 5 ] || status=$$code; }; \
	$(BIN)/python .ci/test-times.py $(JUNIT_DIR)/junit-*.xml; \
	exit $$status

lint: ruff
	$(BIN)/mypy

ruff: install-test
	$(BIN)/ruff check app sandbox problems tests client
	$(BIN)/ruff format --check app sandbox problems tests client

# The client's wheel, served at /client/ (GRADER_CLIENT_WHEEL_DIR) for `pip install <url>`;
# rebuilt when its sources change, the older wheels removed so the page offers exactly one.
CLIENT_WHEEL_DIR := client/dist
CLIENT_WHEEL_STAMP := $(CLIENT_WHEEL_DIR)/BUILT
CLIENT_SRC := $(shell find client/src -type f -not -path '*/__pycache__/*' -not -path '*.egg-info/*' 2>/dev/null) client/pyproject.toml client/README.md

client-wheel: $(CLIENT_WHEEL_STAMP)

$(CLIENT_WHEEL_STAMP): $(CLIENT_SRC) | install
	rm -rf $(CLIENT_WHEEL_DIR) client/build
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir $(CLIENT_WHEEL_DIR) ./client
	rm -rf client/build
	touch $(CLIENT_WHEEL_STAMP)

frontend: $(FRONTEND_STAMP)

$(FRONTEND_STAMP): $(FRONTEND_SRC)
	@command -v npm >/dev/null 2>&1 || $(MAKE) --no-print-directory node-packages
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	cd frontend && npm run --silent build

node-packages:
	@if [ "$$(id -u)" = 0 ]; then \
		echo "Installing Debian packages: $(NODE_DEB_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(NODE_DEB_PACKAGES); \
	else \
		echo "npm is missing; the web page needs it to build. Run:"; \
		echo "  sudo apt-get install -y $(NODE_DEB_PACKAGES)"; exit 1; \
	fi

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
