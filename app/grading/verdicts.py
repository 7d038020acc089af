"""The verdicts a submission can get, in the order they are displayed (best first)."""

from __future__ import annotations

from enum import StrEnum

from sandbox.protocol import RunStatus


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT_EXCEEDED = "time_limit_exceeded"
    MEMORY_LIMIT_EXCEEDED = "memory_limit_exceeded"
    OUTPUT_LIMIT_EXCEEDED = "output_limit_exceeded"
    COMPILE_ERROR = "compile_error"
    INTERNAL_ERROR = "internal_error"

    @property
    def display_order(self) -> int:
        return list(Verdict).index(self)


def verdict_of_status(status: RunStatus) -> Verdict | None:
    """The verdict a run's process status alone decides (the sandbox reports how its process
    ended, never a verdict), or None when its outputs must be graded."""
    return None if status == "ok" else Verdict(status)
