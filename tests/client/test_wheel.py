"""The server offers the client's wheel: one ``pip install <url>/client/<wheel>`` line works,
and a server without the wheel says so with a 404, not a 500."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from tensorjudge_client import __version__

from app.core.config import REPO_ROOT, Settings
from app.main import create_app
from tests.client.conftest import Grader

pytestmark = pytest.mark.timeout(300)


def test_pip_installs_the_client_from_the_servers_url(grader: Grader, tmp_path: Path):
    info = httpx.get(f"{grader.url}/api/client", timeout=30).json()
    assert info["filename"].startswith(f"tensorjudge_client-{__version__}-")
    listing = httpx.get(f"{grader.url}/client/", timeout=30)
    assert listing.status_code == 200 and f'href="{info["filename"]}"' in listing.text

    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(target), f"{grader.url}{info['path']}"],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    # The installed copy (not the editable checkout) imports and runs `tj --version`.
    env = dict(os.environ, PYTHONPATH=str(target))
    probe = subprocess.run(
        [sys.executable, "-c", "import tensorjudge_client as t, sys; print(t.__file__); "
         "from tensorjudge_client.cli import main; sys.argv = ['tj', '--version']; main()"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert probe.stdout.startswith(str(target)), probe.stdout + probe.stderr
    assert f"tj {__version__}" in probe.stdout
    assert (target / "tensorjudge_client" / "py.typed").exists()


def test_a_server_without_the_wheel_answers_404(tmp_path: Path):
    settings = Settings(
        data_dir=tmp_path / "data",
        problems_dir=REPO_ROOT / "problems",
        client_wheel_dir=tmp_path / "no-wheel-here",
    )
    with TestClient(create_app(settings)) as api:
        for path in (
            "/api/client",
            "/client/",
            "/client/tensorjudge_client-0.1.0-py3-none-any.whl",
        ):
            response = api.get(path)
            assert response.status_code == 404, path
            assert response.json()["error"]["code"] in (
                "client_not_built",
                "client_wheel_not_found",
            )
        assert "make client-wheel" in api.get("/api/client").json()["error"]["message"]


def test_only_the_client_wheels_in_the_directory_are_served(tmp_path: Path):
    wheels = tmp_path / "dist"
    wheels.mkdir()
    (wheels / "tensorjudge_client-9.9-py3-none-any.whl").write_bytes(b"PK wheel")
    (wheels / "secret.txt").write_text("not for download")
    settings = Settings(
        data_dir=tmp_path / "data", problems_dir=REPO_ROOT / "problems", client_wheel_dir=wheels
    )
    with TestClient(create_app(settings)) as api:
        assert api.get("/api/client").json()["version"] == "9.9"
        ok = api.get("/client/tensorjudge_client-9.9-py3-none-any.whl")
        assert ok.status_code == 200 and ok.content == b"PK wheel"
        for path in ("/client/secret.txt", "/client/..%2Fdist%2Fsecret.txt", "/client/%2e%2e"):
            assert api.get(path).status_code == 404, path


def test_the_version_matches_the_package_metadata():
    project = tomllib.loads((REPO_ROOT / "client" / "pyproject.toml").read_text())["project"]
    assert project["version"] == __version__
