"""The host's reading of the runner's result stream: hostile or broken streams, and the mapping
from what happened to a run status. Streams are built with the runner's own frame writer."""

from __future__ import annotations

import io
import json
import os
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from sandbox.backends.common import RawRun, interpret
from sandbox.inside.framing import (
    BLOB_KIND,
    FRAME_HEADER,
    JSON_KIND,
    inputs_base,
    write_frame,
    write_json,
)
from sandbox.protocol import CaseArgs, Limits, RunRequest
from sandbox.wire import case_need, encode_job, region_need

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


CASE = {"type": "case", "index": 0, "error": None, "mutated_inputs": [], "seconds": 0.01,
        "output": True}  # fmt: skip
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
    from sandbox.inside.job import read_job

    job = read_job(io.BytesIO(encode_job(REQUEST)))
    header = job["header"]
    assert header["function_name"] == "f" and header["param_names"] == ["a", "n"]
    assert header["cases"] == 1 and header["public"] == 1
    ((spec, inputs),) = job["cases"]
    a, n = json.loads(spec)["args"]
    assert n == {"int": 1} and a["dtype"] == "<f8" and a["shape"] == [3]
    assert np.frombuffer(inputs[a["offset"] : a["offset"] + 24]).tolist() == [1.0, 1.0, 1.0]
    # The region is the limit's size, not the case's: the submission can read it.
    assert header["region_bytes"] == REQUEST.limits.input_bytes
    assert region_need((bytes(spec), bytes(inputs))) == inputs_base(len(spec)) + len(inputs)


def test_each_case_travels_in_its_own_section_after_a_header_without_inputs() -> None:
    from sandbox.inside.job import read_job

    public = np.arange(12.0).reshape(3, 4)
    hidden = np.random.default_rng(7).standard_normal((2, 5)).astype(">f4")
    fortran = np.asfortranarray(np.arange(6, dtype=np.int16).reshape(2, 3))
    request = RunRequest(
        code="",
        function_name="f",
        param_names=["a", "n"],
        cases=[
            CaseArgs(name="ex-1", args={"a": public, "n": 2}),
            CaseArgs(name="secret-name", args={"a": hidden, "n": 987654321}, hidden=True),
            CaseArgs(name="probe", args={"a": fortran[:, ::2], "n": 3}, hidden=True),
        ],
    )
    data = encode_job(request)
    header_end = FRAME_HEADER.size + FRAME_HEADER.unpack_from(data)[1]
    head = data[:header_end]
    for array in (public, hidden):
        assert array.tobytes()[:8] not in head
    assert b"987654321" not in head
    assert b"secret-name" not in data  # names are never sent

    job = read_job(io.BytesIO(data))
    assert job["header"]["cases"] == 3 and job["header"]["public"] == 1
    assert job["header"]["region_bytes"] == request.limits.input_bytes

    def array_of(section: tuple[bytes, bytearray]) -> np.ndarray:
        spec = json.loads(section[0])["args"][0]
        assert spec["offset"] % 64 == 0
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"]))
        return np.frombuffer(section[1], dtype, count, spec["offset"]).reshape(spec["shape"])

    ex, secret, probe = (array_of(c) for c in job["cases"])
    np.testing.assert_array_equal(ex, public)
    np.testing.assert_array_equal(secret, hidden)
    assert secret.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(probe, fortran[:, ::2])
    # Each section holds its own case's bytes and no other's.
    assert hidden.tobytes() not in job["cases"][0][1] + job["cases"][2][1]


def test_a_public_case_after_a_hidden_one_is_refused() -> None:
    """What a public case prints is shown: none may run once hidden inputs were seen."""
    args: dict[str, np.ndarray | int] = {"a": np.ones(2), "n": 1}
    with pytest.raises(ValidationError, match="public cases must run first"):
        RunRequest(
            code="",
            function_name="f",
            param_names=["a", "n"],
            cases=[
                CaseArgs(name="public-1", args=args),
                CaseArgs(name="hidden-1", args=args, hidden=True),
                CaseArgs(name="public-late", args=args),
            ],
        )


def test_a_non_numeric_input_is_refused_on_the_host() -> None:
    request = REQUEST.model_copy(
        update={"cases": [CaseArgs(name="o", args={"a": np.array([object()]), "n": 1})]}
    )
    with pytest.raises(ValueError, match="dtype object"):
        encode_job(request)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6.0).reshape(2, 3),
        np.array(3.5),
        np.zeros((0, 4), dtype=np.int32),
        np.array([True, False]),
        np.arange(4, dtype=">i8"),
        (np.arange(3) + 1j).astype(np.complex64),
        np.ones((2, 1, 3, 1), dtype=np.uint8),
    ],
    ids=["2d", "0d", "empty", "bool", "big-endian", "complex", "4d"],
)
def test_output_npy_is_read_like_np_load(array: np.ndarray) -> None:
    from sandbox.inside.framing import npy_header
    from sandbox.wire import _load_plain_npy, load_output

    for blob in (npy(array), npy_header(array.dtype.str, array.shape) + array.tobytes()):
        fast = _load_plain_npy(bytearray(blob))
        assert fast is not None, blob[:128]
        assert fast.dtype == array.dtype and fast.shape == array.shape
        np.testing.assert_array_equal(fast, array)
        assert fast.flags.writeable
        np.testing.assert_array_equal(np.load(io.BytesIO(blob), allow_pickle=False), array)
        np.testing.assert_array_equal(load_output(blob), array)


@pytest.mark.parametrize(
    "blob",
    [
        npy(np.asfortranarray(np.arange(6.0).reshape(2, 3))),
        npy(np.arange(3.0))[:-8],  # short
        npy(np.arange(3.0)) + b"\0" * 8,  # padded
        npy(np.arange(3.0)).replace(b"<f8", b"<i3"),  # no such dtype
    ],
    ids=["fortran", "short", "padded", "bad-dtype"],
)
def test_unusual_npy_goes_to_np_load(blob: bytes) -> None:
    from sandbox.wire import _load_plain_npy, load_output

    assert _load_plain_npy(blob) is None
    try:
        array = load_output(blob)
    except ValueError:
        return
    reference = np.load(io.BytesIO(blob), allow_pickle=False)
    np.testing.assert_array_equal(array, reference)


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


@pytest.mark.parametrize(
    "frame", [end(completed=False, worker_exit=87), end(worker_signal=signal.SIGUSR2)]
)
def test_an_exit_code_or_signal_chosen_in_a_hidden_case_is_not_named(frame: dict[str, Any]) -> None:
    """Both are the submission's choice, so in a hidden case they could carry its inputs."""
    public = CaseArgs(name="public", args={"a": np.ones(3), "n": 1})
    hidden = CaseArgs(name="hidden", args={"a": np.ones(3), "n": 1}, hidden=True)
    named = {"87", "SIGUSR2", str(int(signal.SIGUSR2))}
    # Died in the public case (nothing reported yet): named, which helps the student.
    req = REQUEST.model_copy(update={"cases": [public, hidden]})
    result = interpret(RawRun(stdout=stream(STARTED, frame)), req, "test")
    assert result.status == "runtime_error" and any(n in result.message for n in named)
    # Died in the hidden case (the public one reported): not named.
    data = stream(STARTED, CASE, npy(np.ones(3)), frame)
    result = interpret(RawRun(stdout=data), req, "test")
    assert result.status == "runtime_error", result.message
    assert "during a hidden test" in result.message
    assert not any(n in result.message for n in named), result.message


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


def test_a_bool_mask_and_an_omitted_optional_are_sent_as_such() -> None:
    from sandbox.inside.job import read_job

    mask = np.array([[True, False], [False, True]])
    request = REQUEST.model_copy(
        update={
            "param_names": ["a", "n", "mask", "extra"],
            "cases": [
                CaseArgs(name="o", args={"a": np.ones(2), "n": 1, "mask": mask, "extra": None})
            ],
        }
    )
    job = read_job(io.BytesIO(encode_job(request)))
    spec, inputs = job["cases"][0]
    _, _, sent, extra = json.loads(spec)["args"]
    assert sent["dtype"] == "|b1" and extra == {"none": True}
    raw = inputs[sent["offset"] : sent["offset"] + 4]
    assert np.frombuffer(raw, dtype=np.bool_).tolist() == [True, False, False, True]
    assert "outputs" not in job["header"]  # one output: the header is unchanged
    tuple_job = read_job(io.BytesIO(encode_job(request.model_copy(update={"outputs": 2}))))
    assert tuple_job["header"]["outputs"] == 2


TWO = REQUEST.model_copy(update={"outputs": 2})


def test_several_outputs_come_back_as_a_tuple() -> None:
    data = stream(STARTED, {**CASE, "parts": 2}, npy(np.arange(3.0)), npy(np.eye(2)), end())
    result = interpret(RawRun(stdout=data), TWO, "test")
    assert result.status == "ok"
    output = result.cases[0].output
    assert isinstance(output, tuple) and len(output) == 2
    np.testing.assert_array_equal(output[1], np.eye(2))


@pytest.mark.parametrize(
    ("request_", "frame", "blobs"),
    [
        (TWO, {**CASE, "parts": 3}, 3),  # more outputs than asked for
        (TWO, CASE, 1),  # one array where a tuple is due
        (REQUEST, {**CASE, "parts": 2}, 2),  # a tuple where one array is due
    ],
)
def test_a_number_of_outputs_not_asked_for_is_refused(
    request_: RunRequest, frame: dict[str, Any], blobs: int
) -> None:
    data = stream(STARTED, frame, *[npy(np.ones(2))] * blobs, end())
    result = interpret(RawRun(stdout=data), request_, "test")
    # The sandbox (so the submission) could forge this: never ok, never the grader's error.
    assert result.status == "runtime_error" and "outputs" in result.message


def test_why_a_hidden_case_s_output_is_unreadable_is_not_said() -> None:
    """np.load's reason can quote the shape the submission returned: a public case's keeps it
    (for the student's own debugging), a hidden case's does not."""
    short = npy(np.zeros((2, 4471)))[:-8]  # numpy: "expected 71536 bytes" (2 x 4471 x 8)
    public = interpret(RawRun(stdout=stream(STARTED, CASE, short, end())), REQUEST, "test")
    assert public.status == "runtime_error" and "71536" in public.message
    hidden_request = REQUEST.model_copy(
        update={"cases": [CaseArgs(name="h", args={"a": np.ones(3), "n": 1}, hidden=True)]}
    )
    hidden = interpret(RawRun(stdout=stream(STARTED, CASE, short, end())), hidden_request, "test")
    assert hidden.status == "runtime_error" and "71536" not in hidden.message


def test_a_header_read_before_decides_nothing_for_another() -> None:
    """Headers are parsed once and kept: a kept header serves only the very same bytes (same
    dtype and shape), and a short or padded body after it still goes to np.load."""
    from sandbox.wire import _load_plain_npy

    first = np.arange(6.0).reshape(2, 3)
    for _ in range(2):  # the second time from the kept header
        got = _load_plain_npy(bytearray(npy(first)))
        assert got is not None and got.shape == (2, 3)
        np.testing.assert_array_equal(got, first)
    for other in (np.arange(6.0).reshape(3, 2), np.arange(6, dtype=np.int64).reshape(2, 3)):
        got = _load_plain_npy(bytearray(npy(other)))
        assert got is not None and got.shape == other.shape and got.dtype == other.dtype
        np.testing.assert_array_equal(got, other)
    assert _load_plain_npy(npy(first)[:-8]) is None
    assert _load_plain_npy(npy(first) + b"\0" * 8) is None


def test_the_region_does_not_follow_the_cases_and_a_case_over_the_limit_is_refused() -> None:
    def job(hidden: np.ndarray, input_bytes: int) -> RunRequest:
        return RunRequest(
            code="",
            function_name="f",
            param_names=["a", "n"],
            cases=[
                CaseArgs(name="ex", args={"a": np.ones(3), "n": 1}),
                CaseArgs(name="secret", args={"a": hidden, "n": 2}, hidden=True),
            ],
            limits=Limits(input_bytes=input_bytes),
        )

    def region(request: RunRequest) -> int:
        data = encode_job(request)
        return int(
            json.loads(data[FRAME_HEADER.size :][: FRAME_HEADER.unpack_from(data)[1]])[
                "region_bytes"
            ]
        )

    assert region(job(np.ones(1), 1 << 20)) == region(job(np.ones(100_000), 1 << 20)) == 1 << 20
    need = case_need(job(np.ones(1000), 4096).cases[1], ["a", "n"])
    assert 8000 < need < 8192
    with pytest.raises(ValueError, match=f"case 'secret' needs {need} bytes.*limit is 4096"):
        encode_job(job(np.ones(1000), 4096))
    encode_job(job(np.ones(1000), 8192))
