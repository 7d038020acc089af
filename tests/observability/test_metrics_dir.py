"""The multiprocess directory: files of processes that are gone are removed when nobody using the
directory lives any more, and kept while one does (so the summed counters never go down)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.core import metrics


@pytest.fixture
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture(autouse=True)
def back_to_one_process() -> Iterator[None]:
    yield
    metrics.configure(None)


def test_a_restarted_group_starts_from_zero(tmp_path: Path, dead_pid: int):
    stale = tmp_path / f"counter_{dead_pid}.db"
    stale.write_bytes(b"\0" * 16)
    metrics.configure(tmp_path)
    assert not stale.exists()
    metrics.rejected("empty_code")
    text = metrics.exposition().decode()
    assert 'tensorjudge_submissions_rejected_total{reason="empty_code"} 1.0' in text
    assert (tmp_path / f"counter_{os.getpid()}.db").exists()


def test_a_dead_workers_counts_stay_while_another_process_lives(tmp_path: Path, dead_pid: int):
    # A live process's file (the parent of this test, standing for the API) and a dead one's.
    live = tmp_path / f"counter_{os.getppid()}.db"
    dead = tmp_path / f"counter_{dead_pid}.db"
    for path in (live, dead):
        path.write_bytes(b"")
    metrics.configure(tmp_path)
    assert live.exists() and dead.exists()
