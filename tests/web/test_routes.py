"""The page routes and static assets, through the real app (no browser)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.web import routes


@pytest.fixture(autouse=True)
def _built(web_assets: Path) -> None:
    """Every test here needs the built assets."""


def test_pages_are_shells_for_the_bundled_scripts(client: TestClient) -> None:
    for path, script in [("/", "index"), ("/instructor", "instructor")]:
        r = client.get(path)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/html")
        assert re.search(rf'src="/static/dist/{script}\.js\?v=\d+"', r.text)
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff"
    r = client.get("/problems/multi-head-attention")
    assert r.status_code == 200
    assert 'data-problem-id="multi-head-attention"' in r.text
    assert "<title>Multi-head attention · TensorJudge</title>" in r.text


def test_unknown_problem_page_is_404_and_escapes_the_id(client: TestClient) -> None:
    r = client.get('/problems/%3Cimg src=x onerror=alert(1)%3E"')
    assert r.status_code == 404
    assert "<img" not in r.text
    assert 'data-missing-problem="&lt;img src=x onerror=alert(1)&gt;&quot;"' in r.text


def test_assets_and_fonts_are_served_locally(client: TestClient) -> None:
    css = client.get("/static/dist/app.css")
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    fonts = re.findall(r"url\([\"']?(?:\./)?([^)\"']+\.woff2)[\"']?\)", css.text)
    assert len(fonts) >= 10, "KaTeX's fonts are not in the bundle"
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", css.text), "CSS loads from another host"
    font = client.get(f"/static/dist/{fonts[0]}")
    assert font.status_code == 200 and len(font.content) > 1000
    for script in ("index", "problem", "instructor"):
        js = client.get(f"/static/dist/{script}.js")
        assert js.status_code == 200
        assert "javascript" in js.headers["content-type"]


def test_static_never_reaches_the_problem_folders(client: TestClient) -> None:
    for path in (
        "/static/../problems/multi-head-attention/reference.py",
        "/static/%2e%2e/%2e%2e/%2e%2e/problems/multi-head-attention/reference.py",
        "/static/..%2f..%2f..%2fproblems/multi-head-attention/reference.py",
    ):
        r = client.get(path)
        assert r.status_code == 404, path
        assert "def multi_head_attention" not in r.text


def test_missing_build_gives_a_clear_message(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(routes, "BUILD_MARKER", tmp_path / "dist" / "BUILT")
    r = client.get("/problems/multi-head-attention")
    assert r.status_code == 503
    assert "make frontend" in r.text
    assert "/static/dist/" not in r.text
