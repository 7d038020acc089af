"""Real sandboxes for the attack tests: every test using ``sandbox`` runs once per backend."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.protocol import RunRequest, RunResult, Sandbox
from tests.sandbox.helpers import Host
from tests.support.required_services import DOCKER_SKIPPED


def _shout(message: str) -> None:
    banner = "!" * 78
    print(f"\n{banner}\n{message}\n{banner}", file=sys.__stderr__, flush=True)


def _docker() -> Sandbox:
    try:
        from tests.sandbox.docker_support import docker_sandbox_or_skip
    except ImportError as exc:  # the docker backend is not in this checkout
        reason = f"{DOCKER_SKIPPED}: tests/sandbox/docker_support.py unusable: {exc}"
        _shout(reason)
        pytest.skip(reason)
    sandbox: Sandbox = docker_sandbox_or_skip()
    return sandbox


@pytest.fixture(scope="session")
def bwrap_sandbox() -> BwrapSandbox:
    return BwrapSandbox()


class AlwaysWarm:
    """The warm pool, made to serve every run from a sandbox launched before the job existed
    (pre-warmed for the run's limits), so the attack tests exercise the fast path, not a cold
    fallback."""

    name = "bwrap"

    def __init__(self, pool: WarmPoolSandbox) -> None:
        self.pool = pool

    @property
    def last_run_id(self) -> str:
        return self.pool.last_run_id

    @property
    def last_cgroup_dirs(self) -> list[Path]:
        return self.pool.last_cgroup_dirs

    def run(self, request: RunRequest) -> RunResult:
        assert self.pool.prewarm(request.limits), "the warm pool did not fill"
        served = self.pool.warm_runs
        result = self.pool.run(request)
        assert self.pool.warm_runs == served + 1, "the run was not served warm"
        return result


@pytest.fixture(scope="session")
def warm_pool(bwrap_sandbox: BwrapSandbox) -> Iterator[WarmPoolSandbox]:
    pool = WarmPoolSandbox(bwrap_sandbox, size=1)
    yield pool
    pool.close()


class AlwaysForked:
    """The fork server, made to serve every run from a fork of its zygote: a cold fallback
    fails the test, so the attack tests exercise the fork path."""

    name = "bwrap"

    def __init__(self, server: ForkServerSandbox) -> None:
        self.server = server

    @property
    def last_run_id(self) -> str:
        return self.server.last_run_id

    @property
    def last_cgroup_dirs(self) -> list[Path]:
        return self.server.last_cgroup_dirs

    def leftovers(self) -> list[int]:
        return self.server.leftovers()

    def run(self, request: RunRequest) -> RunResult:
        assert self.server.wait_ready(), "the fork server did not start"
        forked = self.server.forked_runs
        result = self.server.run(request)
        assert self.server.forked_runs == forked + 1, "the run was not served by the fork server"
        return result


@pytest.fixture(scope="session")
def fork_server(bwrap_sandbox: BwrapSandbox) -> Iterator[ForkServerSandbox]:
    server = ForkServerSandbox(bwrap_sandbox)
    yield server
    server.close()


@pytest.fixture(scope="module")
def forked() -> Iterator[AlwaysForked]:
    """A fork server of the module's own, every run forked: attack modules that may damage it
    (kill its zygote, flood it) share it with no other module."""
    server = ForkServerSandbox(BwrapSandbox())
    try:
        yield AlwaysForked(server)
    finally:
        server.close()


@pytest.fixture
def own_fork_server(bwrap_sandbox: BwrapSandbox) -> Iterator[ForkServerSandbox]:
    """A ready fork server of the test's own: for tests that count its runs, kill its zygote
    or look for what its runs left."""
    server = ForkServerSandbox(bwrap_sandbox)
    assert server.wait_ready()
    yield server
    server.close()


@pytest.fixture(params=["bwrap", "bwrap-warm", "bwrap-fork", "docker"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "bwrap":
        bwrap: BwrapSandbox = request.getfixturevalue("bwrap_sandbox")
        return bwrap
    if request.param == "bwrap-warm":
        return AlwaysWarm(request.getfixturevalue("warm_pool"))
    if request.param == "bwrap-fork":
        return AlwaysForked(request.getfixturevalue("fork_server"))
    return _docker()


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    token = "CANARY-" + secrets.token_hex(16)
    canary = tmp_path / "canary.txt"
    canary.write_text(token)
    canary.chmod(0o644)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "secret.txt").write_text(token)
    monkeypatch.setenv("TJ_CANARY_SECRET", token)
    name = f"tj-pwned-{secrets.token_hex(6)}"
    outside = [
        Path("/tmp") / name,
        Path.home() / name,
        Path(__file__).resolve().parents[2] / name,
        tmp_path / name,
        Path("/") / name,
    ]
    h = Host(token=token, canary_file=canary, data_dir=data_dir, outside=outside)
    yield h
    for path in outside:
        if path.exists():
            path.unlink()
