"""The in-sandbox runner: a supervisor and a worker child. Runs INSIDE the sandbox.

Only the standard library and numpy may be imported here (no pydantic, no ``app``): every backend
copies or binds this one file into the sandbox and runs it with the sandbox's own interpreter.

Contract (stable; the docker backend relies on it)
--------------------------------------------------
Command::

    python -I -S runner.py [--sys-path DIR]...

``--sys-path`` prepends DIR to ``sys.path`` (where numpy lives when ``-S`` hides site-packages).
The runner reads ONE job from stdin (close stdin after writing it), writes the ONLY result stream
to stdout, and exits 0 once it has written the ``end`` message. Anything else (no ``end`` message,
a truncated stream) means the sandbox died before reporting, which is itself a verdict for the
host. Its own stderr carries only the runner's diagnostics. It needs no environment: it sets one
BLAS thread and one malloc arena itself. It enforces no resource limit but the output caps: CPU,
memory, processes, file size and the wall clock are the backend's job, from outside.

Framing (both directions, see ``write_frame`` and ``JobReader``): each frame is one kind byte
(``J`` = UTF-8 JSON object, ``B`` = binary blob) followed by an 8-byte big-endian length and the
payload.

Job (stdin): a header, then one section per case, in order::

    J {"version": 3, "code": str, "function_name": str, "param_names": [str],
       "cases": int, "public": int, "region_bytes": int,
       "limits": {"output_bytes": int, "output_kill_bytes": int, "result_bytes": int}}

and, for each of the ``cases`` cases::

    J {"args": [ARG, ...]}
    B that case's input bytes

where ``ARG`` (one per parameter, in ``param_names`` order) is ``{"int": int}``, ``{"none":
true}`` (the argument is None: an omitted optional parameter) or ``{"dtype": str, "shape":
[int], "offset": int}``: a C-ordered array of a numeric or boolean dtype (``numpy.dtype.str``,
e.g. ``"<f8"``, ``"|b1"``) whose raw bytes start at ``offset`` in its case's input bytes. The
host aligns offsets to 64 bytes; every array argument has bytes of its own. The first ``public``
cases are public (their details may be shown to the student); every later one is hidden (a
hidden case or a probe), and no public case follows a hidden one. ``region_bytes`` is the
largest ``align(8 + len(args JSON)) + len(input bytes)`` over the cases: the size of the one
shared input region. The header may hold ``"outputs": N``: the function then returns a tuple of
N arrays, not one array.

Results (stdout), in order:

* ``{"type": "started"}`` once the header is read and numpy imported (without it, the sandbox
  itself failed);
* per case, a ``J`` frame ``{"type": "case", "index": int, "error": null | {"type", "message",
  "traceback"}, "mutated_inputs": [str], "seconds": float, "output": bool}``; when ``output`` is
  true a ``B`` frame with the output as a ``.npy`` file (format 1.0, C order) follows, or, when
  the job asks for ``outputs``, the frame also holds ``"parts": N`` and N such ``B`` frames
  follow, one per array of the returned tuple. For a hidden case ``error`` is only a category
  (``type`` one of ``HIDDEN_ERROR_TYPES``: ``InvalidOutput``, or the name of one of a few
  standard exception types, so that an expected-error case can be judged, else ``Exception``;
  empty ``message`` and ``traceback``) and ``mutated_inputs`` only what the supervisor saw
  change: the worker's own words never leave the sandbox. ``seconds`` is measured by the
  supervisor, from handing the case its inputs to receiving its result;
* or, instead of any case, ``{"type": "load_failed", "kind": "compile" | "runtime" | "memory",
  "error": {...}}`` when the submission cannot be imported or has no usable entry point;
* always last, ``{"type": "end", "completed": bool, "worker_exit": int | null,
  "worker_signal": int | null, "worker_cpu_seconds": float, "output_killed": bool,
  "result_overflow": bool, "stdout": str, "stderr": str, "stdout_bytes": int,
  "stderr_bytes": int, "phases": [{"case": int | null, "stdout": str, "stderr": str}]}``
  (``completed``: the worker reported every case; ``*_bytes``: how much was written in total,
  the text being cut at ``output_bytes``; ``phases``: the same kept text split by when it was
  printed: ``case: null`` while importing, else while that case ran or after it).

One case at a time: before each case the worker flushes and sends ``case_start`` on its result
pipe, then waits for the supervisor's one-byte acknowledgement. The supervisor first drains the
capture pipes into the phase that is ending, then switches phase, wipes the shared region of the
previous case and lays exactly this case's arguments there (an 8-byte big-endian length, the
case's ``{"args": ...}`` JSON, its input bytes from ``align(8 + length)``), and only then
acknowledges. So whatever the submission prints once it holds a case's inputs is attributed to
that case or a later one, never to an earlier (e.g. public) one, and at any call the worker's
process holds the current case's inputs and no other case's. The supervisor accepts a case's
result only while that case is the current phase, so a result forged later cannot replace an
earlier case's.

Where the inputs live: the supervisor reads the header, creates the (empty) shared region, then
forks the worker; only then does it read the case sections, into its own memory, which the
worker cannot reach (the supervisor is not dumpable, and the worker holds neither its stdin nor
its result stream). The header is read with exact reads on the raw file descriptor, never
through a read-ahead buffer, so no case's bytes are in the process when it forks.

Warm start: the runner imports numpy and everything the worker uses BEFORE it reads the job, so
a backend may start it ahead of demand (a warm pool) and send the job when one arrives. Each
runner still serves exactly one job and exits.

Design: the worker points its stdout/stderr at pipes the supervisor drains (capped), never holds
the result stream's fd, imports the submission and calls the entry point once per case on fresh
arrays viewing the shared inputs. The supervisor checks the shared inputs for mutation against
its private copy, re-validates every output and re-encodes it as ``.npy``.
"""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import select
import signal
import struct
import sys
import time
from collections.abc import Callable
from typing import Any, BinaryIO

FRAME_HEADER = struct.Struct(">cQ")
JSON_KIND = b"J"
BLOB_KIND = b"B"
SUBMISSION_FILENAME = "submission.py"
MAX_JSON_FRAME = 8 * 1024 * 1024
MAX_INPUT_BYTES = 1 << 34
MAX_MESSAGE = 4096
MAX_TRACEBACK = 16384
INPUT_ALIGN = 64
# dtype kinds an input or output may have: booleans, integers, floats, complex. Never object,
# void, str.
NUMERIC_KINDS = frozenset("biufc")
NPY_MAGIC = b"\x93NUMPY\x01\x00"


class FrameError(Exception):
    """The peer sent something that is not a well-formed frame or job."""


def write_frame(out: BinaryIO, kind: bytes, payload: bytes) -> None:
    out.write(FRAME_HEADER.pack(kind, len(payload)))
    out.write(payload)


def write_json(out: BinaryIO, obj: dict[str, Any]) -> None:
    write_frame(out, JSON_KIND, json.dumps(obj, separators=(",", ":")).encode())


def parse_json(payload: bytes | bytearray) -> dict[str, Any]:
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise FrameError("JSON frame is not an object")
    return obj


def align(n: int) -> int:
    return -(-n // INPUT_ALIGN) * INPUT_ALIGN


def npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    """The .npy (format 1.0) header of a C-ordered array, padded as numpy pads it (to 64)."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    total = len(NPY_MAGIC) + 2 + len(text) + 1
    text += " " * (-total % INPUT_ALIGN) + "\n"
    return NPY_MAGIC + len(text).to_bytes(2, "little") + text.encode("latin1")


# --------------------------------------------------------------------------- job


class JobReader:
    """Reads the job with exact reads. On a real file descriptor it bypasses any read-ahead
    buffer: the cases' bytes must stay in the kernel until the supervisor asks."""

    def __init__(self, inp: BinaryIO) -> None:
        self.inp = inp
        try:
            self.fd: int | None = inp.fileno()
        except (AttributeError, OSError, ValueError):
            self.fd = None

    def readinto(self, buf: memoryview) -> None:
        pos = 0
        while pos < len(buf):
            if self.fd is not None:
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
        """One case's section: its arguments' JSON (checked to be an object) and input bytes."""
        spec = bytearray(self.frame(JSON_KIND, MAX_JSON_FRAME))
        self.readinto(memoryview(spec))
        parse_json(spec)
        inputs = bytearray(self.frame(BLOB_KIND, MAX_INPUT_BYTES))
        self.readinto(memoryview(inputs))
        return bytes(spec), inputs


def read_job(inp: BinaryIO) -> dict[str, Any]:
    """The whole job, for tools and tests: ``{"header", "cases": [(args JSON, input bytes)]}``.
    The runner itself reads the cases only after forking."""
    reader = JobReader(inp)
    header = reader.json()
    return {"header": header, "cases": [reader.case() for _ in range(int(header["cases"]))]}


class _Slot:
    """One array argument of the current case: where its bytes lie in the shared region."""

    __slots__ = ("dtype", "end", "name", "shape", "start")

    def __init__(self, name: str, dtype: Any, shape: tuple[int, ...], start: int, end: int) -> None:
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.start = start
        self.end = end


def parse_args(
    spec: Any, param_names: list[str], base: int, size: int, np: Any
) -> list[_Slot | int | None]:
    """One case's arguments, checked against its input bytes: ``base`` is where they start in
    the shared region, ``size`` how many there are."""
    if not isinstance(spec, dict) or not isinstance(spec.get("args"), list):
        raise FrameError("a case has no argument list")
    if len(spec["args"]) != len(param_names):
        raise FrameError("a case has the wrong number of arguments")
    args: list[_Slot | int | None] = []
    for pname, arg in zip(param_names, spec["args"], strict=True):
        if isinstance(arg, dict) and type(arg.get("int")) is int:
            args.append(arg["int"])
            continue
        if isinstance(arg, dict) and arg.get("none") is True:
            args.append(None)
            continue
        try:
            dtype = np.dtype(str(arg["dtype"]))
            shape = tuple(int(d) for d in arg["shape"])
            offset = int(arg["offset"])
        except (KeyError, TypeError, ValueError) as exc:
            raise FrameError(f"a malformed argument: {exc}") from None
        if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.shape != ():
            raise FrameError(f"input dtype {dtype} is not numeric")
        nbytes = _product(shape) * dtype.itemsize
        if any(d < 0 for d in shape) or offset < 0 or offset + nbytes > size:
            raise FrameError("an input lies outside its case")
        args.append(_Slot(pname, dtype, shape, base + offset, base + offset + nbytes))
    return args


# A case's arguments in the shared region: their JSON's length, the JSON, then the input bytes.
CASE_LENGTH = struct.Struct(">Q")


def inputs_base(spec_bytes: int) -> int:
    """Where a case's input bytes start in the shared region, after its arguments' JSON."""
    return align(CASE_LENGTH.size + spec_bytes)


class _Case:
    """One case as the supervisor keeps it, out of the worker's reach until its turn."""

    __slots__ = ("args", "inputs", "spec")

    def __init__(self, spec: bytes, inputs: bytearray, args: list[_Slot | int | None]) -> None:
        self.spec = spec
        self.inputs = inputs
        self.args = args


# --------------------------------------------------------------------------- supervisor


class Supervisor:
    def __init__(self, header: dict[str, Any], reader: JobReader) -> None:
        import numpy as np  # imported before the fork so the worker starts warm

        self.np = np
        self.reader = reader
        self.job = header
        self.param_names = [str(p) for p in header["param_names"]]
        limits = header["limits"]
        self.output_cap = int(limits["output_bytes"])
        self.output_kill = int(limits["output_kill_bytes"])
        self.result_cap = int(limits["result_bytes"])
        outputs = header.get("outputs")
        # None: one array per call; N: a tuple of N arrays.
        self.outputs: int | None = outputs if type(outputs) is int and 0 < outputs <= 16 else None
        self.total = int(header["cases"])
        self.public = int(header["public"])
        region_bytes = int(header["region_bytes"])
        if min(self.total, self.public, region_bytes) < 0:
            raise FrameError("negative sizes in the job header")
        # Created before the fork, so it is shared; it holds one case at a time (``lay``).
        self.region = mmap.mmap(-1, max(region_bytes, 1))
        self.cases: list[_Case] = []  # read after the fork (``read_cases``)
        self.laid = 0  # how many bytes of the region the current case's arguments use
        self.case_started = 0.0  # time.monotonic() when the current case got its inputs
        # closefd=False: the forked worker inherits this object but must never close or reuse it.
        self.out = os.fdopen(os.dup(1), "wb", buffering=1 << 16, closefd=False)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 1)  # nothing printed by accident can reach the result stream
        if reader.fd is not None:
            # The cases are still to be read: keep stdin on a descriptor the worker closes, and
            # put /dev/null where the worker would look.
            reader.fd = os.dup(reader.fd)
        os.dup2(devnull, 0)
        os.close(devnull)
        self.captured = {"stdout": bytearray(), "stderr": bytearray()}
        self.written = {"stdout": 0, "stderr": 0}
        # (case index or None for import time, {stream: kept bytes}), in order.
        self.phases: list[tuple[int | None, dict[str, bytearray]]] = [
            (None, {"stdout": bytearray(), "stderr": bytearray()})
        ]
        self.current = -1  # the case whose phase it is (-1: importing)
        self.reported: set[int] = set()
        self.capture_fds: dict[int, str] = {}
        self.ack_fd = -1
        self.result_total = 0
        self.output_killed = False
        self.result_overflow = False
        self.completed = False
        self.buffer = bytearray()
        self.pending: dict[str, Any] | None = None
        self.dtypes: dict[str, str] = {}

    def run(self) -> None:
        _set_not_dumpable()
        # Flushed before the fork: from here on a missing result is the submission's doing.
        write_json(self.out, {"type": "started"})
        self.out.flush()
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ack_r, ack_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(res_r)
                os.close(out_r)
                os.close(err_r)
                os.close(ack_w)
                _Worker(self, res_w, out_w, err_w, ack_r).run()
            finally:
                os._exit(70)
        for fd in (res_w, out_w, err_w, ack_r):
            os.close(fd)
        try:
            self.read_cases()
        except BaseException:
            _kill(pid)
            raise
        # Non-blocking: a phase change drains them to empty without waiting for more.
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        self.capture_fds = {out_r: "stdout", err_r: "stderr"}
        # Non-blocking too: a worker that never reads its acknowledgements cannot stall us.
        os.set_blocking(ack_w, False)
        self.ack_fd = ack_w
        self.pump(pid, {res_r: "result", out_r: "stdout", err_r: "stderr"})
        os.close(ack_w)
        _, status, usage = os.wait4(pid, 0)
        self.finish(status, usage.ru_utime + usage.ru_stime)

    def read_cases(self) -> None:
        """Every case's section, into the supervisor's own memory (the worker exists already)."""
        size = len(self.region)
        for _ in range(self.total):
            spec, inputs = self.reader.case()
            base = inputs_base(len(spec))
            if base + len(inputs) > size:
                raise FrameError("a case does not fit the shared region")
            args = parse_args(parse_json(spec), self.param_names, base, len(inputs), self.np)
            self.cases.append(_Case(spec, inputs, args))
        if self.reader.fd is not None:
            os.close(self.reader.fd)

    def lay(self, index: int) -> None:
        """Wipe the previous case's arguments from the shared region and lay this case's."""
        region, case = self.region, self.cases[index]
        region[: self.laid] = bytes(self.laid)
        base = inputs_base(len(case.spec))
        region[: CASE_LENGTH.size] = CASE_LENGTH.pack(len(case.spec))
        region[CASE_LENGTH.size : CASE_LENGTH.size + len(case.spec)] = case.spec
        region[base : base + len(case.inputs)] = case.inputs
        self.laid = base + len(case.inputs)

    def pump(self, pid: int, fds: dict[int, str]) -> None:
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        for fd in (*fds, pidfd):
            poller.register(fd, select.POLLIN)
        open_fds = dict(fds)
        worker_gone = False
        while open_fds and not worker_gone:
            for fd, _ in poller.poll():
                if fd == pidfd:
                    worker_gone = True
                elif fd in open_fds and not self.drain(fd, open_fds, poller, pid):
                    continue
        # The worker has exited; take what its pipes hold now, not what stray children may add.
        for fd in list(open_fds):
            os.set_blocking(fd, False)
            try:
                for _ in range(64):
                    if not self.drain(fd, open_fds, poller, pid):
                        break
            except BlockingIOError:
                pass
        os.close(pidfd)

    def drain(self, fd: int, open_fds: dict[int, str], poller: select.poll, pid: int) -> bool:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        stream = open_fds[fd]
        if not data:
            poller.unregister(fd)
            del open_fds[fd]
            os.close(fd)
            return False
        if stream == "result":
            self.on_result_bytes(data, pid, open_fds, poller)
        else:
            kept = self.captured[stream]
            if len(kept) < self.output_cap:
                piece = data[: self.output_cap - len(kept)]
                kept += piece
                self.phases[-1][1][stream] += piece
            self.written[stream] += len(data)
            if self.written[stream] > self.output_kill and not self.output_killed:
                self.output_killed = True
                _kill(pid)
        return True

    def on_result_bytes(
        self, data: bytes, pid: int, open_fds: dict[int, str], poller: select.poll
    ) -> None:
        if self.result_overflow:
            return
        self.buffer += data
        while len(self.buffer) >= FRAME_HEADER.size:
            kind, length = FRAME_HEADER.unpack_from(self.buffer)
            if length > self.result_cap + MAX_JSON_FRAME:
                self.overflow(pid)
                return
            if len(self.buffer) < FRAME_HEADER.size + length:
                return
            payload = bytes(self.buffer[FRAME_HEADER.size : FRAME_HEADER.size + length])
            del self.buffer[: FRAME_HEADER.size + length]
            self.on_worker_frame(kind, payload, pid, open_fds, poller)
            if self.result_overflow:
                return

    def overflow(self, pid: int) -> None:
        self.result_overflow = True
        self.buffer.clear()
        _kill(pid)

    def on_worker_frame(
        self,
        kind: bytes,
        payload: bytes,
        pid: int,
        open_fds: dict[int, str] | None = None,
        poller: select.poll | None = None,
    ) -> None:
        """Validate one frame from the worker (untrusted: the submission shares its process)."""
        pending = self.pending
        if kind == BLOB_KIND:
            if pending is None:
                return
            self.pending = None
            self.emit_case(pending, payload, pid)
            return
        self.pending = None  # a case header must be followed by its blob at once
        if len(payload) > MAX_JSON_FRAME:
            return
        try:
            msg = parse_json(payload)
        except (ValueError, FrameError):
            return
        mtype = msg.get("type")
        if mtype == "case_start" and open_fds is not None and poller is not None:
            self.start_phase(msg.get("index"), pid, open_fds, poller)
        elif mtype == "case":
            if msg.get("output") is not None:
                self.pending = msg
            else:
                self.emit_case(msg, None, pid)
        elif mtype == "load_failed" and self.current == -1:
            kind_s = msg.get("kind")
            write_json(
                self.out,
                {
                    "type": "load_failed",
                    "kind": kind_s if kind_s in ("compile", "runtime", "memory") else "runtime",
                    "error": _clean_error(msg.get("error")),
                },
            )
        elif mtype == "done" and self.current == self.total - 1:
            self.completed = True

    def start_phase(
        self, index: Any, pid: int, open_fds: dict[int, str], poller: select.poll
    ) -> None:
        """Everything printed so far belongs to the phase that ends here; then lay the next
        case's inputs (and only those) and let the worker call it."""
        if type(index) is not int or index != self.current + 1 or index >= self.total:
            return
        for fd in list(self.capture_fds):
            # Bounded: a flood ends with the output kill, which closes the pipe.
            while fd in open_fds and not self.output_killed:
                if not self.drain(fd, open_fds, poller, pid):
                    break
        self.phases.append((index, {"stdout": bytearray(), "stderr": bytearray()}))
        self.current = index
        self.lay(index)
        self.case_started = time.monotonic()
        with contextlib.suppress(OSError):
            os.write(self.ack_fd, b"+")

    def emit_case(self, msg: dict[str, Any], data: bytes | None, pid: int) -> None:
        index = msg.get("index")
        # Only the case whose phase it is, once: a frame forged after hidden inputs were laid
        # cannot stand in for an earlier (public) case's result.
        if type(index) is not int or index != self.current or index in self.reported:
            return
        self.reported.add(index)
        seconds = time.monotonic() - self.case_started
        error = _clean_error(msg.get("error")) if msg.get("error") is not None else None
        blobs: list[tuple[bytes, bytes]] | None = None
        if data is not None:
            try:
                blobs = self.output_blobs(msg["output"], data)
            except (ValueError, TypeError, KeyError) as exc:
                error = {
                    "type": "InvalidOutput",
                    "message": str(exc)[:MAX_MESSAGE],
                    "traceback": "",
                }
            if blobs is not None:
                self.result_total += len(data)
                if self.result_total > self.result_cap:
                    self.overflow(pid)
                    return
        mutated = self.mutated(self.cases[index])
        reported = msg.get("mutated_inputs")
        if index >= self.public:
            # A hidden case: only categories and what the supervisor saw itself leave the
            # sandbox; the worker's words (exception names, messages, tracebacks, the arguments
            # it says it reshaped) are the submission's to choose and could spell out inputs.
            error = _error_category(error)
        elif isinstance(reported, list):
            mutated |= {n for n in reported if isinstance(n, str) and n in self.param_names}
        header = {
            "type": "case",
            "index": index,
            "error": error,
            "mutated_inputs": [p for p in self.param_names if p in mutated],
            "seconds": seconds,
            "output": blobs is not None,
        }
        if blobs is not None and self.outputs is not None:
            header["parts"] = len(blobs)
        write_json(self.out, header)
        for npy_head, body in blobs or ():
            self.out.write(FRAME_HEADER.pack(BLOB_KIND, len(npy_head) + len(body)))
            self.out.write(npy_head)
            self.out.write(body)

    def mutated(self, case: _Case) -> set[str]:
        """The arguments whose bytes in the shared region differ from the supervisor's copy."""
        slots = [a for a in case.args if isinstance(a, _Slot)]
        if not slots:
            return set()
        live, pristine = self.region, case.inputs
        base = inputs_base(len(case.spec))
        # One comparison over the case's bytes, then per argument only when something changed.
        if live[base : base + len(pristine)] == pristine:
            return set()
        return {
            s.name
            for s in slots
            if live[s.start : s.end] != pristine[s.start - base : s.end - base]
        }

    def output_blobs(self, meta: Any, data: bytes) -> list[tuple[bytes, bytes]]:
        """(.npy header, raw bytes) of each output the worker sent: one array, or when the job
        asks for a tuple, one per part (``meta["parts"]``, their bytes laid end to end)."""
        if self.outputs is None:
            return [(self.output_header(meta, data), data)]
        parts = meta["parts"]
        if not isinstance(parts, list) or len(parts) != self.outputs:
            raise ValueError("wrong number of outputs")
        blobs = []
        pos = 0
        for part in parts:
            size = int(part["nbytes"])
            if size < 0 or pos + size > len(data):
                raise ValueError("output bytes do not match their shapes")
            body = data[pos : pos + size]
            blobs.append((self.output_header(part, body), body))
            pos += size
        if pos != len(data):
            raise ValueError("output bytes do not match their shapes")
        return blobs

    def output_header(self, meta: Any, data: bytes) -> bytes:
        """The .npy header for the worker's raw output bytes, after checking they fit."""
        descr = self.dtypes.get(str(meta["dtype"]))
        if descr is None:
            dtype = self.np.dtype(str(meta["dtype"]))
            if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.shape != ():
                raise ValueError(f"dtype {dtype} is not numeric")
            descr = self.dtypes[str(meta["dtype"])] = dtype.str
        itemsize = int(descr[2:])
        shape = tuple(int(d) for d in meta["shape"])
        if any(d < 0 for d in shape) or len(shape) > 64:
            raise ValueError("bad output shape")
        if len(data) != _product(shape) * itemsize:
            raise ValueError("output bytes do not match its shape")
        return npy_header(descr, shape)

    def finish(self, status: int, cpu: float) -> None:
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        write_json(
            self.out,
            {
                "type": "end",
                "completed": self.completed,
                "worker_exit": exit_code,
                "worker_signal": sig,
                "worker_cpu_seconds": cpu,
                "output_killed": self.output_killed,
                "result_overflow": self.result_overflow,
                "stdout": self.captured["stdout"].decode("utf-8", "replace"),
                "stderr": self.captured["stderr"].decode("utf-8", "replace"),
                "stdout_bytes": self.written["stdout"],
                "stderr_bytes": self.written["stderr"],
                "phases": [
                    {
                        "case": case,
                        "stdout": kept["stdout"].decode("utf-8", "replace"),
                        "stderr": kept["stderr"].decode("utf-8", "replace"),
                    }
                    for case, kept in self.phases
                    if kept["stdout"] or kept["stderr"]
                ],
            },
        )
        self.out.flush()


def _product(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _clean_error(err: Any) -> dict[str, str]:
    if not isinstance(err, dict):
        return {"type": "Error", "message": "malformed error report", "traceback": ""}
    return {
        "type": str(err.get("type", "Error"))[:200],
        "message": str(err.get("message", ""))[:MAX_MESSAGE],
        "traceback": str(err.get("traceback", ""))[:MAX_TRACEBACK],
    }


# The exception types a hidden case's error may name, so that an expected-error case can be
# judged outside the sandbox: a short fixed list of standard ones. Any other (a class the
# submission defines is ``submission.Name``) is reported as ``Exception``. The name is still the
# submission's to choose, but only among these, and the host never shows it.
HIDDEN_EXCEPTION_NAMES = frozenset(
    {
        "ArithmeticError",
        "AssertionError",
        "Exception",
        "FloatingPointError",
        "IndexError",
        "KeyError",
        "LookupError",
        "MemoryError",
        "NotImplementedError",
        "OverflowError",
        "RuntimeError",
        "TypeError",
        "ValueError",
        "ZeroDivisionError",
        "numpy.linalg.LinAlgError",
    }
)
# What a hidden case's error may say: one of these, nothing more (``InvalidOutput``: the result
# was not what the job asks for).
HIDDEN_ERROR_TYPES = HIDDEN_EXCEPTION_NAMES | {"InvalidOutput"}


def _error_category(error: dict[str, str] | None) -> dict[str, str] | None:
    if error is None:
        return None
    kind = error["type"] if error["type"] in HIDDEN_ERROR_TYPES else "Exception"
    return {"type": kind, "message": "", "traceback": ""}


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _set_not_dumpable() -> None:
    """Keep /proc/<supervisor>/fd and /mem out of the worker's reach (same uid, same pid ns), and
    make every thread share one malloc arena: glibc reserves 64 MiB of address space per thread
    arena, which would turn a few threads into a MemoryError under RLIMIT_AS."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        libc.mallopt(-8, 1)  # M_ARENA_MAX = -8
    except (OSError, AttributeError, ImportError):
        pass


def _write_all(fd: int, parts: list[bytes]) -> None:
    """One system call for a whole message in the common case (a pipe takes it whole)."""
    total = sum(len(p) for p in parts)
    done = os.writev(fd, parts)
    if done < total:
        rest = memoryview(b"".join(parts))[done:]
        while rest:
            rest = rest[os.write(fd, rest) :]


# --------------------------------------------------------------------------- worker


class _Worker:
    """Runs in the forked child. Everything it needs is bound before the submission is imported,
    so a submission that monkeypatches numpy or builtins cannot change how results are checked."""

    def __init__(self, sup: Supervisor, res_w: int, out_w: int, err_w: int, ack_r: int) -> None:
        self.np = sup.np
        self.ndarray = sup.np.ndarray
        self.region = sup.region
        self.total = sup.total
        self.param_names = list(sup.param_names)
        self.code = str(sup.job["code"])
        self.function_name = str(sup.job["function_name"])
        self.result_cap = sup.result_cap
        self.outputs = sup.outputs
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        # Only 0-2 (/dev/null and the capture pipes), the result pipe and the acknowledgement
        # pipe stay open: never the supervisor's stdin or result stream.
        keep = sorted((res_w, ack_r))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, os.sysconf("SC_OPEN_MAX"))
        self.res = res_w
        self.ack_r = ack_r
        self.read = os.read
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
        self.streams = (sys.stdout, sys.stderr)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-large file is an OSError
        self.dumps = json.dumps
        self.loads = json.loads
        self.parse_args = parse_args
        self.write_all = _write_all
        self.pack = FRAME_HEADER.pack
        self.unpack_length = CASE_LENGTH.unpack_from
        self.inputs_base = inputs_base
        self.getpid = os.getpid
        self.exit = os._exit
        self.pid = os.getpid()
        self.shape_of = type(self.np.empty(0)).shape.__get__

    def send_json(self, obj: dict[str, Any], blob: bytes | None = None) -> None:
        payload = self.dumps(obj, separators=(",", ":")).encode()
        parts = [self.pack(JSON_KIND, len(payload)), payload]
        if blob is not None:
            parts += [self.pack(BLOB_KIND, len(blob)), blob]
        self.write_all(self.res, parts)

    def run(self) -> None:
        fn = self.load()
        if fn is not None:
            for index in range(self.total):
                self.start_case(index)
                self.run_case(fn, index, self.load_case())
            self.send_json({"type": "done"})
        for stream in (*self.streams, sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the submission may have replaced or closed it
                stream.flush()
        self.exit(0)  # also ends threads the submission left running

    def load_case(self) -> list[_Slot | int | None]:
        """The current case's arguments, as the supervisor laid them before acknowledging."""
        try:
            (length,) = self.unpack_length(self.region)
            base = self.inputs_base(length)
            spec = self.loads(self.region[CASE_LENGTH.size : CASE_LENGTH.size + length])
            return self.parse_args(spec, self.param_names, base, len(self.region) - base, self.np)
        except Exception:
            self.exit(72)  # the submission scribbled over them

    def load(self) -> Callable[..., Any] | None:
        import types

        module = types.ModuleType("submission")
        module.__file__ = SUBMISSION_FILENAME
        sys.modules["submission"] = module
        import linecache

        source = self.code
        # Lets tracebacks show the submission's source lines.
        linecache.cache[SUBMISSION_FILENAME] = (len(source), None, source.splitlines(True), "")
        try:
            code = compile(source, SUBMISSION_FILENAME, "exec")
            exec(code, module.__dict__)
        except (SyntaxError, ImportError) as exc:
            self.load_failed("compile", exc)
            return None
        except MemoryError as exc:
            self.load_failed("memory", exc)
            return None
        except BaseException as exc:
            self.forked_copy_exits()
            self.load_failed("runtime", exc)
            return None
        self.forked_copy_exits()
        fname = self.function_name
        fn = module.__dict__.get(fname)
        if fn is None:
            self.send_json(
                {
                    "type": "load_failed",
                    "kind": "compile",
                    "error": {
                        "type": "MissingEntryPoint",
                        "message": f"the submission defines no function named {fname!r}",
                        "traceback": "",
                    },
                }
            )
            return None
        if not callable(fn):
            self.send_json(
                {
                    "type": "load_failed",
                    "kind": "compile",
                    "error": {
                        "type": "EntryPointNotCallable",
                        "message": f"{fname!r} is a {_type_name(fn)}, not a function",
                        "traceback": "",
                    },
                }
            )
            return None
        return fn  # type: ignore[no-any-return]

    def start_case(self, index: int) -> None:
        """Attribute what was printed so far to the previous phase, and wait while the
        supervisor swaps the previous case's inputs for this one's (see the module docstring)."""
        for stream in (*self.streams, sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the submission may have replaced or closed it
                stream.flush()
        self.send_json({"type": "case_start", "index": index})
        try:
            acknowledged = self.read(self.ack_r, 1) == b"+"
        except OSError:
            acknowledged = False
        if not acknowledged:  # the submission tampered with the pipe: stop rather than leak
            self.exit(71)

    def forked_copy_exits(self) -> None:
        """A child the submission forked returns here too: only the worker itself reports."""
        if self.getpid() != self.pid:
            self.exit(0)

    def load_failed(self, kind: str, exc: BaseException) -> None:
        self.send_json({"type": "load_failed", "kind": kind, "error": _describe(exc)})

    def run_case(self, fn: Callable[..., Any], index: int, args: list[_Slot | int | None]) -> None:
        values: list[Any] = []
        for arg in args:
            if isinstance(arg, _Slot):
                values.append(
                    self.ndarray(arg.shape, dtype=arg.dtype, buffer=self.region, offset=arg.start)
                )
            else:
                values.append(arg)
        error: dict[str, str] | None = None
        result: Any = None
        try:
            result = fn(*values)
        except BaseException as exc:
            error = _describe(exc)
        self.forked_copy_exits()
        mutated = [
            a.name
            for a, v in zip(args, values, strict=True)
            if isinstance(a, _Slot) and tuple(self.shape_of(v)) != a.shape
        ]
        header: dict[str, Any] = {
            "type": "case",
            "index": index,
            "error": error,
            "mutated_inputs": mutated,
            "output": None,
        }
        data = None
        if error is None:
            try:
                meta, data = self.convert(result)
                header["output"] = meta
            except _BadOutput as exc:
                header["error"] = {"type": "InvalidOutput", "message": str(exc), "traceback": ""}
        self.send_json(header, data)

    def convert(self, result: Any) -> tuple[dict[str, Any], bytes]:
        if self.outputs is None:
            return self.convert_array(result, self.result_cap)
        n = self.outputs
        if type(result) is not tuple or len(result) != n:
            got = f"a tuple of {len(result)}" if type(result) is tuple else _type_name(result)
            raise _BadOutput(f"returned {got}; expected a tuple of {n} numpy.ndarrays")
        metas, blobs = [], []
        budget = self.result_cap
        for part in result:
            meta, data = self.convert_array(part, budget)
            budget -= len(data)
            meta["nbytes"] = len(data)
            metas.append(meta)
            blobs.append(data)
        return {"parts": metas}, b"".join(blobs)

    def convert_array(self, result: Any, cap: int) -> tuple[dict[str, Any], bytes]:
        if type(result) is not self.ndarray:
            if isinstance(result, self.ndarray):
                raise _BadOutput(
                    f"returned a {_type_name(result)}, a subclass of numpy.ndarray; "
                    "return a plain numpy.ndarray (np.asarray(x))"
                )
            raise _BadOutput(f"returned {_type_name(result)}; expected a numpy.ndarray")
        dtype = result.dtype
        if dtype.kind not in NUMERIC_KINDS or dtype.hasobject or dtype.fields is not None:
            raise _BadOutput(f"returned an array of dtype {dtype}; expected a numeric dtype")
        shape = tuple(int(d) for d in self.shape_of(result))
        nbytes = _product(shape) * dtype.itemsize
        if nbytes > cap:
            raise _BadOutput(
                f"returned an array of shape {shape} ({nbytes} bytes); "
                f"the limit is {self.result_cap} bytes"
            )
        data = memoryview(result).tobytes()  # C order, materialises views only after the check
        return {"dtype": dtype.str, "shape": list(shape)}, data


class _BadOutput(Exception):
    pass


def _type_name(obj: Any) -> str:
    try:
        cls = type(obj)
        return (
            f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__name__
        )
    except Exception:
        return "an object of an unprintable type"


def _describe(exc: BaseException) -> dict[str, str]:
    """Type, message and the traceback trimmed to the submission's own frames."""
    import traceback

    try:
        message = str(exc)[:MAX_MESSAGE]
    except BaseException:
        message = "<exception message could not be printed>"
    try:
        frames = [
            f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SUBMISSION_FILENAME
        ]
        if isinstance(exc, SyntaxError) and exc.lineno is not None:
            text = "".join(traceback.format_exception_only(type(exc), exc))
        else:
            lines = traceback.StackSummary.from_list(frames).format()
            text = "Traceback (most recent call last):\n" + "".join(lines) if lines else ""
            text += f"{_type_name(exc)}: {message}\n"
    except BaseException:
        text = ""
    # numpy raises its own MemoryError subclasses; the host only needs to know it was memory.
    name = "MemoryError" if isinstance(exc, MemoryError) else _type_name(exc)
    return {"type": name[:200], "message": message, "traceback": text[-MAX_TRACEBACK:]}


# --------------------------------------------------------------------------- entry point


def run_job(inp: BinaryIO) -> None:
    """Read one job from ``inp`` and run it, writing the result stream to fd 1 (what every
    backend, the fork server's zygote included, calls once the sandbox is set up). Only the
    header is read before the worker exists (see the module docstring)."""
    reader = JobReader(inp)
    header = reader.json()
    if header.get("version") != 3:
        raise FrameError(f"unsupported job version {header.get('version')!r}")
    Supervisor(header, reader).run()


def main(argv: list[str]) -> int:
    for i, arg in enumerate(argv):
        if arg == "--sys-path" and i + 1 < len(argv):
            sys.path.insert(0, argv[i + 1])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one BLAS thread: memory limits stay meaningful
    _preload()
    run_job(sys.stdin.buffer)
    # The end message is written and flushed: skip the interpreter's teardown (tens of ms with
    # numpy loaded), which would only delay the host seeing the stream close.
    os._exit(0)


def _preload() -> None:
    """Import what a job needs before the job arrives: a pooled runner waits warm."""
    import ctypes  # noqa: F401  (used by _set_not_dumpable)
    import linecache  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401

    import numpy  # noqa: F401


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
