"""The courses page shells, through the real app (no browser): each loads its script, and the
join page names the course (escaped) or answers 404."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from app.courses.models import Course
from tests.support.people import People
from tests.web.conftest import web_assets  # noqa: F401


@pytest.fixture(autouse=True)
def _built(web_assets: Path) -> None:  # noqa: F811
    """The shells need the built assets."""


def test_the_pages_load_their_scripts(client: TestClient, people: People) -> None:
    course = people.courses["course"]
    for path, script in (
        ("/courses", "courses"),
        (f"/courses/{course}/roster", "roster"),
        ("/join/JOIN-COURSE", "join"),
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert re.search(rf'src="/static/dist/{script}\.js\?v=\d+"', response.text)
        assert "script-src 'self'" in response.headers["content-security-policy"]
    assert f'data-course-id="{course}"' in client.get(f"/courses/{course}/roster").text


def test_the_join_page_names_the_course_escaped_or_answers_404(
    client: TestClient, people: People, sessions: sessionmaker[Session]
) -> None:
    with sessions() as session:
        course = session.get(Course, people.courses["course"])
        assert course is not None
        course.title = '<img src=x onerror="alert(1)">'
        session.commit()
    page = client.get("/join/join-course")
    assert page.status_code == 200
    assert 'data-join-code="JOIN-COURSE"' in page.text
    assert "<img" not in page.text
    assert 'data-course-title="&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"' in page.text
    missing = client.get("/join/NOPE")
    assert missing.status_code == 404
    assert 'data-missing="1"' in missing.text
    # An archived course's (former) code, or a closed one, joins nothing.
    client.delete(f"/api/courses/{people.courses['course']}", headers=people.headers("instructor"))
    assert client.get("/join/JOIN-COURSE").status_code == 404
