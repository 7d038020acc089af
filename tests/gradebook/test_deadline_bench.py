"""The deadline bench itself, at a small scale: 20 students through the real server and
sandbox, nothing lost, every verdict the one its code deserves, the gradebook counting every
attempt (``make bench-deadline`` runs it at 300)."""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app.core.config import REPO_ROOT
from tests.web.conftest import web_assets  # noqa: F401

pytestmark = pytest.mark.timeout(300)


def test_deadline_bench_small(web_assets: Path) -> None:  # noqa: F811
    spec = importlib.util.spec_from_file_location("deadline", REPO_ROOT / "bench" / "deadline.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # In a thread of its own: the bench runs asyncio and Playwright's sync API, and the browser
    # tests before it in the suite leave an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        figures = pool.submit(
            bench.run, students=20, per_student=2, timeout=120, due_in=None
        ).result()
    assert figures["lost"] == 0
    assert figures["submissions_accepted"] == figures["graded"] == figures["gradings_rows"] == 40
    assert figures["wrong_verdicts"] == 0
    assert figures["attempts_in_gradebook"] == 40
    assert figures["ok"], figures
