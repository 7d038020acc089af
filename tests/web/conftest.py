"""Browser tests: the real app under uvicorn on 127.0.0.1, driven by Debian's headless Chromium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.core.config import REPO_ROOT
from tests.support.people import People
from tests.support.services import bound

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
STARTUP_SECONDS = 60.0


@dataclass
class Server:
    url: str
    env: dict[str, str]
    log: Path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def web_assets() -> Path:
    # Same rule as `make run`/`make test`: (re)build only when missing or stale.
    subprocess.run(["make", "-s", "frontend"], cwd=REPO_ROOT, check=True, timeout=600)
    marker = REPO_ROOT / "app" / "web" / "static" / "dist" / "BUILT"
    assert marker.exists(), "make frontend did not produce app/web/static/dist"
    return marker.parent


@contextmanager
def serving(root: Path, **extra_env: str) -> Iterator[Server]:
    """``python -m app serve`` on a free port with its data under ``root``, until the end."""
    port = _free_port()
    env = dict(os.environ)
    env.update({"GRADER_DATA_DIR": str(root / "data"), "GRADER_HOST": "127.0.0.1", **extra_env})
    log = root / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                # Our server's answer: another test's may hold the port (tests/support/services.py).
                if bound(log, url) and httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"server not up in {STARTUP_SECONDS} s:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield Server(url=url, env=env, log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def server(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory.mktemp("web-server")) as running:
        yield running


# Modules outside tests/web import `browser` from here, and each import is a fixture of its own
# to pytest; a second Playwright in one process fails ("Sync API inside the asyncio loop"), so
# every copy shares one Playwright and one Chromium, closed when the last copy is done.
_SHARED: dict[str, Any] = {"users": 0}


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make deb-packages)")
    if _SHARED["users"] == 0:
        pw = sync_playwright().start()
        _SHARED["playwright"] = pw
        _SHARED["browser"] = pw.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
    _SHARED["users"] += 1
    try:
        yield _SHARED["browser"]
    finally:
        _SHARED["users"] -= 1
        if _SHARED["users"] == 0:
            _SHARED.pop("browser").close()
            _SHARED.pop("playwright").stop()


@contextmanager
def serving_people(root: Path, **extra_env: str) -> Iterator[tuple[Server, People]]:
    """``serving``, with tests/support/people.py's two courses and people put straight into the
    server's database (migrated when it started)."""
    from app.core.config import Settings
    from app.db.engine import make_engine, make_sessionmaker
    from tests.support.people import seed_people

    with serving(root, **extra_env) as server:
        engine = make_engine(Settings(data_dir=root / "data"))
        try:
            yield server, seed_people(make_sessionmaker(engine))
        finally:
            engine.dispose()


@contextmanager
def browsing(browser: object, url: str) -> Iterator[object]:
    """A fresh browser context (empty storage) on ``url``; uncaught page errors fail the test."""
    from playwright.sync_api import Browser

    assert isinstance(browser, Browser)
    context = browser.new_context(viewport={"width": 1366, "height": 900}, base_url=url)
    context.set_default_timeout(15_000)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


@pytest.fixture
def page(browser: object, server: Server) -> Iterator[object]:
    with browsing(browser, server.url) as pg:
        yield pg


# The test problems of tests/problems (the contract, variadic and float demos), served beside the
# shipped ones through GRADER_PROBLEM_DIRS.
FIXTURE_PROBLEM_DIRS = ":".join(
    str(REPO_ROOT / "tests" / "problems" / name)
    for name in ("fixtures", "fixtures-variadic", "fixtures-float")
)


@pytest.fixture(scope="module")
def fixtures_server(web_assets: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("fixtures-server")
    with serving(root, GRADER_PROBLEM_DIRS=FIXTURE_PROBLEM_DIRS) as running:
        yield running


@pytest.fixture
def fixtures_page(browser: object, fixtures_server: Server) -> Iterator[object]:
    with browsing(browser, fixtures_server.url) as pg:
        yield pg
