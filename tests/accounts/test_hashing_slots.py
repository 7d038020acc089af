"""The argon2 slots: however many sign-ins arrive at once, at most GRADER_PASSWORD_HASHING_SLOTS
verifications run together, and one that cannot get a slot in time is turned away (503,
Retry-After) without being counted as a failed sign-in."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import func, select

from app.auth import passwords
from app.auth.hashing_slots import HashingSlots
from app.auth.models import LoginFailure
from tests.accounts.conftest import MakeClient, error_of, login

CONCURRENT = 8


class InFlightHasher:
    """The real argon2 hasher, counting the verifications running at the same time; with
    ``hold`` set, the first verification waits until ``release`` is set."""

    def __init__(self, real: Any, hold: bool = False) -> None:
        self.real = real
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0
        self.verified = 0
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()

    def verify(self, password: str, stored: str) -> bool:
        with self.lock:
            self.in_flight += 1
            self.verified += 1
            self.most = max(self.most, self.in_flight)
        self.entered.set()
        try:
            assert self.release.wait(60)
            return bool(self.real.verify(password, stored))
        finally:
            with self.lock:
                self.in_flight -= 1

    def hash(self, password: str) -> str:
        return str(self.real.hash(password))


def _install(monkeypatch: pytest.MonkeyPatch, hold: bool = False) -> InFlightHasher:
    hasher = InFlightHasher(passwords._hasher, hold)
    monkeypatch.setattr(passwords, "_hasher", hasher)
    return hasher


def _failures(client: Any) -> int:
    with client.app.state.sessions() as session:
        return int(session.scalar(select(func.count()).select_from(LoginFailure)) or 0)


@pytest.mark.slow
def test_one_slot_never_runs_two_verifications_at_once(
    make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
):
    client = make_client(
        password_hashing_slots=1,
        password_hashing_wait_seconds=120,
        login_max_failures_per_address=1000,
    )
    hasher = _install(monkeypatch)
    start = threading.Barrier(CONCURRENT)

    def one(i: int) -> int:
        start.wait()
        return int(login(client, email=f"someone{i}@example.edu", password="wrong!").status_code)

    with ThreadPoolExecutor(CONCURRENT) as pool:
        statuses = list(pool.map(one, range(CONCURRENT)))
    print(f"{CONCURRENT} concurrent sign-ins, 1 slot: at most {hasher.most} verifying at once")
    assert statuses == [401] * CONCURRENT
    assert hasher.verified == CONCURRENT
    assert hasher.most == 1


def test_a_sign_in_without_a_slot_in_time_is_turned_away_uncounted(
    make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
):
    client = make_client(password_hashing_slots=1, password_hashing_wait_seconds=0.2)
    hasher = _install(monkeypatch, hold=True)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(login, client, "first@example.edu", "wrong!")
        assert hasher.entered.wait(60)  # the one slot is taken, and held
        turned_away = login(client, email="second@example.edu", password="wrong!")
        hasher.release.set()
        assert first.result().status_code == 401
    assert turned_away.status_code == 503
    assert error_of(turned_away)["code"] == "busy"
    assert int(turned_away.headers["Retry-After"]) >= 1
    assert hasher.verified == 1
    assert _failures(client) == 1  # the first's wrong password; the turned-away one is not
    # The slot was given back: the next sign-in is verified.
    assert login(client, email="third@example.edu", password="wrong!").status_code == 401


def test_a_slot_is_handed_to_a_waiter_on_another_event_loop():
    """The server's slots are shared by every event loop of the process."""
    slots = HashingSlots(1, wait_seconds=60)
    holding, let_go = threading.Event(), threading.Event()
    order: list[str] = []

    def hold() -> None:
        holding.set()
        assert let_go.wait(60)
        order.append("first")

    def second() -> None:
        order.append("second")

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(asyncio.run, slots.run(hold))
        assert holding.wait(60)
        waiting = pool.submit(asyncio.run, slots.run(second))
        while not slots._waiters:  # queued on its own loop
            time.sleep(0.01)
        let_go.set()
        first.result(60)
        waiting.result(60)
    assert order == ["first", "second"]
    assert slots._free == 1 and not slots._waiters
