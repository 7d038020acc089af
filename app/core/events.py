"""One log line per submission state change: JSON for log pipelines, or plain text to read.

Lines go to the ``tensorjudge.submissions`` logger (stderr, INFO) with fixed fields only: the
submission id, its problem, the new state, stage durations, the verdict and diagnosis codes,
a retry's reason (an exception's type name). Never code, outputs or messages a submission
controls.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Mapping
from typing import Literal

LOGGER = "tensorjudge.submissions"
LogFormat = Literal["text", "json"]

log = logging.getLogger(LOGGER)

Field = str | int | float | bool | None | list[str] | dict[str, float]


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        return json.dumps(line, separators=(",", ":"), sort_keys=False)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields: Mapping[str, Field] = getattr(record, "fields", {})
        parts = []
        for key, value in fields.items():
            if isinstance(value, dict):
                value = ",".join(f"{k}={v * 1000:.1f}ms" for k, v in value.items())
            elif isinstance(value, list):
                value = ",".join(value)
            parts.append(f"{key}={value}")
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        return f"{stamp} {record.getMessage()} " + " ".join(parts)


def configure(fmt: LogFormat) -> None:
    """Send the lines to stderr in ``fmt``; called once per process (again: the format changes)."""
    handler = next((h for h in log.handlers if getattr(h, "_tensorjudge", False)), None)
    if handler is None:
        handler = logging.StreamHandler(sys.stderr)
        handler._tensorjudge = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    log.setLevel(logging.INFO)
    log.propagate = False


def state_changed(submission_id: str, problem: str | None, state: str, **fields: Field) -> None:
    """``state``: queued, running, done, requeued, retry, lease_lost. ``problem``: None where
    the caller only has the id (a sweep)."""
    if not log.isEnabledFor(logging.INFO):
        return
    line = {"submission": submission_id, "problem": problem, "state": state} | fields
    # The record is made here rather than by ``log.info``, which walks the stack for the
    # caller's file and line on every line, and these lines show neither.
    record = log.makeRecord(
        LOGGER, logging.INFO, "", 0, "submission %s", (state,), None, extra={"fields": line}
    )
    log.handle(record)
