"""End-to-end grading benchmark: the real server over HTTP, per sandbox backend.

    .venv/bin/python bench/run.py [--window 8] [--backends bwrap-cold,bwrap-warm,docker]
                                  [--problem multi-head-attention] [--wrong-fault CODE]

The problem is any folder of problems/ or of GRADER_PROBLEM_DIRS; the correct submission is its
reference, the wrong one the reference with one fault flag on (default: the first fault of
faults.toml), which the grader must diagnose.

For each backend it starts ``python -m app serve`` on 127.0.0.1 with a temporary
``GRADER_DATA_DIR`` and prints:

* the floor: grading the reference in-process, no sandbox (its outputs computed in this process,
  then ``grade_run``), in ms per submission;
* submit-to-verdict latency p50/p95/p99 (``POST ...?wait=30``) at concurrency 1, 8 and 32, for a
  correct and a wrong submission, each as a multiple of the floor;
* sustained throughput at concurrency 32 over a fixed window, with the submissions lost or
  errored (anything but HTTP 200 with the expected verdict);
* peak RSS of the server process and of its sandboxes (the sum over the process tree, sampled).

Writes bench/results/latest.json and bench/results/latency.png. Runs in under five minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.core.config import Settings  # noqa: E402
from app.grading.pipeline import grade_run  # noqa: E402
from app.problems.hooks import exception_name  # noqa: E402
from app.problems.loader import Problem, load_problems  # noqa: E402
from app.problems.solutions import solutions  # noqa: E402
from sandbox.protocol import CaseError, CaseOutcome, RunResult  # noqa: E402

DEFAULT_PROBLEM = "multi-head-attention"
PROBLEM = DEFAULT_PROBLEM  # --problem
RESULTS = ROOT / "bench" / "results"
CONCURRENCY = (1, 8, 32)
# Requests per (concurrency, submission kind): enough for a p95, small enough for 5 minutes.
REQUESTS = {1: 20, 8: 40, 32: 64}
KINDS = {"correct": "accepted", "wrong": "wrong_answer"}


@dataclass
class Backend:
    name: str
    env: dict[str, str]
    skip: str = ""


@dataclass
class MemorySampler:
    """Peak RSS of the server process and of everything it started (its sandboxes), plus any
    process inside a Docker container."""

    server_pid: int
    interval: float = 0.05
    peak_server: int = 0
    peak_sandboxes: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            server, sandboxes = self.sample()
            self.peak_server = max(self.peak_server, server)
            self.peak_sandboxes = max(self.peak_sandboxes, sandboxes)

    def sample(self) -> tuple[int, int]:
        parent: dict[int, int] = {}
        rss: dict[int, int] = {}
        in_container: set[int] = set()
        page = os.sysconf("SC_PAGE_SIZE")
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                parent[pid] = int(fields[1])
                rss[pid] = int(fields[21]) * page
                cgroup = Path(f"/proc/{pid}/cgroup").read_text()
            except (OSError, ValueError, IndexError):
                continue
            if "/docker/" in cgroup or "docker-" in cgroup:
                in_container.add(pid)
        children: dict[int, list[int]] = {}
        for pid, ppid in parent.items():
            children.setdefault(ppid, []).append(pid)
        tree: set[int] = set()
        todo = list(children.get(self.server_pid, []))
        while todo:
            pid = todo.pop()
            if pid not in tree:
                tree.add(pid)
                todo.extend(children.get(pid, []))
        sandboxes = sum(rss.get(p, 0) for p in tree | in_container)
        return rss.get(self.server_pid, 0), sandboxes


def floor_ms(problem: Problem, repeat: int) -> float:
    """Median ms to grade the reference with no sandbox: outputs computed here, then compared
    and diagnosed by ``grade_run`` exactly as after a sandbox run."""
    cases = problem.examples + problem.hidden
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    grade_run(problem, cases, _in_process_run(cases, probes, problem))  # warm caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run = _in_process_run(cases, probes, problem)
        grade_run(problem, cases, run)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _in_process_run(cases: Any, probes: Any, problem: Problem) -> RunResult:
    outcomes = []
    for case in (*cases, *probes):
        try:
            outcomes.append(CaseOutcome(name=case.name, output=problem.solve(case.inputs)))
        except Exception as exc:  # an expected-error case: the reference raises, as it must
            error = CaseError(type=exception_name(exc), message=str(exc))
            outcomes.append(CaseOutcome(name=case.name, error=error))
    return RunResult(status="ok", cases=outcomes, backend="none")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of one process (not of its children), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def docker_skip_reason() -> str:
    try:
        from sandbox.backends.docker import DockerSandbox, DockerUnavailableError
    except ImportError as exc:
        return f"the docker backend cannot be imported: {exc}"
    try:
        DockerSandbox(image=os.environ.get("GRADER_DOCKER_IMAGE", "tensorjudge/sandbox:latest"))
    except DockerUnavailableError as exc:
        return f"{exc} (run: bash .ci/docker-setup.sh)"
    except Exception as exc:
        return f"docker engine unusable: {exc}"
    return ""


def bwrap_skip_reason() -> str:
    try:
        subprocess.run(
            ["bwrap", "--ro-bind", "/", "/", "true"], check=True, capture_output=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap unusable here: {exc}"
    return ""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Server:
    def __init__(self, backend: Backend, data_dir: Path, root: Path = ROOT) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {
            k: v
            for k, v in os.environ.items()
            # The image to grade with is the operator's choice; every other setting is the bench's.
            if not k.startswith("GRADER_") or k == "GRADER_DOCKER_IMAGE"
        }
        env.update(
            {
                "GRADER_DATA_DIR": str(data_dir),
                "GRADER_HOST": "127.0.0.1",
                "GRADER_PORT": str(self.port),
                # A few clients sending flat out: lift the per-client rate limit and the queue cap.
                "GRADER_RATE_LIMIT": "1000000",
                "GRADER_QUEUE_MAX": "100000",
                **backend.env,
            }
        )
        self.log = (data_dir / "server.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "serve"],
            cwd=root,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError("the server did not answer /healthz in time")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


async def submit(client: httpx.AsyncClient, code: str, want: str) -> tuple[float, bool]:
    start = time.perf_counter()
    try:
        response = await client.post(
            f"/api/problems/{PROBLEM}/submissions",
            params={"wait": 30},
            json={"code": code},
            timeout=60,
        )
        ok = response.status_code == 200 and response.json().get("verdict") == want
        if not ok:
            _first_error(f"HTTP {response.status_code}: {response.text[:600]}")
    except httpx.HTTPError as exc:
        ok = False
        _first_error(f"{type(exc).__name__}: {exc}")
    return time.perf_counter() - start, ok


_errors_shown = 0


def _first_error(text: str) -> None:
    """Print the first few failures in full: a lost submission must be explained."""
    global _errors_shown
    if _errors_shown < 3:
        _errors_shown += 1
        print(f"  ERROR: {text}", flush=True)


def client_for(url: str, i: int) -> httpx.AsyncClient:
    """Stream ``i``'s own anonymous client: the grader runs one submission per client at a time,
    so each concurrent stream sends from its own loopback address, as separate students would."""
    transport = httpx.AsyncHTTPTransport(local_address=f"127.0.{1 + i // 250}.{1 + i % 250}")
    return httpx.AsyncClient(base_url=url, transport=transport)


async def latency(url: str, code: str, want: str, concurrency: int, total: int) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(client_for(url, i)) for i in range(concurrency)]
        todo = iter(range(total))
        samples: list[float] = []
        errors = 0

        async def loop(client: httpx.AsyncClient) -> None:
            nonlocal errors
            for _ in todo:
                seconds, ok = await submit(client, code, want)
                samples.append(seconds)
                errors += not ok

        await asyncio.gather(*(loop(client) for client in clients))
    ms = [s * 1000 for s in samples]
    return {
        "n": len(ms),
        "errors": errors,
        "p50_ms": percentile(ms, 0.50),
        "p95_ms": percentile(ms, 0.95),
        "p99_ms": percentile(ms, 0.99),
    }


async def throughput(url: str, codes: list[tuple[str, str]], window: float) -> dict[str, Any]:
    """Keep 32 submissions in flight for ``window`` seconds; count those that finished in it.
    Submissions still in flight at the end are awaited and checked too (lost or not)."""
    concurrency = CONCURRENCY[-1]
    done_in_window = 0
    sent = 0
    errors = 0
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(client_for(url, i)) for i in range(concurrency)]
        start = time.perf_counter()
        end = start + window

        async def loop(i: int) -> None:
            client = clients[i]
            nonlocal done_in_window, sent, errors
            k = i
            while time.perf_counter() < end:
                code, want = codes[k % len(codes)]
                k += 1
                sent += 1
                _, ok = await submit(client, code, want)
                errors += not ok
                if ok and time.perf_counter() <= end:
                    done_in_window += 1

        await asyncio.gather(*(loop(i) for i in range(concurrency)))
        elapsed = time.perf_counter() - start
    return {
        "window_s": window,
        "sent": sent,
        "completed_in_window": done_in_window,
        "per_second": done_in_window / window,
        "lost_or_errored": errors,
        "drain_s": elapsed - window,
    }


def bench_backend(
    backend: Backend, codes: dict[str, str], window: float, floor: float, scale: float
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tj-bench-") as tmp:
        server = Server(backend, Path(tmp))
        sampler: MemorySampler | None = None
        try:
            server.wait_ready()
            sampler = MemorySampler(server.proc.pid)
            sampler.start()
            # Warm-up: the first grading builds the fault table and the sandbox.
            asyncio.run(latency(server.url, codes["correct"], KINDS["correct"], 1, 3))
            rows: dict[str, Any] = {}
            for c in CONCURRENCY:
                for kind, want in KINDS.items():
                    n = max(c, int(REQUESTS[c] * scale))
                    row = asyncio.run(latency(server.url, codes[kind], want, c, n))
                    for p in ("p50", "p95", "p99"):
                        row[f"{p}_x_floor"] = row[f"{p}_ms"] / floor
                    rows[f"c{c}/{kind}"] = row
                    print(
                        f"  c={c:<3} {kind:8} n={row['n']:<3} p50 {row['p50_ms']:7.1f} ms "
                        f"p95 {row['p95_ms']:7.1f} p99 {row['p99_ms']:7.1f}  "
                        f"(p50 = {row['p50_x_floor']:.1f}x floor)  errors {row['errors']}",
                        flush=True,
                    )
            mix = [(codes[k], w) for k, w in KINDS.items()]
            cpu_before = process_cpu_seconds(server.proc.pid)
            tp = asyncio.run(throughput(server.url, mix, window))
            graded = tp["sent"] - tp["lost_or_errored"]
            # The server process's own CPU (its sandboxes are other processes) per graded
            # submission, over the whole throughput run including its drain.
            tp["server_cpu_ms_per_graded"] = (
                (process_cpu_seconds(server.proc.pid) - cpu_before) * 1000 / max(1, graded)
            )
            tp["x_floor_rate"] = tp["per_second"] / (1000 / floor)
            print(
                f"  throughput at c=32 over {window:g} s: {tp['per_second']:.1f} graded/s "
                f"({tp['x_floor_rate']:.3f}x the floor's single-core rate of "
                f"{1000 / floor:.0f}/s), lost or errored: {tp['lost_or_errored']}; "
                f"server CPU {tp['server_cpu_ms_per_graded']:.1f} ms per graded submission",
                flush=True,
            )
        finally:
            if sampler is not None:
                sampler.stop()
            server.stop()
            RESULTS.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(tmp) / "server.log", RESULTS / f"server-{backend.name}.log")
    assert sampler is not None
    memory = {"server_peak_mb": sampler.peak_server / 2**20,
              "sandboxes_peak_mb": sampler.peak_sandboxes / 2**20}  # fmt: skip
    print(
        f"  peak RSS: server {memory['server_peak_mb']:.0f} MiB, "
        f"sandboxes {memory['sandboxes_peak_mb']:.0f} MiB",
        flush=True,
    )
    return {"env": backend.env, "latency": rows, "throughput": tp, "memory": memory}


def plot(results: dict[str, Any], floor: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    for name, res in results.items():
        if "latency" not in res:
            continue
        for kind, style in (("correct", "-o"), ("wrong", "--s")):
            ys = [res["latency"][f"c{c}/{kind}"]["p50_ms"] for c in CONCURRENCY]
            ax.plot(CONCURRENCY, ys, style, label=f"{name} {kind} p50")
    ax.axhline(floor, color="grey", linestyle=":", label=f"floor {floor:.1f} ms")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(CONCURRENCY, [str(c) for c in CONCURRENCY])
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("submit-to-verdict p50 (ms)")
    ax.set_title("TensorJudge: latency vs concurrency")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=8.0, help="throughput window (s)")
    parser.add_argument(
        "--backends",
        default="bwrap-fork,bwrap-warm,bwrap-cold,docker",
        help="comma-separated: bwrap-fork, bwrap-fork-0 (no spares), bwrap-warm, bwrap-cold, "
        "docker",
    )
    parser.add_argument("--warm-pool", type=int, default=4, help="GRADER_SANDBOX_WARM_POOL")
    parser.add_argument("--floor-repeat", type=int, default=30)
    parser.add_argument(
        "--problem", default=DEFAULT_PROBLEM, help="a problem id (default: %(default)s)"
    )
    parser.add_argument(
        "--wrong-fault", default=None, help="the wrong submission's fault (default: the first)"
    )
    parser.add_argument(
        "--baseline",
        default="11d4692",
        help="revision measured side by side with this tree (bwrap-fork, alternating turns; "
        "'' skips it; default: %(default)s, main before the hidden-case work)",
    )
    parser.add_argument("--rounds", type=int, default=4, help="side-by-side rounds")
    args = parser.parse_args()
    began = time.monotonic()

    global PROBLEM
    PROBLEM = args.problem
    settings = Settings()
    problem = load_problems(settings.problems_dir, settings.extra_problem_dirs)[PROBLEM]
    floor = floor_ms(problem, args.floor_repeat)
    n_cases = len(problem.examples) + len(problem.hidden)
    n_probes = len(problem.diagnostics.probes) if problem.diagnostics else 0
    print(
        f"floor: {floor:.2f} ms per submission (reference in-process, {n_cases} cases + "
        f"{n_probes} probes, compare + diagnose; median of {args.floor_repeat})",
        flush=True,
    )
    models = solutions(problem.directory, args.wrong_fault)
    print(f"problem {PROBLEM}; the wrong submission makes the mistake {models.wrong_code}")
    codes = {"correct": models.correct, "wrong": models.wrong}
    backends = {
        "bwrap-fork": Backend(
            "bwrap-fork",
            {"GRADER_SANDBOX": "bwrap", "GRADER_SANDBOX_FORKSERVER": "1"},
        ),
        # The fork server without spares: each run forked when its submission arrives.
        "bwrap-fork-0": Backend(
            "bwrap-fork-0",
            {
                "GRADER_SANDBOX": "bwrap",
                "GRADER_SANDBOX_FORKSERVER": "1",
                "GRADER_SANDBOX_FORKSERVER_SPARES": "0",
            },
        ),
        "bwrap-cold": Backend(
            "bwrap-cold",
            {
                "GRADER_SANDBOX": "bwrap",
                "GRADER_SANDBOX_FORKSERVER": "0",
                "GRADER_SANDBOX_WARM_POOL": "0",
            },
        ),
        "bwrap-warm": Backend(
            "bwrap-warm",
            {
                "GRADER_SANDBOX": "bwrap",
                "GRADER_SANDBOX_FORKSERVER": "0",
                "GRADER_SANDBOX_WARM_POOL": str(args.warm_pool),
            },
        ),
        "docker": Backend("docker", {"GRADER_SANDBOX": "docker"}),
    }
    results: dict[str, Any] = {}
    compared: dict[str, Any] | None = None
    if args.baseline and not bwrap_skip_reason():
        from sidebyside import side_by_side

        print(f"side by side with {args.baseline} (bwrap-fork, correct submission):", flush=True)
        compared = side_by_side(
            args.baseline, backends["bwrap-fork"], codes["correct"], floor, rounds=args.rounds
        )
    for name in [b for b in args.backends.split(",") if b]:
        backend = backends[name]
        reason = bwrap_skip_reason() if name.startswith("bwrap") else docker_skip_reason()
        if reason:
            print(f"{name}: SKIPPED: {reason}", flush=True)
            results[name] = {"skipped": reason}
            continue
        print(f"{name}:", flush=True)
        # Docker runs cost ~10x a bwrap run: fewer requests keep the whole bench under 5 min.
        scale = 0.5 if name == "docker" else 1.0
        results[name] = bench_backend(backend, codes, args.window, floor, scale)

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": "make bench",
        "problem": PROBLEM,
        "wrong_fault": models.wrong_code,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "floor_ms": floor,
        "load_1min_at_end": os.getloadavg()[0],
        "side_by_side": compared,
        "backends": results,
        "bench_seconds": time.monotonic() - began,
    }
    (RESULTS / "latest.json").write_text(json.dumps(out, indent=2))
    plot(results, floor, RESULTS / "latency.png")
    print(
        f"wrote {RESULTS / 'latest.json'} and {RESULTS / 'latency.png'} "
        f"in {time.monotonic() - began:.0f} s"
    )


if __name__ == "__main__":
    main()
