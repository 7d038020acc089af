"""``python -m app users ...`` as real processes; the link it prints sets a password."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import REPO_ROOT
from app.main import create_app
from tests.accounts.conftest import login
from tests.instructors.conftest import make_settings
from tests.support.services import app_command

pytestmark = pytest.mark.timeout(300)


def _with_stdin(data: Path, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env["GRADER_DATA_DIR"] = str(data)
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO_ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_users_create_list_reset_link(tmp_path: Path):
    data = tmp_path / "data"
    made = _with_stdin(
        data,
        "a long admin password\n",
        "users",
        "create",
        "--email",
        "Root@Example.edu",
        "--name",
        "Root",
        "--role",
        "admin",
        "--password-stdin",
    )
    assert made.returncode == 0, made.stderr
    assert "root@example.edu" in made.stdout
    short = _with_stdin(
        data,
        "short\n",
        "users",
        "create",
        "--email",
        "b@example.edu",
        "--name",
        "B",
        "--password-stdin",
    )
    assert short.returncode == 1 and "at least 10" in short.stderr
    plain = app_command(data, "users", "create", "--email", "ta@example.edu", "--name", "Tay")
    assert plain.returncode == 0
    dup = app_command(data, "users", "create", "--email", "ta@example.edu", "--name", "Tay")
    assert dup.returncode == 1 and "already exists" in dup.stderr
    listing = app_command(data, "users", "list")
    assert re.search(r"1\s+admin\s+active\s+root@example.edu\s+Root", listing.stdout)
    assert re.search(r"2\s+member\s+active\s+ta@example.edu\s+Tay", listing.stdout)
    link = app_command(data, "users", "reset-link", "ta@example.edu")
    assert link.returncode == 0, link.stderr
    assert re.fullmatch(r"/reset/[A-Za-z0-9_\-]{40,}\n", link.stdout)
    missing = app_command(data, "users", "reset-link", "nobody@example.edu")
    assert missing.returncode == 1
    with TestClient(create_app(make_settings(data))) as api:
        assert login(api, "root@example.edu", "a long admin password").status_code == 200
        r = api.post(
            "/api/auth/reset",
            json={"secret": link.stdout.strip().removeprefix("/reset/"), "password": "x" * 12},
        )
        assert r.status_code == 200 and r.json()["user"]["email"] == "ta@example.edu"
