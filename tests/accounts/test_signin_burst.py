"""Sign-in under concurrency: the throttle counts an attempt before argon2 verifies it, so a
burst of wrong passwords is verified exactly as often as the limits allow (on SQLite and
PostgreSQL)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.auth import passwords
from app.auth.models import LoginFailure
from tests.accounts.conftest import MakeClient, login, set_password
from tests.support.people import seed_people

BURST = 30
# Every admitted attempt gets its argon2 slot, however loaded the machine: these tests are
# about the throttle, not the slots (tests/accounts/test_hashing_slots.py).
PATIENT = {"password_hashing_wait_seconds": 120}


class CountingHasher:
    """The real argon2 hasher, counting the verifications it actually ran."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.verified = 0
        self.lock = threading.Lock()

    def verify(self, password: str, stored: str) -> bool:
        with self.lock:
            self.verified += 1
        return bool(self.real.verify(password, stored))

    def hash(self, password: str) -> str:
        return str(self.real.hash(password))


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    counting = CountingHasher(passwords._hasher)
    monkeypatch.setattr(passwords, "_hasher", counting)
    return counting


def _burst(send: Any) -> list[int]:
    start = threading.Barrier(BURST)

    def one(i: int) -> int:
        start.wait()
        return int(send(i).status_code)

    with ThreadPoolExecutor(BURST) as pool:
        return list(pool.map(one, range(BURST)))


@pytest.mark.slow
def test_a_burst_of_wrong_passwords_for_one_email_is_verified_exactly_up_to_the_limit(
    make_client: MakeClient, database_url: str | None, hasher: CountingHasher
):
    client = make_client(database_url, login_max_failures_per_email=5, **PATIENT)
    people = seed_people(client.app.state.sessions)  # type: ignore[attr-defined]
    set_password(client, people.users["student"])
    statuses = _burst(lambda i: login(client, password=f"wrong password {i}"))
    print(f"{BURST} concurrent wrong passwords, one email: {hasher.verified} verified")
    assert set(statuses) <= {401, 429}, statuses
    assert hasher.verified == 5
    assert statuses.count(401) == hasher.verified
    _only_failures_counted(client, hasher.verified)


def _only_failures_counted(client: TestClient, failures: int) -> None:
    """Refused attempts are forgotten: what stays counted is exactly what was verified."""
    with client.app.state.sessions() as session:  # type: ignore[attr-defined]
        assert session.scalar(select(func.count()).select_from(LoginFailure)) == failures


@pytest.mark.slow
def test_a_burst_of_guesses_from_one_address_is_verified_exactly_up_to_the_limit(
    make_client: MakeClient, database_url: str | None, hasher: CountingHasher
):
    client = make_client(
        database_url,
        login_max_failures_per_email=100,
        login_max_failures_per_address=20,
        **PATIENT,
    )
    statuses = _burst(lambda i: login(client, email=f"guess{i}@example.edu", password="wrong!"))
    print(f"{BURST} concurrent guesses, one address: {hasher.verified} verified")
    assert set(statuses) <= {401, 429}, statuses
    assert hasher.verified == 20
    assert statuses.count(401) == hasher.verified
    _only_failures_counted(client, hasher.verified)
