"""Grading cost per problem on the default sandbox (the bwrap fork server), against multi-head
attention's:

    .venv/bin/python bench/problems.py [--window 4] [--requests 20]

One server serves every problem of problems/. For each problem it measures the submit-to-verdict
p50 at concurrency 1 of its reference (accepted) and of the reference with its first fault flag
on (wrong, diagnosed), and the throughput at concurrency 32 over ``--window`` seconds, then the
ratio of each p50 to multi-head attention's. Writes bench/results/problems.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as core

from app.core.config import Settings
from app.problems.loader import load_problems
from app.problems.solutions import solutions

BASELINE = "multi-head-attention"


def bench_problem(url: str, problem_id: str, requests: int, window: float) -> dict[str, Any]:
    problem = load_problems(Settings().problems_dir)[problem_id]
    models = solutions(problem.directory, None)
    # core.submit posts to this problem.
    core.PROBLEM = problem_id
    codes = {"correct": models.correct, "wrong": models.wrong}
    asyncio.run(core.latency(url, codes["correct"], "accepted", 1, 3))  # warm-up
    row: dict[str, Any] = {"wrong_fault": models.wrong_code}
    for kind, want in core.KINDS.items():
        measured = asyncio.run(core.latency(url, codes[kind], want, 1, requests))
        row[f"{kind}_p50_ms"] = measured["p50_ms"]
        row[f"{kind}_errors"] = measured["errors"]
    mix = [(codes[k], w) for k, w in core.KINDS.items()]
    tp = asyncio.run(core.throughput(url, mix, window))
    row["graded_per_second"] = tp["per_second"]
    row["lost_or_errored"] = tp["lost_or_errored"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=4.0, help="throughput window (s)")
    parser.add_argument("--requests", type=int, default=20, help="requests per p50")
    args = parser.parse_args()
    reason = core.bwrap_skip_reason()
    if reason:
        print(f"SKIPPED: {reason}")
        return
    ids = sorted(load_problems(Settings().problems_dir))
    ids.sort(key=lambda i: i != BASELINE)  # the baseline first
    began = time.monotonic()
    backend = core.Backend("bwrap-fork", {"GRADER_SANDBOX": "bwrap"})
    rows: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="tj-bench-") as tmp:
        server = core.Server(backend, Path(tmp))
        try:
            server.wait_ready()
            for problem_id in ids:
                rows[problem_id] = bench_problem(server.url, problem_id, args.requests, args.window)
        finally:
            server.stop()
    base = rows[BASELINE]
    print(f"{'problem':28} {'p50 correct':>12} {'p50 wrong':>10} {'x MHA':>6} {'graded/s':>9} lost")
    for problem_id, row in rows.items():
        ratio = max(
            row["correct_p50_ms"] / base["correct_p50_ms"],
            row["wrong_p50_ms"] / base["wrong_p50_ms"],
        )
        row["p50_x_baseline"] = ratio
        print(
            f"{problem_id:28} {row['correct_p50_ms']:9.1f} ms {row['wrong_p50_ms']:7.1f} ms "
            f"{ratio:6.2f} {row['graded_per_second']:9.1f} {row['lost_or_errored']}"
        )
    core.RESULTS.mkdir(parents=True, exist_ok=True)
    out = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "backend": backend.name,
        "baseline": BASELINE,
        "problems": rows,
        "bench_seconds": time.monotonic() - began,
    }
    (core.RESULTS / "problems.json").write_text(json.dumps(out, indent=2))
    print(f"wrote {core.RESULTS / 'problems.json'} in {time.monotonic() - began:.0f} s")


if __name__ == "__main__":
    main()
