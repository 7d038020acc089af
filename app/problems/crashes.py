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
CRASH_HINTS: dict[str, CrashHint] = {
    # x.transpose(1, 2).view(b, n, d): a transposed tensor's memory is not in its shape's order,
    # and .view() never copies (seen in facebookresearch/fairseq issue 2598, in its multi-head
    # attention module).
    "view-not-contiguous": CrashHint(
        type="RuntimeError",
        says="view size is not compatible with input tensor's size and stride",
        hint=".view() after a transpose: a transposed tensor's memory is not in its new order "
        "and .view() never copies. Use .reshape(...), or .contiguous() before .view(...).",
    ),
}


def crash_hint(error_type: str, message: str) -> tuple[str, str] | None:
    """(code, hint) of the named crash a public case's exception is, or None."""
    for code, crash in CRASH_HINTS.items():
        if error_type == crash.type and crash.says in message:
            return code, crash.hint
    return None
