"""SQLite writers of one process meeting in SQLite's busy handler, or taking turns in the
process (app.db.engine.write_turn): 40 threads, each 15 short write transactions (a read, two
inserts with some Python work between them, a commit) on the app's engine and pragmas.

    .venv/bin/python bench/sqlite_turn.py [--rounds 2]

Prints the wall time and per-transaction latency (p50/p95/p99/max) of each, alternating, with
the load average: compare runs of one invocation, not across invocations.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.core.config import Settings
from app.db.engine import make_engine, write_turn

THREADS = 40
TRANSACTIONS = 15


def burst(turn: Callable[[Any], contextlib.AbstractContextManager[None]]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="tj-turn-") as tmp:
        engine = make_engine(Settings(data_dir=Path(tmp)))
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
        latencies: list[float] = []

        def writer() -> None:
            for _ in range(TRANSACTIONS):
                start = time.perf_counter()
                with engine.connect() as connection:
                    connection.execute(text("SELECT count(*) FROM t")).scalar()
                    with turn(connection):
                        connection.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": "x" * 200})
                        sum(range(20_000))  # the Python work of a real transaction
                        connection.execute(text("INSERT INTO t (v) VALUES ('y')"))
                        connection.commit()
                latencies.append(time.perf_counter() - start)

        threads = [threading.Thread(target=writer) for _ in range(THREADS)]
        began = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
        engine.dispose()
    latencies.sort()

    def ms(q: float) -> float:
        return round(latencies[int(q * (len(latencies) - 1))] * 1000, 1)

    return {"wall_s": round(wall, 2), "p50_ms": ms(0.5), "p95_ms": ms(0.95),
            "p99_ms": ms(0.99), "max_ms": ms(1.0)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    variants: dict[str, Callable[[Any], contextlib.AbstractContextManager[None]]] = {
        "busy handler": lambda connection: contextlib.nullcontext(),
        "write_turn": write_turn,
    }
    for _ in range(args.rounds):
        for name, turn in variants.items():
            load = os.getloadavg()[0]
            print(f"{name:>12}: load {load:.1f}  {burst(turn)}", flush=True)


if __name__ == "__main__":
    main()
