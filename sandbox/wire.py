"""Host side of the runner's wire format: encode a job, decode and validate the result stream.

Everything read back is untrusted: JSON frames are validated with pydantic, arrays are read with
``np.load(allow_pickle=False)`` and must be numeric, and every size is capped.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sandbox.protocol import CaseError, CaseOutcome, RunRequest
from sandbox.runner import BLOB_KIND, FRAME_HEADER, JSON_KIND, MAX_JSON_FRAME, NUMERIC_KINDS

# The worker is killed once stdout or stderr passes this many times the kept cap.
OUTPUT_KILL_FACTOR = 8


def encode_job(request: RunRequest) -> bytes:
    """The bytes to write on the runner's stdin."""
    blobs: list[bytes] = []
    cases: list[dict[str, Any]] = []
    for case in request.cases:
        args: dict[str, dict[str, int]] = {}
        for pname in request.param_names:
            value = case.args[pname]
            if isinstance(value, np.ndarray):
                buf = io.BytesIO()
                np.save(buf, value, allow_pickle=False)
                args[pname] = {"array": len(blobs)}
                blobs.append(buf.getvalue())
            else:
                args[pname] = {"int": int(value)}
        cases.append({"name": case.name, "args": args})
    # Attribution of printed output is synchronised before each case up to the first hidden one;
    # after it every phase is hidden, so the cases run without that round trip.
    first_hidden = next((i for i, c in enumerate(request.cases) if c.hidden), len(request.cases))
    for index, case_json in enumerate(cases):
        case_json["sync"] = index <= first_hidden
    limits = request.limits
    header = {
        "version": 1,
        "code": request.code,
        "function_name": request.function_name,
        "param_names": list(request.param_names),
        "cases": cases,
        "limits": {
            "output_bytes": limits.output_bytes,
            "output_kill_bytes": limits.output_bytes * OUTPUT_KILL_FACTOR,
            "result_bytes": limits.result_bytes,
        },
    }
    parts = [_frame(JSON_KIND, json.dumps(header).encode())]
    parts.extend(_frame(BLOB_KIND, b) for b in blobs)
    return b"".join(parts)


def stream_cap(request: RunRequest) -> int:
    """Most bytes a well-behaved runner can write: outputs, captured text, per-case headers."""
    limits = request.limits
    per_case = 64 * 1024
    # Captured text is JSON-escaped in the end frame (up to 6 bytes per input byte), twice: whole
    # and split into phases.
    return limits.result_bytes + 24 * limits.output_bytes + per_case * (len(request.cases) + 4)


def _frame(kind: bytes, payload: bytes) -> bytes:
    return FRAME_HEADER.pack(kind, len(payload)) + payload


class _ErrorFrame(BaseModel):
    type: Annotated[str, Field(max_length=200)]
    message: Annotated[str, Field(max_length=4096)]
    traceback: Annotated[str, Field(max_length=16384)] = ""


class StartedFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["started"]


class CaseFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["case"]
    index: int = Field(ge=0)
    name: str
    error: _ErrorFrame | None
    mutated_inputs: list[str]
    seconds: float = Field(ge=0)
    output: bool


class LoadFailedFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["load_failed"]
    kind: Literal["compile", "runtime", "memory"]
    error: _ErrorFrame


class PhaseFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    case: int | None = Field(ge=0)
    stdout: str
    stderr: str


class EndFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["end"]
    completed: bool
    worker_exit: int | None
    worker_signal: int | None
    worker_cpu_seconds: float
    output_killed: bool
    result_overflow: bool
    stdout: str
    stderr: str
    stdout_bytes: int = Field(ge=0)
    stderr_bytes: int = Field(ge=0)
    phases: list[PhaseFrame] = []


@dataclass
class ParsedStream:
    started: bool = False
    cases: list[CaseOutcome] = field(default_factory=list)
    load_failed: LoadFailedFrame | None = None
    end: EndFrame | None = None
    problem: str = ""  # why parsing stopped early, if it did
    import_stdout: str = ""
    import_stderr: str = ""


def parse_stream(data: bytes, request: RunRequest) -> ParsedStream:
    """Decode the runner's stdout. Stops at the first malformed frame and says why."""
    parsed = ParsedStream()
    pos = 0
    seen: set[int] = set()
    pnames = set(request.param_names)
    budget = request.limits.result_bytes
    while pos < len(data):
        if len(data) - pos < FRAME_HEADER.size:
            parsed.problem = "result stream ends inside a frame header"
            return parsed
        kind, length = FRAME_HEADER.unpack_from(data, pos)
        pos += FRAME_HEADER.size
        if kind != JSON_KIND or length > MAX_JSON_FRAME or pos + length > len(data):
            parsed.problem = "malformed or truncated frame in the result stream"
            return parsed
        payload = data[pos : pos + length]
        pos += length
        try:
            obj = json.loads(payload)
            mtype = obj.get("type") if isinstance(obj, dict) else None
            if mtype == "started":
                StartedFrame.model_validate(obj)
                parsed.started = True
            elif mtype == "case":
                frame = CaseFrame.model_validate(obj)
                output = None
                if frame.output:
                    blob, pos = _read_blob(data, pos)
                    budget -= len(blob)
                    if budget < 0:
                        parsed.problem = "outputs exceed the result size limit"
                        return parsed
                    output = load_output(blob)
                if frame.index >= len(request.cases) or frame.index in seen:
                    raise ValueError(f"unexpected case index {frame.index}")
                seen.add(frame.index)
                parsed.cases.append(
                    CaseOutcome(
                        name=request.cases[frame.index].name,
                        output=output,
                        error=CaseError(**frame.error.model_dump()) if frame.error else None,
                        mutated_inputs=[n for n in frame.mutated_inputs if n in pnames],
                        seconds=frame.seconds,
                    )
                )
            elif mtype == "load_failed":
                parsed.load_failed = LoadFailedFrame.model_validate(obj)
            elif mtype == "end":
                parsed.end = EndFrame.model_validate(obj)
                _attribute_output(parsed, request)
                return parsed
            else:
                raise ValueError(f"unknown message type {mtype!r}")
        except (ValueError, ValidationError) as exc:
            parsed.problem = f"invalid message in the result stream: {str(exc)[:500]}"
            return parsed
    return parsed


def _attribute_output(parsed: ParsedStream, request: RunRequest) -> None:
    """Hand each phase's captured text to its case (by the case's name: indices are the
    request's); import-time text goes to ``import_*``."""
    assert parsed.end is not None
    by_name = {c.name: c for c in parsed.cases}
    for phase in parsed.end.phases:
        if phase.case is None:
            parsed.import_stdout += phase.stdout
            parsed.import_stderr += phase.stderr
        elif phase.case < len(request.cases):
            outcome = by_name.get(request.cases[phase.case].name)
            if outcome is not None:
                outcome.stdout += phase.stdout
                outcome.stderr += phase.stderr


def _read_blob(data: bytes, pos: int) -> tuple[bytes, int]:
    if len(data) - pos < FRAME_HEADER.size:
        raise ValueError("missing output blob")
    kind, length = FRAME_HEADER.unpack_from(data, pos)
    pos += FRAME_HEADER.size
    if kind != BLOB_KIND or pos + length > len(data):
        raise ValueError("malformed output blob")
    return data[pos : pos + length], pos + length


def load_output(blob: bytes) -> np.ndarray:
    """An output array from .npy bytes: never unpickled, numeric dtypes only."""
    array = np.load(io.BytesIO(blob), allow_pickle=False)
    if not isinstance(array, np.ndarray) or type(array) is not np.ndarray:
        raise ValueError("output is not a plain ndarray")
    if array.dtype.kind not in NUMERIC_KINDS or array.dtype.fields is not None:
        raise ValueError(f"output dtype {array.dtype} is not numeric")
    return array
