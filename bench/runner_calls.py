"""Per-call and fixed cost of the in-sandbox runner, without a sandbox, for one or two trees
measured alternately in one process (so both see the same machine load):

    .venv/bin/python bench/runner_calls.py [--baseline TREE] [--runs N]

A lean parent (numpy imported, ``runner.preload`` done, ``gc.freeze``: what the fork server's
zygote does) forks one runner per job and feeds it the full multi-head-attention job (examples,
hidden cases, probes) or its first case alone, once the forked runner has done what a fork
server's spare does before its job arrives (``runner.warm_up``, where the tree has it). Per tree
it prints the median wall time (from the job to both processes gone) and the CPU of the
runner's supervisor and worker together, from the fork (``wait4``, as their subreaper), their
page faults, and the cost of each call beyond the first: ``(full - one) / (calls - 1)``. The
job is this tree's encoding; the job format is the same for every tree that speaks its version.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.grading.pipeline import build_request  # noqa: E402
from app.problems.loader import load_problems  # noqa: E402
from app.problems.solutions import solutions  # noqa: E402
from sandbox import wire  # noqa: E402

CHILD = r"""
import os, shutil, statistics, sys, time
trees, work, runs, calls = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"
sys.path.insert(0, sys.argv[5])
import numpy  # noqa: F401
names = []
for i, tree in enumerate(trees):
    shutil.copytree(f"{tree}/sandbox/inside", f"{work}/tree{i}",
                    ignore=shutil.ignore_patterns("__pycache__"))
    names.append(f"tree{i}")
sys.path.insert(0, work)
import ctypes, gc, importlib, io, mmap, select  # noqa: E401,F401
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
runners = [importlib.import_module(f"{n}.runner") for n in names]
for r in runners:
    r.preload()
gc.freeze()


def once(runner, job):
    r, w = os.pipe()
    r2, w2 = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.close(r2)
        os.dup2(r, 0)
        os.dup2(w2, 1)
        try:
            if hasattr(runner, "warm_up"):  # what a fork server's spare does while it waits
                runner.warm_up()
            runner.run_job(sys.stdin.buffer)
        finally:
            os._exit(0)
    os.close(r)
    os.close(w2)
    time.sleep(0.005)  # a spare is forked (and warmed) before its job arrives
    start = time.perf_counter()
    view = memoryview(job)
    while view:
        view = view[os.write(w, view):]
    os.close(w)
    while os.read(r2, 1 << 16):
        pass
    _, _, usage = os.wait4(pid, 0)
    cpu, faults = usage.ru_utime + usage.ru_stime, usage.ru_minflt
    # A worker its supervisor ended without reaping it comes back here (a subreaper): its CPU
    # counts, and the run is over once it is gone (as its pid namespace's end waits for it).
    while True:
        try:
            _, _, usage = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu, faults = cpu + usage.ru_utime + usage.ru_stime, faults + usage.ru_minflt
    os.close(r2)
    return time.perf_counter() - start, cpu, faults


jobs = {k: open(f"{work}/{k}.job", "rb").read() for k in ("full", "one")}
got = {(i, k): ([], [], []) for i in range(len(runners)) for k in jobs}
for k, job in jobs.items():
    for r in runners:
        for _ in range(3):
            once(r, job)
load = os.getloadavg()[0]
for n in range(runs):
    order = list(enumerate(runners))
    for k, job in jobs.items():
        for i, r in order if n % 2 == 0 else order[::-1]:
            for series, value in zip(got[i, k], once(r, job)):
                series.append(value)
for i, tree in enumerate(trees):
    (wf, cf, ff), (w1, c1, f1) = (
        [statistics.median(s) for s in got[i, k]] for k in ("full", "one")
    )
    print(
        f"{tree}: {calls} calls: wall {wf * 1e3:.2f} ms, CPU {cf * 1e3:.2f} ms, {ff:.0f} faults | "
        f"1 call: wall {w1 * 1e3:.2f} ms, CPU {c1 * 1e3:.2f} ms, {f1:.0f} faults | "
        f"each further call: wall {(wf - w1) / (calls - 1) * 1e3:.3f} ms, "
        f"CPU {(cf - c1) / (calls - 1) * 1e3:.3f} ms"
    )
print(f"{runs} runs of each, alternating; load average {load:.2f} -> {os.getloadavg()[0]:.2f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="another checkout to measure alternately")
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args()
    problem = load_problems(ROOT / "problems")["multi-head-attention"]
    code = solutions(problem.directory, None).correct
    full = build_request(problem, code, [*problem.examples, *problem.hidden])
    one = full.model_copy(update={"cases": full.cases[:1]})
    import numpy as np

    site = str(Path(np.__file__).resolve().parents[1])
    trees = [str(Path(args.baseline).resolve())] if args.baseline else []
    trees.append(str(ROOT))
    with tempfile.TemporaryDirectory() as work:
        for name, request in (("full", full), ("one", one)):
            Path(work, f"{name}.job").write_bytes(wire.encode_job(request))
        command = [sys.executable, "-I", "-S", "-c", CHILD, ",".join(trees), work]
        command += [str(args.runs), str(len(full.cases)), site]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
