"""A burst of concurrent sign-ins against a real server: its peak memory, and how long an
unrelated request takes meanwhile.

    python bench/signin_burst.py [--sign-ins 40] [--app-dir DIR]

Starts ``python -m app serve`` (from ``--app-dir``, default this checkout: point it at a
``git archive`` of another commit to compare), fires ``--sign-ins`` wrong-password sign-ins at
once (each verified by argon2: the throttle's limits are raised out of the way) while another
client keeps asking ``GET /api/auth/me`` with a token (a database read in the thread pool), and
prints the server's resident memory before and at its peak, the sign-ins' answers, and the
unrelated request's latencies before and during the burst.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.services import free_port, wait_for  # noqa: E402


def _rss_mib(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for {pid}")


def _ms(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms "
        f"({len(values)} requests)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sign-ins", type=int, default=40)
    parser.add_argument("--app-dir", type=Path, default=REPO)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="signin-burst-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
        env.update(
            {
                "GRADER_DATA_DIR": str(Path(tmp) / "data"),
                "GRADER_SANDBOX_PRIME": "false",
                "GRADER_WORKERS": "1",
                "GRADER_LOGIN_MAX_FAILURES_PER_EMAIL": "10000",
                "GRADER_LOGIN_MAX_FAILURES_PER_ADDRESS": "100000",
            }
        )
        made = subprocess.run(
            [
                sys.executable,
                "-m",
                "app",
                "tokens",
                "create",
                "--role",
                "instructor",
                "--name",
                "bench",
            ],
            cwd=args.app_dir,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        token = made.stdout.strip().splitlines()[-1]
        port = free_port()
        log = (Path(tmp) / "server.log").open("wb")
        server = subprocess.Popen(
            [sys.executable, "-m", "app", "serve", "--port", str(port)],
            cwd=args.app_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: httpx.get(f"{base}/healthz").status_code == 200, 60, "the server")
            return _measure(base, server.pid, token, args.sign_ins)
        finally:
            server.terminate()
            server.wait(10)
            log.close()


def _measure(base: str, pid: int, token: str, sign_ins: int) -> int:
    me = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=120) as client:
        for _ in range(3):  # warm: imports, the pool's first connections
            client.get("/api/auth/me", headers=me).raise_for_status()
        idle: list[float] = []
        for _ in range(20):
            began = time.perf_counter()
            client.get("/api/auth/me", headers=me).raise_for_status()
            idle.append(time.perf_counter() - began)
    rss_before = _rss_mib(pid)
    peak = rss_before
    done = threading.Event()
    during: list[float] = []
    answers: Counter[int] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(sign_ins + 1)

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _rss_mib(pid))
            time.sleep(0.02)

    def unrelated() -> None:
        with httpx.Client(base_url=base, timeout=120) as client:
            start.wait()
            while not done.is_set():
                began = time.perf_counter()
                client.get("/api/auth/me", headers=me).raise_for_status()
                during.append(time.perf_counter() - began)

    def sign_in(i: int) -> None:
        with httpx.Client(base_url=base, timeout=120) as client:
            start.wait()
            r = client.post(
                "/api/auth/login",
                json={"email": f"nobody{i}@example.edu", "password": "not the password"},
            )
            with lock:
                answers[r.status_code] += 1

    threads = [threading.Thread(target=sign_in, args=(i,)) for i in range(sign_ins)]
    watchers = [threading.Thread(target=sample), threading.Thread(target=unrelated)]
    for thread in watchers + threads:
        thread.start()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    burst = time.perf_counter() - began
    done.set()
    for thread in watchers:
        thread.join()
    print(
        f"server RSS: {rss_before:.0f} MiB before, {peak:.0f} MiB at peak (sampled), "
        f"VmHWM {_rss_mib(pid, 'VmHWM'):.0f} MiB"
    )
    print(
        f"{sign_ins} concurrent sign-ins: answers {dict(sorted(answers.items()))}, "
        f"all answered in {burst:.1f} s"
    )
    print(f"GET /api/auth/me idle: {_ms(idle)}")
    print(f"GET /api/auth/me during the burst: {_ms(during)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
