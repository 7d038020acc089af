from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.core.config import REPO_ROOT, Settings
from app.main import create_app
from app.problems.loader import Problem, load_problems

PROBLEMS_DIR = REPO_ROOT / "problems"


@pytest.fixture(scope="session")
def problems() -> dict[str, Problem]:
    return load_problems(PROBLEMS_DIR)


@pytest.fixture(scope="session")
def mha(problems: dict[str, Problem]) -> Problem:
    return problems["multi-head-attention"]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", problems_dir=PROBLEMS_DIR)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client
