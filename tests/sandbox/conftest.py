"""Real sandboxes for the attack tests: every test using ``sandbox`` runs once per backend."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.backends.bwrap import BwrapSandbox
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import Host


def _shout(message: str) -> None:
    banner = "!" * 78
    print(f"\n{banner}\n{message}\n{banner}", file=sys.__stderr__, flush=True)


def _docker() -> Sandbox:
    try:
        from tests.sandbox.docker_support import docker_sandbox_or_skip
    except ImportError as exc:  # the docker backend is not in this checkout
        reason = f"DOCKER SANDBOX TESTS SKIPPED: tests/sandbox/docker_support.py unusable: {exc}"
        _shout(reason)
        pytest.skip(reason)
    sandbox: Sandbox = docker_sandbox_or_skip()
    return sandbox


@pytest.fixture(scope="session")
def bwrap_sandbox() -> BwrapSandbox:
    return BwrapSandbox()


@pytest.fixture(params=["bwrap", "docker"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "bwrap":
        bwrap: BwrapSandbox = request.getfixturevalue("bwrap_sandbox")
        return bwrap
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
