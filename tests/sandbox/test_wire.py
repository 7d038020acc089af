"""The host's reading of the runner's result stream: hostile or broken streams, and the mapping
from what happened to a run status. Streams are built with the runner's own frame writer."""

from __future__ import annotations

import io
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sandbox.backends.common import RawRun, interpret
from sandbox.protocol import CaseArgs, Limits, RunRequest
from sandbox.runner import BLOB_KIND, FRAME_HEADER, JSON_KIND, write_frame, write_json
from sandbox.wire import encode_job

REQUEST = RunRequest(
    code="def f(a, n):\n    return a\n",
    function_name="f",
    param_names=["a", "n"],
    cases=[CaseArgs(name="only", args={"a": np.ones(3), "n": 1})],
    limits=Limits(cpu_seconds=2, wall_seconds=4),
)


def end(**overrides: Any) -> dict[str, Any]:
    frame = {
        "type": "end",
        "completed": True,
        "worker_exit": 0,
        "worker_signal": None,
        "worker_cpu_seconds": 0.1,
        "output_killed": False,
        "result_overflow": False,
        "stdout": "",
        "stderr": "",
        "stdout_bytes": 0,
        "stderr_bytes": 0,
    }
    frame.update(overrides)
    return frame


def npy(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


def stream(*frames: dict[str, Any] | bytes) -> bytes:
    out = io.BytesIO()
    for frame in frames:
        if isinstance(frame, bytes):
            write_frame(out, BLOB_KIND, frame)
        else:
            write_json(out, frame)
    return out.getvalue()


CASE = {"type": "case", "index": 0, "name": "only", "error": None, "mutated_inputs": [],
        "seconds": 0.01, "output": True}  # fmt: skip
STARTED = {"type": "started"}


def status_of(data: bytes, **raw: Any) -> tuple[str, str]:
    result = interpret(RawRun(stdout=data, **raw), REQUEST, "test")
    return result.status, result.message


def test_a_complete_stream() -> None:
    data = stream(STARTED, CASE, npy(np.arange(3.0)), end(stdout="hi\n", stdout_bytes=3))
    result = interpret(RawRun(stdout=data), REQUEST, "test")
    assert result.status == "ok"
    assert result.stdout == "hi\n" and not result.stdout_truncated
    assert result.cases[0].output is not None
    np.testing.assert_array_equal(result.cases[0].output, np.arange(3.0))


def test_the_job_encoding_round_trips_through_the_runner_reader() -> None:
    from sandbox.runner import read_job

    job, blobs = read_job(io.BytesIO(encode_job(REQUEST)))
    assert job["function_name"] == "f" and job["cases"][0]["args"]["n"] == {"int": 1}
    assert np.load(io.BytesIO(blobs[0]), allow_pickle=False).tolist() == [1.0, 1.0, 1.0]


def test_a_pickled_output_is_never_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"

    class Evil:
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return (os.system, (f"touch {marker}",))

    blob = npy(np.array([Evil()], dtype=object), allow_pickle=True)
    status, message = status_of(stream(STARTED, CASE, blob, end()))
    assert status == "runtime_error" and "invalid message" in message
    assert not marker.exists()


def test_a_non_numeric_npy_is_rejected() -> None:
    status, message = status_of(stream(STARTED, CASE, npy(np.array(["x"])), end()))
    assert status == "runtime_error" and "not numeric" in message


@pytest.mark.parametrize(
    "data",
    [
        FRAME_HEADER.pack(JSON_KIND, 2**60),  # a length that must not be allocated
        stream(STARTED)[:-1],
        stream(STARTED) + b"\x00\x01",
        stream(STARTED, {"type": "case", "index": 7}, end()),
        stream(STARTED, CASE, npy(np.ones(1)), CASE, npy(np.ones(1)), end()),
        stream(STARTED, {"type": "surprise"}, end()),
        stream(STARTED) + FRAME_HEADER.pack(JSON_KIND, 3) + b"[1]",
    ],
    ids=["huge-length", "truncated", "trailing", "bad-case", "duplicate", "unknown", "not-object"],
)
def test_broken_streams_never_pass_as_ok(data: bytes) -> None:
    status, _ = status_of(data)
    assert status in ("runtime_error", "internal_error")


def test_no_started_frame_is_the_sandbox_s_failure() -> None:
    status, message = status_of(b"", returncode=1, stderr=b"bwrap: Can't mount proc")
    assert status == "internal_error" and "Can't mount proc" in message


def test_started_without_end_is_the_submission_s_doing() -> None:
    status, message = status_of(stream(STARTED), returncode=137)
    assert status == "runtime_error" and "before reporting" in message


@pytest.mark.parametrize(
    ("raw", "frame", "expected"),
    [
        ({"timed_out": True}, end(), "time_limit_exceeded"),
        ({"oom_killed": True}, end(), "memory_limit_exceeded"),
        ({"oom_killed": True, "timed_out": True}, end(), "memory_limit_exceeded"),
        ({"stream_overflow": True}, end(), "output_limit_exceeded"),
        ({}, end(output_killed=True), "output_limit_exceeded"),
        ({}, end(result_overflow=True), "output_limit_exceeded"),
        ({}, end(worker_signal=signal.SIGXCPU, completed=False), "time_limit_exceeded"),
        ({}, end(worker_signal=signal.SIGKILL, worker_cpu_seconds=2.5), "time_limit_exceeded"),
        ({}, end(worker_signal=signal.SIGKILL, worker_cpu_seconds=0.1), "runtime_error"),
        ({}, end(worker_signal=signal.SIGSEGV), "runtime_error"),
        ({}, end(completed=False, worker_exit=0), "runtime_error"),
        ({"launch_error": "no bwrap"}, end(), "internal_error"),
    ],
)
def test_status_mapping(raw: dict[str, Any], frame: dict[str, Any], expected: str) -> None:
    status, _ = status_of(stream(STARTED, CASE, npy(np.ones(3)), frame), **raw)
    assert status == expected


def test_load_failures() -> None:
    err = {"type": "SyntaxError", "message": "bad", "traceback": "  File x\nSyntaxError: bad\n"}
    for kind, expected in [
        ("compile", "compile_error"),
        ("runtime", "runtime_error"),
        ("memory", "memory_limit_exceeded"),
    ]:
        frame = {"type": "load_failed", "kind": kind, "error": err}
        status, message = status_of(stream(STARTED, frame, end(completed=False)))
        assert status == expected
        assert "SyntaxError: bad" in message


def test_truncation_is_reported_from_byte_counts() -> None:
    frame = end(stdout="x" * REQUEST.limits.output_bytes, stdout_bytes=10**6)
    result = interpret(RawRun(stdout=stream(STARTED, CASE, npy(np.ones(3)), frame)), REQUEST, "t")
    assert result.status == "ok" and result.stdout_truncated and not result.stderr_truncated
