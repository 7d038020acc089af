"""The deployment's configuration: production refuses example secrets, and the compose stack
keeps its promises (health checks, restart policies, named volumes, loopback by default).

The stack itself is proven end to end by .ci/stack-test.sh (it needs a Docker engine)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from app.core.config import Settings

ROOT = Path(__file__).resolve().parents[2]
STRONG = "3f9c2a7d1e8b4c6f0a5d9e2b7c1f4a8d"


def production(**fields: Any) -> Settings:
    return Settings(env="production", **fields)


def env_example() -> dict[str, str]:
    values = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        match = re.fullmatch(r"([A-Z_]+)=(.*)", line.strip())
        if match:
            values[match[1]] = match[2]
    return values


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


@pytest.mark.parametrize("password", ["change-me", "postgres", "CHANGEME", "short-pw", ""])
def test_production_refuses_an_example_or_short_database_password(password: str) -> None:
    with pytest.raises(ValidationError, match="GRADER_DATABASE_URL"):
        production(database_url=f"postgresql+psycopg://tensorjudge:{password}@db/tensorjudge")


def test_production_refuses_an_example_redis_password() -> None:
    with pytest.raises(ValidationError, match="GRADER_REDIS_URL"):
        production(redis_url="redis://:change-me@redis:6379/0")


def test_production_refuses_the_passwords_of_env_example() -> None:
    example = env_example()
    with pytest.raises(ValidationError, match="example default"):
        production(database_url=f"postgresql://u:{example['POSTGRES_PASSWORD']}@postgres/db")
    with pytest.raises(ValidationError, match="example default"):
        production(redis_url=f"redis://:{example['REDIS_PASSWORD']}@redis:6379/0")
    with pytest.raises(ValidationError, match="GRADER_CASE_SEED_SECRET"):
        production(case_seed_secret=example["CASE_SEED_SECRET"])


def test_production_accepts_random_passwords_and_passwordless_urls() -> None:
    settings = production(
        database_url=f"postgresql+psycopg://tensorjudge:{STRONG}@postgres/tensorjudge",
        redis_url=f"redis://:{STRONG}@redis:6379/0",
    )
    assert settings.env == "production"
    # Peer or certificate authentication: no password in the URL to judge.
    assert production(database_url="postgresql:///tensorjudge", redis_url="redis://redis:6379/0")


def test_development_accepts_example_passwords() -> None:
    settings = Settings(database_url="postgresql://u:change-me@localhost/db")
    assert settings.env == "development"


def test_compose_defaults_to_production_and_takes_secrets_from_env() -> None:
    services = compose()["services"]
    env = services["api"]["environment"]
    assert env["GRADER_ENV"] == "${GRADER_ENV:-production}"
    assert "${POSTGRES_PASSWORD:?" in env["GRADER_DATABASE_URL"]
    assert "${REDIS_PASSWORD:?" in env["GRADER_REDIS_URL"]
    # The API and every worker derive per-student cases from one key.
    assert env["GRADER_CASE_SEED_SECRET"].startswith("${CASE_SEED_SECRET:?")
    assert (
        services["worker"]["environment"]["GRADER_CASE_SEED_SECRET"]
        == (env["GRADER_CASE_SEED_SECRET"])
    )
    assert services["worker"]["environment"]["GRADER_DATABASE_URL"] == env["GRADER_DATABASE_URL"]
    text = (ROOT / "docker-compose.yml").read_text()
    assert STRONG not in text and "change-me" not in text, "no secret in the compose file"
    assert ".env" in (ROOT / ".gitignore").read_text().splitlines()


def test_every_running_service_has_a_healthcheck_and_a_restart_policy() -> None:
    services = compose()["services"]
    running = {name: s for name, s in services.items() if "build" not in s.get("profiles", [])}
    assert set(running) == {"api", "worker", "postgres", "redis", "prometheus"}
    dockerfile = (ROOT / "Dockerfile").read_text()
    for name, service in running.items():
        assert service.get("restart") == "unless-stopped", name
        # The API's check is its readiness (the image's HEALTHCHECK, GET /healthz, otherwise).
        assert "healthcheck" in service or (name == "api" and "\nHEALTHCHECK " in dockerfile), name
    assert "/readyz" in str(running["api"]["healthcheck"]["test"])


def test_data_lives_on_named_volumes_and_the_api_on_loopback() -> None:
    spec = compose()
    declared = set(spec["volumes"])
    for name in ("api", "postgres", "redis"):
        sources = [v.split(":")[0] for v in spec["services"][name]["volumes"]]
        assert sources and all(source in declared for source in sources), (name, sources)
    assert spec["services"]["api"]["ports"] == ["${API_BIND:-127.0.0.1}:${API_PORT:-8000}:8000"]
    assert spec["services"]["prometheus"]["ports"] == [
        "${PROMETHEUS_BIND:-127.0.0.1}:${PROMETHEUS_PORT:-9090}:9090"
    ]
