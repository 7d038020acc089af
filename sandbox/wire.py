"""Host side of the runner's wire format (``sandbox/inside/framing.py``): encode a job, decode
and validate the result stream.

Everything read back is untrusted: JSON frames are validated with pydantic, arrays are read from
``.npy`` bytes (a plain header by a strict parser, anything else by ``np.load(allow_pickle=False)``)
and must be numeric, and every size is capped.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from sandbox.identity_cache import IdentityCache
from sandbox.inside.errors import MAX_BASES, MAX_MESSAGE, MAX_TRACEBACK, MAX_TYPE_NAME
from sandbox.inside.framing import (
    BLOB_KIND,
    FRAME_HEADER,
    JOB_VERSION,
    JSON_KIND,
    MAX_JSON_FRAME,
    NPY_MAGIC,
    NUMERIC_KINDS,
    align,
    inputs_base,
)
from sandbox.protocol import CaseArgs, CaseError, CaseOutcome, RunRequest

# The worker is killed once stdout or stderr passes this many times the kept cap.
OUTPUT_KILL_FACTOR = 8


def encode_job(request: RunRequest) -> bytes:
    """The bytes to write on the runner's stdin: the header, then one section per case (see
    ``framing``). The header holds nothing of any case but how many there are and how many
    of them are public: the shared region's size is the limit's (``Limits.input_bytes``), not
    the largest case's, which the submission could read from its own address space while its
    output is still shown. A case over the limit is refused (``ValueError``)."""
    names = request.param_names
    sections = [case_section(case, names) for case in request.cases]
    limits = request.limits
    for case, section in zip(request.cases, sections, strict=True):
        need = region_need(section)
        if need > limits.input_bytes:
            raise ValueError(
                f"case {case.name!r} needs {need} bytes of inputs; the limit is "
                f"{limits.input_bytes} (Limits.input_bytes)"
            )
    header: dict[str, Any] = {
        "version": JOB_VERSION,
        "code": request.code,
        "function_name": request.function_name,
        "param_names": list(names),
        "cases": len(sections),
        "public": sum(1 for c in request.cases if not c.hidden),
        "region_bytes": limits.input_bytes,
        "limits": {
            "output_bytes": limits.output_bytes,
            "output_kill_bytes": limits.output_bytes * OUTPUT_KILL_FACTOR,
            "result_bytes": limits.result_bytes,
        },
    }
    if request.outputs is not None:
        header["outputs"] = request.outputs
    if request.framework != "numpy":
        header["framework"] = request.framework
    if request.forbidden:
        header["forbidden"] = list(request.forbidden)
    parts = [*_frame(JSON_KIND, _json(header))]
    for spec, inputs in sections:
        parts += [*_frame(JSON_KIND, spec), *_frame(BLOB_KIND, inputs)]
    return b"".join(parts)


def region_need(section: tuple[bytes, bytes | bytearray]) -> int:
    """How much of the shared region a case's section takes: its head, then its inputs."""
    spec, inputs = section
    return inputs_base(len(spec)) + len(inputs)


def case_need(case: CaseArgs, names: Sequence[str]) -> int:
    """``region_need`` of a case not run yet (an instructor's, being checked): not cached."""
    return region_need(_section(case, names))


def _section_bytes(section: tuple[bytes, bytes]) -> int:
    return len(section[0]) + len(section[1])


# Encoded case sections, by the ``CaseArgs`` object they encode (and the parameter names): the
# host reuses one ``CaseArgs`` per case of a test set (``app.grading.calls``), so a section is
# encoded once per test set rather than once per run. Sound because a case's arguments are
# never changed in place once a request holds them. A catalog test set's sections are a few
# hundred KiB; an instructor's seed-sized case ~11 MiB.
SECTIONS: IdentityCache[tuple[bytes, bytes]] = IdentityCache(
    max_entries=4096, max_bytes=64 << 20, size=_section_bytes
)


def case_section(case: CaseArgs, names: Sequence[str]) -> tuple[bytes, bytes]:
    def make() -> tuple[bytes, bytes]:
        spec, inputs = _section(case, names)
        return spec, bytes(inputs)

    return SECTIONS.get((case,), tuple(names), make)


def _json(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _section(case: CaseArgs, names: Sequence[str]) -> tuple[bytes, bytearray]:
    """One case's arguments' JSON and the input bytes it points into: each array C-ordered,
    raw, at an offset aligned to 64. The JSON is the one ``json.dumps`` would write for
    ``{"args": [...]}``, formatted directly (a dtype's string and numbers need no escaping)."""
    args: list[str] = []
    arrays: list[tuple[int, np.ndarray]] = []
    size = 0
    for pname in names:
        value = case.args[pname]
        if isinstance(value, np.ndarray):
            dtype = value.dtype
            if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None:
                raise ValueError(f"input {pname!r} of {case.name!r} has dtype {dtype}")
            offset = align(size)
            dims = ",".join(str(d) for d in value.shape)
            args.append(f'{{"dtype":"{dtype.str}","shape":[{dims}],"offset":{offset}}}')
            arrays.append((offset, value))
            size = offset + value.nbytes
        elif value is None:
            args.append('{"none":true}')
        elif isinstance(value, float | np.floating):
            # JSON writes a float's shortest repr, which reads back as the same double.
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(f"input {pname!r} of {case.name!r} is not finite")
            args.append(f'{{"float":{number!r}}}')
        else:
            args.append(f'{{"int":{int(value)}}}')
    buf = bytearray(size)
    view = memoryview(buf)
    for offset, value in arrays:
        end = offset + value.nbytes
        if end == offset:
            continue  # an empty array: no bytes (and no byte view of its zero-length shape)
        if value.flags.c_contiguous:
            view[offset:end] = value.data.cast("B")
        else:
            view[offset:end] = value.tobytes()  # C order, whatever its layout
    return f'{{"args":[{",".join(args)}]}}'.encode(), buf


# How the runner's last frame starts (``write_json`` writes compact JSON, ``type`` first).
END_FRAME = b'{"type":"end"'


class EndFrameScanner:
    """Finds the runner's ``end`` frame, its last, in the result stream as it arrives, so the
    host can end the run then instead of waiting for the sandbox to be torn down (only frame
    headers are read here; ``parse_stream`` validates the whole stream)."""

    def __init__(self) -> None:
        self.pos = 0
        self.ended = False

    def scan(self, data: bytearray) -> None:
        while len(data) - self.pos >= FRAME_HEADER.size:
            kind, length = FRAME_HEADER.unpack_from(data, self.pos)
            end = self.pos + FRAME_HEADER.size + length
            if len(data) < end:
                return
            start = self.pos + FRAME_HEADER.size
            if kind == JSON_KIND and data.startswith(END_FRAME, start):
                self.ended = True
            self.pos = end


def stream_cap(request: RunRequest) -> int:
    """Most bytes a well-behaved runner can write: outputs, captured text, per-case headers."""
    limits = request.limits
    per_case = 64 * 1024
    # Captured text is JSON-escaped (up to 6 bytes per input byte) in the end frame twice (whole
    # and split into phases) and once more in the ``output`` frames; each of those frames
    # (one per public phase, one per PROGRESS_SECONDS at most) has its own small overhead.
    frames = 64 * (len(request.cases) + 4) + 256 * int(request.limits.wall_seconds * 5 + 1)
    return (
        limits.result_bytes
        + 36 * limits.output_bytes
        + per_case * (len(request.cases) + 4)
        + frames
    )


def _frame(kind: bytes, payload: bytes | bytearray) -> tuple[bytes, bytes | bytearray]:
    return FRAME_HEADER.pack(kind, len(payload)), payload


class _ErrorFrame(BaseModel):
    type: Annotated[str, Field(max_length=MAX_TYPE_NAME)]
    message: Annotated[str, Field(max_length=MAX_MESSAGE)]
    traceback: Annotated[str, Field(max_length=MAX_TRACEBACK)] = ""
    bases: Annotated[
        list[Annotated[str, Field(max_length=MAX_TYPE_NAME)]], Field(max_length=MAX_BASES)
    ] = []


class StartedFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["started"]


class CaseFrame(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["case"]
    index: int = Field(ge=0)
    error: _ErrorFrame | None
    mutated_inputs: list[str]
    seconds: float = Field(ge=0)
    output: bool
    parts: int | None = Field(default=None, ge=1, le=16)


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


class OutputFrame(BaseModel):
    """Text printed at import time (``case`` None) or during a public case, sent while the run
    goes on, so it survives a run killed from outside. The end frame's phases supersede it."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["output"]
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


_Frame = TypeAdapter(
    Annotated[
        StartedFrame | CaseFrame | LoadFailedFrame | OutputFrame | EndFrame,
        Field(discriminator="type"),
    ]
)


@dataclass
class ParsedStream:
    started: bool = False
    cases: list[CaseOutcome] = field(default_factory=list)
    load_failed: LoadFailedFrame | None = None
    end: EndFrame | None = None
    problem: str = ""  # why parsing stopped early, if it did
    import_stdout: str = ""
    import_stderr: str = ""
    # Printed during a public case that never reported (the run stopped in it).
    unfinished_stdout: str = ""
    unfinished_stderr: str = ""
    # The ``output`` frames, in order: what was printed when there is no end frame.
    progress: list[PhaseFrame] = field(default_factory=list)


def parse_stream(data: bytes, request: RunRequest) -> ParsedStream:
    """Decode the runner's stdout. Stops at the first malformed frame and says why. Without an
    end frame (a run killed from outside), the text the ``output`` frames carried is attributed
    instead."""
    parsed = _parse(data, request)
    if parsed.end is None:
        _attribute_output(parsed, request, parsed.progress)
    return parsed


def _parse(data: bytes, request: RunRequest) -> ParsedStream:
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
            frame = _Frame.validate_json(payload)
            if isinstance(frame, StartedFrame):
                parsed.started = True
            elif isinstance(frame, CaseFrame):
                if frame.output and frame.parts != request.outputs:
                    raise ValueError("the number of outputs is not the one asked for")
                blobs: list[bytearray] = []
                for _ in range((frame.parts or 1) if frame.output else 0):
                    blob, pos = _read_blob(data, pos)
                    budget -= len(blob)
                    if budget < 0:
                        parsed.problem = "outputs exceed the result size limit"
                        return parsed
                    blobs.append(blob)
                if frame.index >= len(request.cases) or frame.index in seen:
                    raise ValueError(f"unexpected case index {frame.index}")
                hidden = request.cases[frame.index].hidden
                arrays = tuple(_case_output(blob, hidden) for blob in blobs)
                output: np.ndarray | tuple[np.ndarray, ...] | None = None
                if arrays:
                    output = arrays[0] if frame.parts is None else arrays
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
            elif isinstance(frame, LoadFailedFrame):
                parsed.load_failed = frame
            elif isinstance(frame, OutputFrame):
                parsed.progress.append(
                    PhaseFrame(case=frame.case, stdout=frame.stdout, stderr=frame.stderr)
                )
            else:
                parsed.end = frame
                _attribute_output(parsed, request, frame.phases)
                return parsed
        except (ValueError, ValidationError) as exc:
            parsed.problem = f"invalid message in the result stream: {str(exc)[:500]}"
            return parsed
    return parsed


def _case_output(blob: bytearray, hidden: bool) -> np.ndarray:
    """A case's output array; why a hidden case's could not be read is not said (the reason
    could quote the shape it returned)."""
    try:
        return load_output(blob)
    except ValueError:
        if hidden:
            raise ValueError("a hidden case's output is unreadable") from None
        raise


def _attribute_output(parsed: ParsedStream, request: RunRequest, phases: list[PhaseFrame]) -> None:
    """Hand each phase's captured text to its case (by the case's name: indices are the
    request's); import-time text goes to ``import_*``, a public case's that never reported
    (the run stopped in it) to ``unfinished_*``. A hidden case's text without an outcome is
    dropped here: nothing else could carry it."""
    by_name = {c.name: c for c in parsed.cases}
    for phase in phases:
        if phase.case is None:
            parsed.import_stdout += phase.stdout
            parsed.import_stderr += phase.stderr
        elif phase.case < len(request.cases):
            case = request.cases[phase.case]
            outcome = by_name.get(case.name)
            if outcome is not None:
                outcome.stdout += phase.stdout
                outcome.stderr += phase.stderr
            elif not case.hidden:
                parsed.unfinished_stdout += phase.stdout
                parsed.unfinished_stderr += phase.stderr


def _read_blob(data: bytes, pos: int) -> tuple[bytearray, int]:
    if len(data) - pos < FRAME_HEADER.size:
        raise ValueError("missing output blob")
    kind, length = FRAME_HEADER.unpack_from(data, pos)
    pos += FRAME_HEADER.size
    if kind != BLOB_KIND or pos + length > len(data):
        raise ValueError("malformed output blob")
    # A bytearray: the array read from it is writable, as np.load's would be.
    return bytearray(memoryview(data)[pos : pos + length]), pos + length


# The header of a plain C-ordered numeric array, as np.save and the runner write it (format 1.0).
# Matched, the array is read without ast.literal_eval; anything else goes through np.load.
_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|][biufc]\d{1,2})', 'fortran_order': False, "
    rb"'shape': \(((?:\d{1,18}, ?){0,64}\d{0,18})\), \} *\n"
)


def load_output(blob: bytes | bytearray) -> np.ndarray:
    """An output array from .npy bytes: never unpickled, numeric dtypes only."""
    array = _load_plain_npy(blob)
    if array is None:
        try:
            array = np.load(io.BytesIO(blob), allow_pickle=False)
        except Exception as exc:  # whatever np.load makes of hostile bytes is a bad output
            raise ValueError(f"unreadable .npy output: {str(exc)[:200]}") from None
    if not isinstance(array, np.ndarray) or type(array) is not np.ndarray:
        raise ValueError("output is not a plain ndarray")
    if array.dtype.kind not in NUMERIC_KINDS or array.dtype.fields is not None:
        raise ValueError(f"output dtype {array.dtype} is not numeric")
    return array


def _load_plain_npy(blob: bytes | bytearray) -> np.ndarray | None:
    """The array of a .npy file whose header is exactly the plain form, else None."""
    if blob[: len(NPY_MAGIC)] != NPY_MAGIC or len(blob) < 10:
        return None
    start = 10 + int.from_bytes(blob[8:10], "little")
    layout = _plain_layout(bytes(blob[10:start]))
    if layout is None:
        return None
    dtype, shape, count = layout
    if len(blob) - start != count * dtype.itemsize:
        return None  # np.load decides what a short or padded file is
    return np.frombuffer(blob, dtype=dtype, count=count, offset=start).reshape(shape)


# A run's outputs have the same few headers run after run: each is parsed once. Only short
# headers are kept (a plain one is at most a few hundred bytes), and a bounded number of them.
_LAYOUTS: dict[bytes, tuple[np.dtype[Any], tuple[int, ...], int] | None] = {}
_LAYOUTS_MAX = 512
_LAYOUT_HEADER_MAX = 256


def _plain_layout(header: bytes) -> tuple[np.dtype[Any], tuple[int, ...], int] | None:
    """(dtype, shape, element count) of a plain header, else None."""
    try:
        return _LAYOUTS[header]
    except KeyError:
        pass
    layout = _parse_plain_header(header)
    if len(header) <= _LAYOUT_HEADER_MAX and len(_LAYOUTS) < _LAYOUTS_MAX:
        _LAYOUTS[header] = layout
    return layout


def _parse_plain_header(header: bytes) -> tuple[np.dtype[Any], tuple[int, ...], int] | None:
    match = _NPY_HEADER.fullmatch(header)
    if match is None:
        return None
    try:
        dtype = np.dtype(match[1].decode())
    except TypeError:  # e.g. '<i3': no such dtype
        return None
    shape = tuple(int(d) for d in match[2].split(b",") if d.strip())
    count = 1
    for d in shape:
        count *= d
    return dtype, shape, count
