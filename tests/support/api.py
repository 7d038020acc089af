"""Client-side helpers shared by the API tests (a ``TestClient`` is an ``httpx.Client`` too)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import httpx


def wait_done(api: httpx.Client | str, submission_id: str, timeout: float = 90) -> dict[str, Any]:
    """Poll ``GET /api/submissions/{id}`` until it is done; its body. ``api``: a client (a
    ``TestClient``) or the base URL of a running server."""
    path = f"/api/submissions/{submission_id}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = httpx.get(api + path) if isinstance(api, str) else api.get(path)
        body: dict[str, Any] = response.json()
        if body["status"] == "done":
            return body
        time.sleep(0.05)
    raise AssertionError(f"submission {submission_id} not done after {timeout}s")


def grade_at(api: httpx.Client, url: str, code: str) -> dict[str, Any]:
    """Submit ``code`` to the problem at ``url`` and wait for its report."""
    response = api.post(f"{url}/submissions", params={"wait": 30}, json={"code": code})
    assert response.status_code in (200, 202), response.text
    return wait_done(api, response.json()["id"])


Span = tuple[datetime, datetime]


def running_span(body: dict[str, Any]) -> Span:
    """When a finished submission was running: claimed (``started_at``) to stored
    (``finished_at``); its sandbox run lies inside."""
    return datetime.fromisoformat(body["started_at"]), datetime.fromisoformat(body["finished_at"])


def overlapping(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def latency(body: dict[str, Any]) -> float:
    """Seconds from a finished submission's creation to its stored result."""
    created = datetime.fromisoformat(body["created_at"])
    return (datetime.fromisoformat(body["finished_at"]) - created).total_seconds()
