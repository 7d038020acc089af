"""``tj login`` / ``tj logout`` and ``Judge``'s token against a real server with anonymous
practice off: the token is made through the API, stored 0600 in the config folder, used by
later commands and by ``Judge(url)``, and revoked by ``tj logout``.

The client runs from this checkout's client/src (PYTHONPATH), as the installed ``tj`` does
after a merge."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.core.config import REPO_ROOT
from tests.client.conftest import Grader, make_account, start_grader

pytestmark = pytest.mark.timeout(300)

EMAIL = "learner@example.edu"
PASSWORD = "a client password"


@pytest.fixture(scope="module")
def closed_grader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grader]:
    server = start_grader(tmp_path_factory.mktemp("closed-grader"), anonymous_practice="false")
    try:
        make_account(server.data_dir, EMAIL, "Lee Learner", PASSWORD)
        yield server
    finally:
        server.process.stop()


def _env(config: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TJ_URL", "TJ_TOKEN")}
    env["TJ_CONFIG_DIR"] = str(config)
    env["PYTHONPATH"] = str(REPO_ROOT / "client" / "src")
    return env


def tj(
    config: Path, *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensorjudge_client", *args],
        env=_env(config),
        input=stdin,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def _python(config: Path, code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(config),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_login_stores_a_private_token_that_later_commands_use(
    closed_grader: Grader, tmp_path: Path
):
    url = closed_grader.url
    config = tmp_path / "config"
    work = tmp_path / "work"
    work.mkdir()
    # Anonymous: this server takes no anonymous practice, and the message says how to sign in.
    assert tj(config, "start", "softmax-backward", "--url", url, cwd=work).returncode == 0
    refused = tj(config, "run", "softmax-backward", "softmax_backward.py", "--url", url, cwd=work)
    assert refused.returncode == 3 and "tj login" in refused.stderr

    wrong = tj(config, "login", "--url", url, "--email", EMAIL, "--password-stdin", stdin="nope\n")
    assert wrong.returncode == 3 and "wrong email or password" in wrong.stderr
    assert not (config / "credentials.json").exists()

    ok = tj(
        config, "login", "--url", url, "--email", EMAIL, "--password-stdin", stdin=PASSWORD + "\n"
    )
    assert ok.returncode == 0, ok.stderr
    assert "Lee Learner" in ok.stderr
    path = config / "credentials.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(config.stat().st_mode) == 0o700
    entry = json.loads(path.read_text())["servers"][url]
    secret = entry["token"]
    assert secret.startswith("tj_") and isinstance(entry["token_id"], int)

    graded = tj(config, "run", "softmax-backward", "softmax_backward.py", "--url", url, cwd=work)
    assert graded.returncode in (0, 1), graded.stderr  # graded (the starter is not a solution)
    who = _python(
        config,
        f"from tensorjudge_client import Judge\nprint(Judge({url!r}).me()['name'])\n"
        f"print(Judge({url!r}, token={secret!r}).me()['email'])\n"
        f"print(Judge({url!r}, token='').me())",
    )
    assert who.split("\n")[:3] == ["Lee Learner", EMAIL, "None"]

    out = tj(config, "logout", "--url", url)
    assert out.returncode == 0 and "Signed out" in out.stderr
    assert url not in json.loads(path.read_text())["servers"]
    me = httpx.get(f"{url}/api/auth/me", headers={"Authorization": f"Bearer {secret}"})
    assert me.status_code == 403  # revoked on the server too
    assert "Not signed in" in tj(config, "logout", "--url", url).stderr


def test_login_with_a_token(closed_grader: Grader, tmp_path: Path):
    url = closed_grader.url
    made = httpx.post(
        f"{url}/api/auth/token", json={"email": EMAIL, "password": PASSWORD, "name": "pasted"}
    )
    assert made.status_code == 201, made.text
    config = tmp_path / "config"
    bad = tj(config, "login", "--url", url, "--token", "tj_not-a-token")
    assert bad.returncode == 3
    ok = tj(config, "login", "--url", url, "--token", made.json()["secret"])
    assert ok.returncode == 0, ok.stderr
    assert (
        _python(
            config, f"from tensorjudge_client import Judge\nprint(Judge({url!r}).me()['name'])"
        ).strip()
        == "Lee Learner"
    )
