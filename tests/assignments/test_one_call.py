"""Accepting a graded submission is one hand-off from the event loop to a thread and back: the
caller's token, membership, the assignment's problem, the body, the admission, the insert and
the answer all happen in it (docs/deadlines.md). The course check deferred into that call still
refuses in the order the dependencies did: who is calling before what they sent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import pytest

from tests.assignments.conftest import Course, error_of

CODE = "def multi_head_attention(*args):\n    return 0\n"


def count_hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call the app hands to a thread from now on: to an executor (its own pools,
    app.core.threads) or to anyio's threads (FastAPI's sync dependencies, ``run_in_threadpool``)."""
    calls: list[str] = []
    run_in_executor = asyncio.BaseEventLoop.run_in_executor
    anyio_run_sync = anyio.to_thread.run_sync

    def counted_executor(loop: Any, executor: Any, call: Callable[..., Any], *args: Any) -> Any:
        calls.append(repr(call)[:120])
        return run_in_executor(loop, executor, call, *args)

    async def counted_anyio(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(repr(call)[:120])
        return await anyio_run_sync(call, *args, **kwargs)

    monkeypatch.setattr(asyncio.BaseEventLoop, "run_in_executor", counted_executor)
    monkeypatch.setattr(anyio.to_thread, "run_sync", counted_anyio)
    return calls


def test_a_graded_submission_is_accepted_in_one_thread_call(
    course: Course, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = course.create()
    course.submit(created["id"], CODE + "# warm-up\n")  # first-use writes (token's last use)
    calls = count_hand_offs(monkeypatch)
    response = course.submit(created["id"], CODE)
    assert response.status_code == 202, response.text
    assert response.json()["status"] == "queued"
    # Before: the token check, the membership, the problem check, the insert, the answer.
    assert len(calls) == 1, calls


def test_the_caller_is_refused_before_the_body_is_judged(course: Course) -> None:
    created = course.create()
    path = f"{course.base}/{created['id']}/problems/multi-head-attention/submissions"
    settings = course.api.app.state.settings  # type: ignore[attr-defined]
    too_big = {"code": "x" * (settings.max_code_bytes * 7 + 5000)}
    anonymous = course.api.post(path, json=too_big)
    assert anonymous.status_code == 401, anonymous.text
    assert anonymous.headers["WWW-Authenticate"] == "Bearer"
    unknown = course.api.post(path, json=too_big, headers={"Authorization": "Bearer nope"})
    assert (unknown.status_code, error_of(unknown)["code"]) == (403, "forbidden")
    outsider = course.api.post(path, json=too_big, headers=course.people.headers("outsider"))
    assert (outsider.status_code, error_of(outsider)["code"]) == (404, "course_not_found")
    student = course.api.post(path, json=too_big, headers=course.people.headers("student"))
    assert (student.status_code, error_of(student)["code"]) == (413, "code_too_large")
    empty = course.api.post(path, json={"code": " "}, headers=course.people.headers("student"))
    assert (empty.status_code, error_of(empty)["code"]) == (422, "empty_code")
