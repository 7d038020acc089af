"""This tree against an earlier revision in one run: both servers up at once, measured in
alternating turns, so that the drift of a shared machine's load falls on both alike.

Used by ``bench/run.py`` (``--baseline REV``, default 11d4692: main before the hidden-case work).
The revision's tree is exported with ``git archive`` into a temporary directory and served by the
same interpreter and virtualenv; nothing of the repository's own worktrees changes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import run as core

HEAD = "HEAD"


def export_tree(rev: str) -> Path:
    """The files of ``rev`` in a fresh temporary directory (the caller removes it)."""
    target = Path(tempfile.mkdtemp(prefix=f"tj-bench-{rev}-"))
    archive = subprocess.run(
        ["git", "archive", rev], cwd=core.ROOT, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _turn(url: str, code: str, serial: int, concurrent: int) -> dict[str, Any]:
    """One turn on one server: ``serial`` submissions one at a time, then ``concurrent`` by 8
    clients at once (graded/s = how many finished over the elapsed time)."""
    load = os.getloadavg()[0]
    one = asyncio.run(core.latency(url, code, "accepted", 1, serial))
    start = time.perf_counter()
    eight = asyncio.run(core.latency(url, code, "accepted", 8, concurrent))
    elapsed = time.perf_counter() - start
    return {
        "load_1min": load,
        "p50_c1_ms": one["p50_ms"],
        "p95_c1_ms": one["p95_ms"],
        "p50_c8_ms": eight["p50_ms"],
        "graded_per_s_c8": (concurrent - eight["errors"]) / elapsed,
        "lost_or_errored": one["errors"] + eight["errors"],
    }


def side_by_side(
    rev: str,
    backend: core.Backend,
    code: str,
    floor: float,
    rounds: int = 4,
    serial: int = 20,
    concurrent: int = 80,
) -> dict[str, Any]:
    """Median over ``rounds`` alternating turns of this tree and of ``rev``, with their ratios
    (this tree / ``rev``) and each p50 as a multiple of the in-process floor."""
    tree = export_tree(rev)
    data = [Path(tempfile.mkdtemp(prefix="tj-bench-")) for _ in range(2)]
    servers = {
        HEAD: core.Server(backend, data[0]),
        rev: core.Server(backend, data[1], root=tree),
    }
    turns: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
    try:
        for server in servers.values():
            server.wait_ready()
            asyncio.run(core.latency(server.url, code, "accepted", 1, 3))  # warm-up
        names = list(servers)
        for r in range(rounds):
            for name in names if r % 2 == 0 else names[::-1]:
                turn = _turn(servers[name].url, code, serial, concurrent)
                turns[name].append(turn)
                print(
                    f"  round {r + 1} {name:8} p50 c=1 {turn['p50_c1_ms']:6.1f} ms  "
                    f"c=8 {turn['graded_per_s_c8']:5.1f} graded/s  "
                    f"lost {turn['lost_or_errored']}  (load {turn['load_1min']:.2f})",
                    flush=True,
                )
    finally:
        for server in servers.values():
            server.stop()
        for path in (tree, *data):
            shutil.rmtree(path, ignore_errors=True)
    summary: dict[str, Any] = {"rev": rev, "rounds": rounds, "turns": turns}
    for name, rows in turns.items():
        summary[name] = {
            key: statistics.median(row[key] for row in rows)
            for key in ("p50_c1_ms", "p95_c1_ms", "p50_c8_ms", "graded_per_s_c8", "load_1min")
        }
        summary[name]["lost_or_errored"] = sum(row["lost_or_errored"] for row in rows)
        summary[name]["p50_c1_x_floor"] = summary[name]["p50_c1_ms"] / floor
    head, base = summary[HEAD], summary[rev]
    summary["ratio"] = {
        "p50_c1": head["p50_c1_ms"] / base["p50_c1_ms"],
        "graded_per_s_c8": head["graded_per_s_c8"] / base["graded_per_s_c8"],
    }
    for name in (HEAD, rev):
        row = summary[name]
        print(
            f"  {name:8} median of {rounds}: p50 c=1 {row['p50_c1_ms']:.1f} ms "
            f"({row['p50_c1_x_floor']:.1f}x floor), c=8 {row['graded_per_s_c8']:.1f} graded/s, "
            f"lost {row['lost_or_errored']} (load {row['load_1min']:.2f})",
            flush=True,
        )
    print(
        f"  {HEAD} / {rev}: p50 c=1 x{summary['ratio']['p50_c1']:.2f}, "
        f"graded/s c=8 x{summary['ratio']['graded_per_s_c8']:.2f}",
        flush=True,
    )
    return summary
