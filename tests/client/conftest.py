"""The client against a real server: ``python -m app serve`` on a free 127.0.0.1 port with the
real sandbox, its wheel built by ``make client-wheel``, and a real instructor token."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.core.config import REPO_ROOT
from tests.support.services import AppProcess, app_command, serve

PROBLEM = "multi-head-attention"
# The console script pip installed from client/pyproject.toml, as a student runs it.
TJ = [str(Path(sys.executable).parent / "tj")]


@dataclass
class Grader:
    url: str
    data_dir: Path
    process: AppProcess
    token: str = ""


@pytest.fixture(scope="session")
def client_wheel_dir() -> Path:
    # Same rule as `make run`/`make test`: rebuilt only when client/ changed.
    subprocess.run(["make", "-s", "client-wheel"], cwd=REPO_ROOT, check=True, timeout=300)
    directory = REPO_ROOT / "client" / "dist"
    assert any(directory.glob("tensorjudge_client-*.whl")), "make client-wheel built no wheel"
    return directory


def create_token(data_dir: Path, name: str) -> str:
    """An admin's token: the tests change the catalog's cases, which only administrators do."""
    created = app_command(data_dir, "tokens", "create", "--role", "admin", "--name", name)
    assert created.returncode == 0, created.stderr
    found = re.findall(r"^tj_\S+$", created.stdout, re.MULTILINE)
    assert len(found) == 1, created.stdout
    return found[0]


def make_account(data_dir: Path, email: str, name: str, password: str) -> None:
    """An account with a password, made as an operator does (``app users create``)."""
    made = subprocess.run(
        [sys.executable, "-m", "app", "users", "create", "--email", email, "--name", name,
         "--password-stdin"],
        cwd=REPO_ROOT,
        env={**os.environ, "GRADER_DATA_DIR": str(data_dir)},
        input=password + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr


def start_grader(root: Path, **settings: str) -> Grader:
    """A server of its own; ``settings`` adds ``GRADER_*`` values by their lowercase name."""
    data_dir = root / "data"
    env = {
        "GRADER_DATA_DIR": str(data_dir),
        "GRADER_CLIENT_WHEEL_DIR": str(REPO_ROOT / "client" / "dist"),
    }
    env.update({f"GRADER_{k.upper()}": v for k, v in settings.items()})
    process, url = serve(env, root / "server.log")
    return Grader(url=url, data_dir=data_dir, process=process)


@pytest.fixture(scope="session")
def grader(client_wheel_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grader]:
    """One server for the client tests that need no special limits (rate limit raised: they
    submit more than the default allows per minute)."""
    server = start_grader(tmp_path_factory.mktemp("client-grader"), rate_limit="1000")
    try:
        server.token = create_token(server.data_dir, "client-tests")
        yield server
    finally:
        server.process.stop()


def tj(
    *args: str, url: str, cwd: Path | None = None, token: str | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """``tj`` as a subprocess, the way a student runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("TJ_URL", "TJ_TOKEN")}
    env["TJ_URL"] = url
    if token:
        env["TJ_TOKEN"] = token
    return subprocess.run(
        [*TJ, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
