"""Crashes the grader names for every problem: an exception whose type and message a library
raises for one well-known mistake. A public case that raises one gets a fixed hint beside its
message; a hidden case's exception is never read (its message never leaves the sandbox)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CrashHint:
    type: str  # the exception's type as the sandbox names it ("RuntimeError")
    says: str  # text the library's own message holds
    hint: str  # fixed wording: nothing of the submission's in it


# code -> the crash (a habit of faults.toml may expect one of these codes).
CRASH_HINTS: dict[str, CrashHint] = {}


def crash_hint(error_type: str, message: str) -> tuple[str, str] | None:
    """(code, hint) of the named crash a public case's exception is, or None."""
    for code, crash in CRASH_HINTS.items():
        if error_type == crash.type and crash.says in message:
            return code, crash.hint
    return None
