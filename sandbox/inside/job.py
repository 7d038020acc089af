"""Reading the job (see ``framing``): its header, each case's section, and a case's arguments
checked against its input bytes."""

from __future__ import annotations

import os
from typing import Any, BinaryIO

from .framing import (
    BLOB_KIND,
    CASE_LENGTH,
    FRAME_HEADER,
    JSON_KIND,
    MAX_INPUT_BYTES,
    MAX_JSON_FRAME,
    NUMERIC_KINDS,
    FrameError,
    inputs_base,
    parse_json,
    product,
)


class JobReader:
    """Reads the job with exact reads. On a real file descriptor it bypasses any read-ahead
    buffer: the cases' bytes must stay in the kernel until the supervisor asks (``read_ahead``
    lifts that once the worker exists)."""

    def __init__(self, inp: BinaryIO) -> None:
        self.inp = inp
        try:
            self.fd: int | None = inp.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None
        # What a read brought beyond what was asked for (``read_ahead``): ``spare[at:end]``.
        self.spare: bytearray | None = None
        self.at = self.end = 0

    def read_ahead(self, size: int) -> None:
        """From now on a read may bring up to ``size`` bytes more than asked for, kept for the
        next reads: a case's four frames and the next cases' come in one system call, not one
        each. Only once the worker exists, which must not have inherited any case's bytes."""
        if self.fd is not None:
            self.spare = bytearray(size)

    def readinto(self, buf: memoryview) -> None:
        pos = 0
        spare = self.spare
        if spare is not None and self.end > self.at:
            pos = min(len(buf), self.end - self.at)
            buf[:pos] = spare[self.at : self.at + pos]
            self.at += pos
        while pos < len(buf):
            if spare is not None:
                n = os.readv(self.fd, [buf[pos:], spare])  # type: ignore[arg-type]
                if n > len(buf) - pos:
                    self.at, self.end = 0, n - (len(buf) - pos)
                    n = len(buf) - pos
            elif self.fd is not None:
                n = os.readv(self.fd, [buf[pos:]])
            else:
                n = self.inp.readinto(buf[pos:])  # type: ignore[attr-defined]
            if not n:
                raise FrameError("the job ended early")
            pos += n

    def frame(self, kind: bytes, max_len: int) -> int:
        """Read one frame header of ``kind``; its payload's length."""
        head = bytearray(FRAME_HEADER.size)
        self.readinto(memoryview(head))
        got, length = FRAME_HEADER.unpack(head)
        if got != kind or length > max_len:
            raise FrameError(f"expected a {kind!r} frame of at most {max_len} bytes")
        return int(length)

    def json(self) -> dict[str, Any]:
        """The next JSON frame, parsed."""
        payload = bytearray(self.frame(JSON_KIND, MAX_JSON_FRAME))
        self.readinto(memoryview(payload))
        return parse_json(payload)

    def blob_into(self, buf: memoryview) -> None:
        if self.frame(BLOB_KIND, MAX_INPUT_BYTES) != len(buf):
            raise FrameError("an input blob of the job has the wrong length")
        self.readinto(buf)

    def case(self) -> tuple[bytes, bytearray]:
        """One case's section: its arguments' JSON (not parsed here) and input bytes."""
        spec = bytearray(self.frame(JSON_KIND, MAX_JSON_FRAME))
        self.readinto(memoryview(spec))
        inputs = bytearray(self.frame(BLOB_KIND, MAX_INPUT_BYTES))
        self.readinto(memoryview(inputs))
        return bytes(spec), inputs


def read_job(inp: BinaryIO) -> dict[str, Any]:
    """The whole job, for tools and tests: ``{"header", "cases": [(args JSON, input bytes)]}``.
    The runner itself reads the cases only after forking."""
    reader = JobReader(inp)
    header = reader.json()
    cases = [reader.case() for _ in range(int(header["cases"]))]
    for spec, _ in cases:
        parse_json(spec)  # each an object
    return {"header": header, "cases": cases}


class Slot:
    """One array argument of the current case: where its bytes lie in the shared region."""

    __slots__ = ("dtype", "end", "name", "shape", "start")

    def __init__(self, name: str, dtype: Any, shape: tuple[int, ...], start: int, end: int) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.start = start
        self.end = end


Arg = Slot | int | float | None
# The dtypes of the job's inputs by their string: a job has a few, each met at every case.
_DTYPES: dict[str, Any] = {}


def parse_args(spec: Any, param_names: list[str], base: int, size: int, np: Any) -> list[Arg]:
    """One case's arguments, checked against its input bytes: ``base`` is where they start in
    the shared region, ``size`` how many there are."""
    if not isinstance(spec, dict) or not isinstance(spec.get("args"), list):
        raise FrameError("a case has no argument list")
    if len(spec["args"]) != len(param_names):
        raise FrameError("a case has the wrong number of arguments")
    args: list[Arg] = []
    append = args.append
    # The order of the tests is the worker's (``worker.load_case``): a dict with several keys
    # means the same thing on both sides.
    for pname, arg in zip(param_names, spec["args"], strict=True):
        if isinstance(arg, dict):
            value = arg.get("int")
            if type(value) is int:
                append(value)
                continue
            value = arg.get("float")
            if type(value) is float:
                append(value)
                continue
            if arg.get("none") is True:
                append(None)
                continue
        try:
            code = str(arg["dtype"])
            dtype = _DTYPES.get(code)
            if dtype is None:
                dtype = np.dtype(code)
                if len(_DTYPES) < 64:
                    _DTYPES[code] = dtype
            shape = tuple(map(int, arg["shape"]))
            offset = int(arg["offset"])
        except (KeyError, TypeError, ValueError) as exc:
            raise FrameError(f"a malformed argument: {exc}") from None
        if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.shape != ():
            raise FrameError(f"input dtype {dtype} is not numeric")
        nbytes = product(shape) * dtype.itemsize
        if (shape and min(shape) < 0) or offset < 0 or offset + nbytes > size:
            raise FrameError("an input lies outside its case")
        append(Slot(pname, dtype, shape, base + offset, base + offset + nbytes))
    return args


class Case:
    """One case as the supervisor keeps it, out of the worker's reach until its turn: ``head``
    is what the shared region holds before the input bytes (the length, the arguments' JSON,
    zeros up to ``base``), ready to be copied in one go."""

    __slots__ = ("args", "base", "head", "inputs", "spec")

    def __init__(self, spec: bytes, inputs: bytearray, args: list[Arg]) -> None:
        self.spec = spec
        self.inputs = inputs
        self.args = args
        self.base = inputs_base(len(spec))
        self.head = CASE_LENGTH.pack(len(spec)) + spec
        self.head += bytes(self.base - len(self.head))
