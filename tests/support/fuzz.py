"""The schemathesis pass both API fuzz tests run: generated requests per operation, every
response counted by (method, path, status class) and every 5xx kept for the failure message."""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def fuzz(
    operations: list[Any],
    strategies: Callable[[Any], list[Any]],
    call: Callable[[Any], Any],
    examples: int,
) -> tuple[Counter[tuple[str, str, int]], list[str]]:
    """``strategies(operation)``: what to draw that operation's cases from; ``call(case)``: send
    it (None: skipped). Returns the counts and the 5xx answers."""
    seen: Counter[tuple[str, str, int]] = Counter()
    server_errors: list[str] = []
    for operation in operations:

        @given(case=st.one_of(strategies(operation)))
        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def run(case: Any) -> None:
            response = call(case)
            if response is None:
                return
            seen[(case.method, case.path, response.status_code // 100)] += 1
            if response.status_code >= 500:
                server_errors.append(
                    f"{case.method} {case.formatted_path} {case.query} {case.body!r:.200}"
                    f" -> {response.status_code} {response.text[:200]}"
                )

        run()
    return seen, server_errors


def in_shard(path: str, shard: int, shards: int) -> bool:
    """Whether the operations of ``path`` ("/api/...", as the document writes it) are in
    ``shard`` of ``shards``: a pass over the whole document split so that its parts run on
    different test workers. A fixed hash of the path, so every operation is in exactly one
    shard whatever the routes, with the other methods of its path (checks such as the Allow
    header compare a path's methods with the document's)."""
    return zlib.crc32(path.encode()) % shards == shard
