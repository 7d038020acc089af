"""Fixtures for the instructor suite: an app on a fresh SQLite file (or a real PostgreSQL),
tokens of every kind, and helpers to build cases."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.auth.tokens import create_token, revoke_token
from app.core.config import Settings
from app.main import create_app
from tests.conftest import PROBLEMS_DIR

PROBLEM = "multi-head-attention"
CASES = f"/api/problems/{PROBLEM}/test-cases"


def make_settings(data_dir: Path, database_url: str | None = None, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "problems_dir": PROBLEMS_DIR,
        "workers": 1,
        "rate_limit": 10_000,
        "poll_seconds": 0.05,
        # Built on the first grading: most tests never grade (priming is tested in
        # tests/observability).
        "sandbox_prime": False,
    }
    values.update(overrides)
    return Settings(**values)


@dataclass
class Tokens:
    instructor: str
    admin: str
    revoked: str


def add_tokens(client: TestClient) -> Tokens:
    with client.app.state.sessions() as session:  # type: ignore[attr-defined]
        _, instructor = create_token(session, "instructor-1", "instructor")
        _, admin = create_token(session, "admin-1", "admin")
        row, revoked = create_token(session, "former-instructor", "instructor")
        revoke_token(session, token_id=row.id)
        session.commit()
    return Tokens(instructor=instructor, admin=admin, revoked=revoked)


MakeClient = Callable[..., TestClient]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[MakeClient]:
    with ExitStack() as stack:

        def make(database_url: str | None = None, **overrides: Any) -> TestClient:
            settings = make_settings(tmp_path / "data", database_url, **overrides)
            return stack.enter_context(TestClient(create_app(settings)))

        yield make


@pytest.fixture
def api(make_client: MakeClient) -> TestClient:
    return make_client()


@pytest.fixture
def tokens(api: TestClient) -> Tokens:
    return add_tokens(api)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def case_inputs(
    seed: int = 0,
    batch: int = 2,
    n_q: int = 3,
    n_k: int = 4,
    d_model: int = 6,
    num_heads: int = 2,
    scale: float = 1.0,
) -> dict[str, Any]:
    """A well-conditioned case as numpy arrays (weights ~ 1/sqrt(d_model))."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.sqrt(d_model)
    return {
        "Q": scale * rng.standard_normal((batch, n_q, d_model)),
        "K": scale * rng.standard_normal((batch, n_k, d_model)),
        "V": rng.standard_normal((batch, n_k, d_model)),
        "W_q": w * rng.standard_normal((d_model, d_model)),
        "W_k": w * rng.standard_normal((d_model, d_model)),
        "W_v": w * rng.standard_normal((d_model, d_model)),
        "W_o": w * rng.standard_normal((d_model, d_model)),
        "num_heads": num_heads,
    }


def as_json(inputs: dict[str, Any]) -> dict[str, Any]:
    return {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in inputs.items()}


def error_of(response: Any) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]
