"""The gradebook's page routes are shells for their scripts: only the ids from the URL, the
site's security headers, and nothing of any student's data (the API decides who sees what)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from tests.web.conftest import web_assets  # noqa: F401


def test_gradebook_pages_are_shells(api: TestClient, web_assets: Path) -> None:  # noqa: F811
    for path, script, data in [
        ("/courses/3/assignments/7/gradebook", "gradebook", 'data-assignment-id="7"'),
        ("/courses/3/assignments/7/students/11", "gradebook-student", 'data-user-id="11"'),
    ]:
        r = api.get(path)
        assert r.status_code == 200
        assert re.search(rf'src="/static/dist/{script}\.js\?v=\d+"', r.text)
        assert 'data-course-id="3"' in r.text and data in r.text
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert api.get(f"/static/dist/{script}.js").status_code == 200
    assert api.get("/courses/x/assignments/7/gradebook").status_code == 422
    assert api.get("/courses/0/assignments/7/gradebook").status_code == 422
