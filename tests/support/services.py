"""Real external services for the tests: a throwaway PostgreSQL cluster, Redis, and
``python -m app`` processes, all on free 127.0.0.1 ports."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.core.config import REPO_ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(predicate: object, timeout: float, what: str, interval: float = 0.1) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if predicate():
                return
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@dataclass
class PostgresCluster:
    directory: Path
    port: int
    run_as: list[str]
    pg_ctl: str

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(
            f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres", autocommit=True
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        subprocess.run(
            [
                *self.run_as,
                self.pg_ctl,
                "-D",
                str(self.directory / "data"),
                "-m",
                "immediate",
                "stop",
            ],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.directory, ignore_errors=True)


def start_postgres() -> PostgresCluster | str:
    """A new cluster with trust auth, or the reason it could not be started."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not initdb or not pg_ctl:
        return "PostgreSQL server binaries (initdb, pg_ctl) not found"
    run_as: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="tj-pg-"))
    if os.geteuid() == 0:  # initdb refuses to run as root
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run initdb as"
        os.chown(directory, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    data = directory / "data"
    init = subprocess.run(
        [*run_as, initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
        capture_output=True,
        text=True,
        check=False,
    )
    if init.returncode != 0:
        return f"initdb failed: {init.stderr.strip()[-500:]}"
    options = f"-h 127.0.0.1 -p {port} -k {directory} -c fsync=off -c full_page_writes=off"
    start = subprocess.run(
        [
            *run_as,
            pg_ctl,
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(directory / "log"),
            "-w",
            "start",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if start.returncode != 0:
        log = (directory / "log").read_text() if (directory / "log").exists() else ""
        return f"pg_ctl start failed: {start.stderr.strip()} {log[-500:]}"
    return PostgresCluster(directory, port, run_as, pg_ctl)


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed (Debian package redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        import redis

        client = redis.Redis(host="127.0.0.1", port=port)
        wait_for(client.ping, 10, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


def app_command(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m app ARGS`` run to completion on ``data_dir``, with none of this process's
    ``GRADER_*`` settings leaking in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    env["GRADER_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class AppProcess:
    """``python -m app <args>`` as a real process with its own environment and log file."""

    def __init__(self, args: list[str], env: dict[str, str], log_path: Path) -> None:
        self.args = args
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> AppProcess:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
        environment.update(self.env)
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", *self.args],
            cwd=REPO_ROOT,
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, exactly like a crash or an OOM kill."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


def bound(log_path: Path, base: str) -> int:
    """How many times the server logging to ``log_path`` said it listens on ``base``. A free
    port is only free when asked: another test's server may take it first, and then a /healthz
    answer on it is that server's (CI once seeded an unmigrated database that way)."""
    return log_path.read_text(errors="replace").count(f"Uvicorn running on {base}")


def _up(server: AppProcess, base: str, starts: int) -> bool:
    return (
        bound(server.log_path, base) >= starts and httpx.get(f"{base}/healthz").status_code == 200
    )


def serve(env: dict[str, str], log_path: Path) -> tuple[AppProcess, str]:
    port = free_port()
    server = AppProcess(["serve", "--port", str(port)], env, log_path).start()
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _up(server, base, 1), 60, "the API to start")
    return server, base


def restart_serve(server: AppProcess, base: str) -> None:
    starts = bound(server.log_path, base) + 1
    server.start()
    wait_for(lambda: _up(server, base, starts), 60, "the API to restart")


def celery_env(
    database_url: str, redis_url: str, data_dir: Path, **settings: str
) -> dict[str, str]:
    """The environment of a scale-out run (API and ``python -m app worker`` processes sharing
    PostgreSQL and Redis); ``settings`` adds ``GRADER_*`` values by their lowercase name."""
    env = {
        "GRADER_DATABASE_URL": database_url,
        "GRADER_DATA_DIR": str(data_dir),
        "GRADER_PROBLEMS_DIR": str(REPO_ROOT / "problems"),
        "GRADER_QUEUE": "celery",
        "GRADER_REDIS_URL": redis_url,
    }
    env.update({f"GRADER_{name.upper()}": value for name, value in settings.items()})
    return env
