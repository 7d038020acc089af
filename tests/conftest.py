from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect, text

from app.core.config import REPO_ROOT, Settings
from app.main import create_app
from app.problems.loader import Problem, load_problems
from tests.support.migrated_template import from_template
from tests.support.required_services import POSTGRES_SKIPPED
from tests.support.required_services import (
    pytest_runtest_makereport as pytest_runtest_makereport,  # CI refuses service skips
)
from tests.support.services import PostgresCluster, start_postgres

PROBLEMS_DIR = REPO_ROOT / "problems"

# The servers the tests start (hundreds) leave torch out of their fork server's zygote: it costs
# each start ~3 s. Their PyTorch gradings run as cold sandboxes; tests/sandbox builds its fork
# servers itself, with torch loaded, so every isolation test still runs beside it.
os.environ.setdefault("GRADER_SANDBOX_PRELOAD_TORCH", "false")

# `make test` runs the suite in two phases: every other test on parallel workers, then these in
# one process with nothing else running. They measure what other tests' load would blur or fake:
# channels between runs (noise can hide a channel that is open, or open a strict xfail), CPU and
# wall-clock limits, and the sandbox's timing.
SERIAL = ("tests/sandbox/",)
# Sandbox modules that time nothing and whose limits are far above what a run needs: what the
# host decodes (wire, identity cache, the unsafe backend, imports), PyTorch jobs (10 CPU s,
# 30 wall s), and the hunt for other cases' inputs (8 CPU s, 15 wall s).
PARALLEL_SANDBOX = tuple(
    f"tests/sandbox/{name}.py"
    for name in (
        "test_boundaries",
        "test_identity_cache",
        "test_process_backend",
        "test_runner_hidden_inputs",
        "test_torch",
        "test_wire",
    )
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SERIAL) and not item.nodeid.startswith(PARALLEL_SANDBOX):
            item.add_marker(pytest.mark.serial)


@pytest.fixture(scope="session")
def problems() -> dict[str, Problem]:
    return load_problems(PROBLEMS_DIR)


@pytest.fixture(scope="session")
def mha(problems: dict[str, Problem]) -> Problem:
    return problems["multi-head-attention"]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # Built on the first grading (priming is tested in tests/observability).
    return Settings(data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR, sandbox_prime=False)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client


@pytest.fixture(scope="session", autouse=True)
def migrated_template() -> Iterator[None]:
    """Apps the tests start in this process open new SQLite databases as copies of one migrated
    for real (tests/support/migrated_template.py)."""
    import app.worker.runtime as runtime

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "upgrade", from_template(runtime.upgrade))
        yield


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    """One real PostgreSQL cluster for the whole session, started under /tmp on a free port."""
    cluster = start_postgres()
    if isinstance(cluster, str):
        pytest.skip(f"{POSTGRES_SKIPPED}: {cluster}")
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def postgres_url(postgres: PostgresCluster) -> str:
    return postgres.create_database("tensorjudge_test")


def truncate_all(url: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            # Every table but Alembic's: each migration's tables are emptied alike.
            present = [t for t in inspect(conn).get_table_names() if t != "alembic_version"]
            if present:
                conn.execute(text(f"TRUNCATE {', '.join(present)} RESTART IDENTITY CASCADE"))
    finally:
        engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str | None:
    """None: a SQLite file in a fresh data dir; else the shared PostgreSQL database, emptied."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    truncate_all(url)
    return url
