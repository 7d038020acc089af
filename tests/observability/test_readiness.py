"""``/readyz``: ready only with the schema at the newest migration, the sandbox backend primed
(embedded mode) and the broker answering (Celery mode); ``/healthz`` answers all along."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from alembic import command
from fastapi.testclient import TestClient

from app.db.migrate import alembic_config
from app.main import create_app
from tests.instructors.conftest import make_settings
from tests.support.services import AppProcess, celery_env, free_port, redis_server, wait_for


def _ready(client: TestClient) -> bool:
    return client.get("/readyz").status_code == 200


def test_ready_once_the_sandbox_is_primed_and_not_after_a_downgrade(tmp_path: Path):
    settings = make_settings(tmp_path / "data", sandbox_prime=True)
    with TestClient(create_app(settings)) as client:
        wait_for(lambda: _ready(client), 30, "readiness")
        assert client.get("/readyz").json() == {"status": "ready"}
        engine = client.app.state.sessions.kw["bind"]  # type: ignore[attr-defined]
        with engine.begin() as connection:
            command.downgrade(alembic_config(connection), "-1")
        response = client.get("/readyz")
        assert response.status_code == 503
        error = response.json()["error"]
        assert error["code"] == "not_ready"
        assert "database" in error["message"]
        assert client.get("/healthz").status_code == 200


def test_not_ready_while_the_sandbox_backend_cannot_start(tmp_path: Path):
    settings = make_settings(
        tmp_path / "data",
        sandbox="docker",
        docker_url=f"unix://{tmp_path}/no-engine.sock",
        sandbox_prime=True,
    )
    with TestClient(create_app(settings)) as client:
        readiness = client.app.state.readiness  # type: ignore[attr-defined]
        assert readiness.priming.done.wait(30)
        response = client.get("/readyz")
        assert response.status_code == 503
        message = response.json()["error"]["message"]
        assert message.startswith("sandbox: "), message
        assert "database" not in message
        assert client.get("/healthz").status_code == 200


def test_celery_mode_is_not_ready_without_its_broker(tmp_path: Path):
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings = make_settings(tmp_path / "data", queue="celery", redis_url=dead)
    with TestClient(create_app(settings)) as client:
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["error"]["message"] == "broker: Redis does not answer"


def test_celery_mode_is_ready_with_its_broker(tmp_path: Path):
    with redis_server() as url:
        settings = make_settings(tmp_path / "data", queue="celery", redis_url=url)
        with TestClient(create_app(settings)) as client:
            assert client.get("/readyz").json() == {"status": "ready"}


def test_without_priming_ready_at_once_and_the_sandbox_built_on_first_use(tmp_path: Path):
    settings = make_settings(tmp_path / "data", sandbox_prime=False)
    with TestClient(create_app(settings)) as client:
        assert client.app.state.readiness.priming is None  # type: ignore[attr-defined]
        assert client.get("/readyz").json() == {"status": "ready"}


def test_a_context_closed_while_priming_builds_no_sandbox(tmp_path: Path):
    from app.worker.runtime import grading_context

    settings = make_settings(tmp_path / "data")
    context = grading_context(settings, None, {})  # type: ignore[arg-type]
    context.close()
    with pytest.raises(RuntimeError):
        context.prime()
    assert context._sandbox is None


@pytest.mark.timeout(120)
def test_a_worker_process_answers_its_readiness_on_its_metrics_port(tmp_path: Path):
    """A scale-out worker serves no API: its metrics port says whether it is ready (the sandbox
    primed, the broker answering), here with no broker at all, then with one."""
    port = free_port()
    data = tmp_path / "data"
    database_url = f"sqlite:///{tmp_path / 'grader.db'}"

    def readyz() -> httpx.Response:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)

    def answers() -> bool:
        try:
            return readyz().status_code in (200, 503)
        except httpx.TransportError:
            return False

    dead = f"redis://127.0.0.1:{free_port()}/0"
    worker = AppProcess(
        ["worker"],
        celery_env(database_url, dead, data, metrics_port=str(port)),
        tmp_path / "dead.log",
    ).start()
    try:
        wait_for(answers, 60, "the worker's port")
        wait_for(lambda: "sandbox" not in readyz().text, 60, "the sandbox to be primed")
        refused = readyz()
        assert refused.status_code == 503
        assert refused.json()["error"] == {
            "code": "not_ready",
            "message": "broker: Redis does not answer",
            "field": None,
        }
    finally:
        worker.stop()
    with redis_server() as url:
        worker = AppProcess(
            ["worker"],
            celery_env(database_url, url, data, metrics_port=str(port)),
            tmp_path / "live.log",
        ).start()
        try:
            wait_for(answers, 60, "the worker's port")
            wait_for(lambda: readyz().status_code == 200, 60, "the worker to be ready")
            assert readyz().json() == {"status": "ready"}
        finally:
            worker.stop()
