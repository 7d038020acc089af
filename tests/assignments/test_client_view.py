"""The client shows what an assignment's feedback policy left in a result, in its own words."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from app.core.config import REPO_ROOT


def _this_checkouts_view() -> ModuleType:
    """This checkout's client view module (the installed client may be another checkout's);
    it imports nothing of the client's own."""
    path = REPO_ROOT / "client" / "src" / "tensorjudge_client" / "view.py"
    spec = importlib.util.spec_from_file_location("tensorjudge_client_view_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


view = _this_checkouts_view()


def test_summary_and_verdict_views_are_said() -> None:
    summary = {"verdict": "wrong_answer", "score": 0.2, "view": "summary", "mode": "submit",
               "hidden_passed": 3, "hidden_total": 9}  # fmt: skip
    assert "3 of 9 hidden cases passed" in view.summary_line(summary)
    hidden = {"verdict": "wrong_answer", "score": None, "score_hidden": True, "view": "verdict"}
    line = view.summary_line(hidden)
    assert "score hidden until published" in line and "verdict only" in line
    assert "hidden cases passed" not in view.summary_line({"score": 1.0, "view": "visible"})
