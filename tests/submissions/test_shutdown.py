"""A stopped server leaves nothing running: the fork server, its spares and the lease renewals
end with the app (before, each app left three threads and a dozen descriptors behind, and a
process that started ~60 apps stopped grading)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import create_app
from tests.instructors.conftest import make_settings

PROBLEM = "multi-head-attention"


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _grade_once(tmp_path: Path, name: str) -> None:
    with TestClient(create_app(make_settings(tmp_path / name))) as api:
        made = api.post(
            f"/api/problems/{PROBLEM}/submissions?wait=30",
            json={"code": "def multi_head_attention(*args):\n    return 0\n"},
        )
        assert made.status_code == 200, made.text
        assert {t.name for t in threading.enumerate()} & {"sandbox-fork-server", "leases"}


def test_stopping_the_app_ends_its_sandbox_and_lease_threads(tmp_path: Path) -> None:
    _grade_once(tmp_path, "warm-up")  # imports and caches that live for the process
    threads, fds = threading.active_count(), _open_fds()
    for i in range(3):
        _grade_once(tmp_path, f"run-{i}")
    left = sorted(t.name for t in threading.enumerate())
    assert threading.active_count() <= threads, left
    assert _open_fds() <= fds
