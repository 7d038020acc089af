"""A PyTorch grading against a NumPy grading of the same problem, side by side in one run:

    .venv/bin/python bench/torch_vs_numpy.py [--rounds 9] [--backends fork,warm,cold,docker]
        [--problems multi-head-attention,...] [--pause 0]

For each backend (default: the bwrap fork server, whose zygote preloads torch) and each attention
problem: the p50 of grading the NumPy reference and a correct PyTorch solution (the folder's
solution_torch.py), alternated round by round so both see the same load; then the zygote's
memory (Rss, Pss) with and without torch preloaded. ``warm``: bwrap behind the warm pool (NumPy
jobs warm, torch jobs warm from its PyTorch sandboxes once the first has run cold); ``cold``: bwrap
alone; ``docker``: the docker backend (GRADER_DOCKER_IMAGE, skipped when no engine answers). Each
line gives the 1-minute load average at its start and end: the machine is shared. ``--pause``:
seconds between rounds, so the warm pool's sandboxes finish importing torch before the next job
(back to back, a torch job may take one still importing: the figure of a pool kept busy). Writes
bench/results/torch.json. Skips when torch is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.grading.pipeline import grade_submission  # noqa: E402
from app.problems.loader import Problem, load_problems  # noqa: E402
from sandbox.backends.bwrap import BwrapSandbox  # noqa: E402
from sandbox.backends.forkserver import ForkServerSandbox  # noqa: E402
from sandbox.backends.pool import WarmPoolSandbox  # noqa: E402
from sandbox.backends.runtime import find_torch  # noqa: E402
from sandbox.protocol import Sandbox  # noqa: E402
from tests.problems.torch_solutions import SOLUTIONS  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "torch.json"


def rollup_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def zygote_python(server: ForkServerSandbox) -> int:
    """The zygote's interpreter: the largest process under its bwrap."""
    top = server.zygote_pid()
    assert top is not None
    todo, seen = [top], []
    while todo:
        pid = todo.pop()
        seen.append(pid)
        for task in os.listdir(f"/proc/{pid}/task"):
            todo += map(int, Path(f"/proc/{pid}/task/{task}/children").read_text().split())
    return max(seen, key=lambda p: rollup_kib(p, "Rss"))


def side_by_side(
    problems: dict[str, Problem],
    server: Sandbox,
    rounds: int,
    chosen: list[str],
    label: str,
    pause: float = 0.0,
) -> dict[str, dict[str, float]]:
    found: dict[str, dict[str, float]] = {}
    for problem_id in chosen:
        problem = problems[problem_id]
        numpy_code = (problem.directory / "reference.py").read_text()
        times: dict[str, list[float]] = {"numpy": [], "torch": []}
        load = os.getloadavg()[0]
        for _ in range(rounds):
            time.sleep(pause)
            for name, code in (("numpy", numpy_code), ("torch", SOLUTIONS[problem_id])):
                start = time.perf_counter()
                report = grade_submission(problem, code, server)
                times[name].append(time.perf_counter() - start)
                assert report.verdict == "accepted", (label, problem_id, name, report.error)
        p50 = {k: statistics.median(v) * 1000 for k, v in times.items()}
        ratio = p50["torch"] / p50["numpy"]
        loads = (load, os.getloadavg()[0])
        found[problem_id] = {**p50, "ratio": ratio, "load_start": loads[0], "load_end": loads[1]}
        print(f"{label:7s} {problem_id:26s} numpy p50 {p50['numpy']:7.1f} ms   "
              f"torch p50 {p50['torch']:7.1f} ms   ratio {ratio:.2f}   "
              f"load {loads[0]:.1f}-{loads[1]:.1f}", flush=True)  # fmt: skip
    return found


def other_backend(kind: str, inner: BwrapSandbox) -> Sandbox | None:
    if kind == "warm":
        return WarmPoolSandbox(inner, size=2)
    if kind == "cold":
        return inner
    if kind == "docker":
        from sandbox.backends.docker import DEFAULT_IMAGE, DockerSandbox, DockerUnavailableError

        try:
            return DockerSandbox(image=os.environ.get("GRADER_DOCKER_IMAGE", DEFAULT_IMAGE))
        except DockerUnavailableError as exc:
            print(f"docker: skipped ({exc})")
            return None
    raise SystemExit(f"unknown backend {kind!r}: fork, warm, cold or docker")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--backends", default="fork")
    parser.add_argument("--problems", default="")
    parser.add_argument("--pause", type=float, default=0.0)
    args = parser.parse_args()
    if find_torch() is None:
        print("torch is not installed (pip install -e '.[torch]'): nothing to measure")
        return 0
    problems = load_problems(ROOT / "problems")
    chosen = [p for p in args.problems.split(",") if p] or sorted(SOLUTIONS)
    backends = [b for b in args.backends.split(",") if b]
    inner = BwrapSandbox()
    out: dict[str, Any] = {"zygote": {}, "problems": {}, "backends": {}}
    if "fork" in backends:
        for preload in (False, True):
            server = ForkServerSandbox(inner, preload_torch=preload)
            try:
                assert server.wait_ready()
                time.sleep(1.0)
                pid = zygote_python(server)
                memory = {k: rollup_kib(pid, k) // 1024 for k in ("Rss", "Pss")}
                out["zygote"][f"torch={preload}"] = memory
                print(f"zygote, torch preloaded={preload}: Rss {memory['Rss']} MiB, "
                      f"Pss {memory['Pss']} MiB")  # fmt: skip
                if preload:
                    found = side_by_side(problems, server, args.rounds, chosen, "fork", args.pause)
                    out["problems"] = out["backends"]["fork"] = found
            finally:
                server.close()
    for kind in backends:
        if kind == "fork":
            continue
        sandbox = other_backend(kind, inner)
        if sandbox is None:
            continue
        try:
            out["backends"][kind] = side_by_side(
                problems, sandbox, args.rounds, chosen, kind, args.pause
            )
        finally:
            if isinstance(sandbox, WarmPoolSandbox):
                print(f"warm pool: {sandbox.warm_runs} warm runs, {sandbox.cold_runs} cold "
                      f"({getattr(sandbox, 'torch_runs', '?')} of them PyTorch)")  # fmt: skip
                sandbox.close()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
