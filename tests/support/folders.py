"""Problem folders the tests change or add: edit a copied folder's file, serve extra folders."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from tests.conftest import PROBLEMS_DIR


def edit(path: Path, old: str, new: str) -> None:
    """Replace the first ``old`` in the file with ``new``; ``old`` must be there."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@contextmanager
def serving_folder(tmp_path: Path, problem_dirs: Path) -> Iterator[TestClient]:
    """The app with the shipped problems and those of ``problem_dirs`` (GRADER_PROBLEM_DIRS)."""
    settings = Settings(
        data_dir=tmp_path / "data",
        problems_dir=PROBLEMS_DIR,
        problem_dirs=str(problem_dirs),
        workers=1,
        rate_limit=10_000,
        poll_seconds=0.05,
    )
    with TestClient(create_app(settings)) as client:
        yield client
