"""The in-sandbox runner: a supervisor and a worker child. Runs INSIDE the sandbox.

Only the standard library and numpy may be imported here (no pydantic, no ``app``): every backend
copies or binds this one file into the sandbox and runs it with the sandbox's own interpreter.

Contract (stable; the docker backend relies on it)
--------------------------------------------------
Command::

    python -I -S runner.py [--sys-path DIR]...

``--sys-path`` prepends DIR to ``sys.path`` (where numpy lives when ``-S`` hides site-packages).
The runner reads ONE job from stdin (to EOF: close stdin after writing it), writes the ONLY result
stream to stdout, and exits 0 once it has written the ``end`` message. Anything else (no ``end``
message, a truncated stream) means the sandbox died before reporting, which is itself a verdict for
the host. Its own stderr carries only the runner's diagnostics. It needs no environment: it sets
one BLAS thread and one malloc arena itself. It enforces no resource limit but the output caps:
CPU, memory, processes, file size and the wall clock are the backend's job, from outside.

Framing (both directions, see ``write_frame``/``read_frame``): each frame is one kind byte
(``J`` = UTF-8 JSON object, ``B`` = binary blob) followed by an 8-byte big-endian length and the
payload.

Job (stdin): a ``J`` frame ::

    {"version": 1, "code": str, "function_name": str, "param_names": [str],
     "cases": [{"name": str, "args": {param: {"array": blob_index} | {"int": int}},
                "sync": bool (optional, default true)}],
     "limits": {"output_bytes": int, "output_kill_bytes": int, "result_bytes": int}}

followed by one ``B`` frame per blob index (0, 1, ...), each the bytes of a ``.npy`` file
(read with ``allow_pickle=False``).

Results (stdout), in order:

* ``{"type": "started"}`` once the job is read and numpy imported (without it, the sandbox
  itself failed);
* per case, a ``J`` frame ``{"type": "case", "index": int, "name": str, "error": null |
  {"type", "message", "traceback"}, "mutated_inputs": [str], "seconds": float,
  "output": bool}``; when ``output`` is true a ``B`` frame with the output as ``.npy`` follows;
* or, instead of any case, ``{"type": "load_failed", "kind": "compile" | "runtime" | "memory",
  "error": {...}}`` when the submission cannot be imported or has no usable entry point;
* always last, ``{"type": "end", "completed": bool, "worker_exit": int | null,
  "worker_signal": int | null, "worker_cpu_seconds": float, "output_killed": bool,
  "result_overflow": bool, "stdout": str, "stderr": str, "stdout_bytes": int,
  "stderr_bytes": int, "phases": [{"case": int | null, "stdout": str, "stderr": str}]}``
  (``completed``: the worker reported every case; ``*_bytes``: how much was written in total,
  the text being cut at ``output_bytes``; ``phases``: the same kept text split by when it was
  printed: ``case: null`` while importing, else while that case ran or after it).

Output attribution: before each case the worker flushes and sends ``case_start`` on its result
pipe; before a ``sync`` case it then waits for the supervisor's one-byte acknowledgement. The
supervisor first drains the capture pipes into the phase that is ending, then switches phase and
acknowledges: whatever the submission prints once it holds a sync case's inputs is attributed to
that case or a later one, never to an earlier (e.g. public) one. The host marks every case up to
the first hidden one ``sync``; after it all phases are hidden, so the round trip is skipped.

Warm start: the runner imports numpy and everything the worker uses BEFORE it reads the job, so
a backend may start it ahead of demand (a warm pool) and send the job when one arrives. Each
runner still serves exactly one job and exits.

Design: the supervisor reads the job, imports numpy, lays every case's inputs in shared memory and
forks the worker. The worker points its stdout/stderr at pipes the supervisor drains (capped), never
holds the result stream's fd, imports the submission and calls the entry point once per case on
fresh arrays. The supervisor checks the shared inputs for mutation itself, re-validates and
re-encodes every output, and is not dumpable so the worker cannot reach its fds through /proc.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import mmap
import os
import re
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
MAX_MESSAGE = 4096
MAX_TRACEBACK = 16384
# dtype kinds an output may have: booleans, integers, floats, complex. Never object, void, str.
NUMERIC_KINDS = frozenset("biufc")


class FrameError(Exception):
    """The peer sent something that is not a well-formed frame."""


def write_frame(out: BinaryIO, kind: bytes, payload: bytes) -> None:
    out.write(FRAME_HEADER.pack(kind, len(payload)))
    out.write(payload)


def write_json(out: BinaryIO, obj: dict[str, Any]) -> None:
    write_frame(out, JSON_KIND, json.dumps(obj, separators=(",", ":")).encode())


def read_exact(inp: BinaryIO, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = inp.read(n)
        if not chunk:
            raise FrameError("stream ended inside a frame")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(inp: BinaryIO, max_len: int) -> tuple[bytes, bytes] | None:
    """Next (kind, payload), or None at a clean end of stream."""
    head = inp.read(FRAME_HEADER.size)
    if not head:
        return None
    if len(head) < FRAME_HEADER.size:
        head += read_exact(inp, FRAME_HEADER.size - len(head))
    kind, length = FRAME_HEADER.unpack(head)
    if kind not in (JSON_KIND, BLOB_KIND):
        raise FrameError(f"unknown frame kind {kind!r}")
    if length > max_len:
        raise FrameError(f"frame of {length} bytes exceeds the cap of {max_len}")
    return kind, read_exact(inp, length)


def parse_json(payload: bytes) -> dict[str, Any]:
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise FrameError("JSON frame is not an object")
    return obj


# --------------------------------------------------------------------------- supervisor


class _Input:
    """One array argument of one case, laid in memory shared with the worker."""

    def __init__(self, name: str, array: Any, np: Any) -> None:
        self.name = name
        self.dtype = array.dtype
        self.shape = tuple(array.shape)
        self.region = mmap.mmap(-1, max(int(array.nbytes), 1))
        view = np.ndarray(self.shape, dtype=self.dtype, buffer=self.region)
        view[...] = array
        self.digest = hashlib.blake2b(self.region).digest()

    def mutated(self) -> bool:
        return hashlib.blake2b(self.region).digest() != self.digest


# The header np.save writes for a plain array (format 1.0). Matched, it is read without
# ast.literal_eval (np.load's cost for a small array); anything else goes through np.load.
_NPY_HEADER = re.compile(
    rb"\{'descr': '([<>|][a-z]\d{1,2})', 'fortran_order': (False|True), "
    rb"'shape': \(((?:\d+, ?)*\d*)\), \} *\n"
)


def _load_npy(blob: bytes, np: Any) -> Any:
    """A job's input array from .npy bytes; never unpickled."""
    if blob[:8] == b"\x93NUMPY\x01\x00" and len(blob) >= 10:
        header_len = int.from_bytes(blob[8:10], "little")
        match = _NPY_HEADER.fullmatch(blob[10 : 10 + header_len])
        if match is not None:
            dtype = np.dtype(match[1].decode())
            shape = tuple(int(d) for d in match[3].split(b",") if d.strip())
            if dtype.kind in NUMERIC_KINDS and not dtype.hasobject:
                order = "F" if match[2] == b"True" else "C"
                flat = np.frombuffer(
                    blob, dtype=dtype, count=_product(shape), offset=10 + header_len
                )
                return flat.reshape(shape, order=order)
    return np.load(io.BytesIO(blob), allow_pickle=False)


class Supervisor:
    def __init__(self, job: dict[str, Any], blobs: list[bytes]) -> None:
        import numpy as np  # imported before the fork so the worker starts warm

        self.np = np
        self.job = job
        limits = job["limits"]
        self.output_cap = int(limits["output_bytes"])
        self.output_kill = int(limits["output_kill_bytes"])
        self.result_cap = int(limits["result_bytes"])
        arrays = [_load_npy(b, np) for b in blobs]
        self.cases: list[tuple[str, list[_Input | int]]] = []
        for case in job["cases"]:
            args: list[_Input | int] = []
            for pname in job["param_names"]:
                spec = case["args"][pname]
                if "array" in spec:
                    args.append(_Input(pname, arrays[int(spec["array"])], np))
                else:
                    args.append(int(spec["int"]))
            self.cases.append((str(case["name"]), args))
        self.sync = [bool(case.get("sync", True)) for case in job["cases"]]
        # closefd=False: the forked worker inherits this object but must never close or reuse it.
        self.out = os.fdopen(os.dup(1), "wb", buffering=1 << 16, closefd=False)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 1)  # nothing printed by accident can reach the result stream
        os.dup2(devnull, 0)
        os.close(devnull)
        self.captured = {"stdout": bytearray(), "stderr": bytearray()}
        self.written = {"stdout": 0, "stderr": 0}
        # (case index or None for import time, {stream: kept bytes}), in order.
        self.phases: list[tuple[int | None, dict[str, bytearray]]] = [
            (None, {"stdout": bytearray(), "stderr": bytearray()})
        ]
        self.capture_fds: dict[int, str] = {}
        self.ack_fd = -1
        self.result_total = 0
        self.output_killed = False
        self.result_overflow = False
        self.completed = False
        self.buffer = bytearray()

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
        pending = getattr(self, "_pending", None)
        if kind == BLOB_KIND:
            if pending is None:
                return
            self._pending = None
            self.emit_case(pending, payload, pid)
            return
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
                self._pending = msg
            else:
                self.emit_case(msg, None, pid)
        elif mtype == "load_failed":
            kind_s = msg.get("kind")
            write_json(
                self.out,
                {
                    "type": "load_failed",
                    "kind": kind_s if kind_s in ("compile", "runtime", "memory") else "runtime",
                    "error": _clean_error(msg.get("error")),
                },
            )
        elif mtype == "done":
            self.completed = True

    def start_phase(
        self, index: Any, pid: int, open_fds: dict[int, str], poller: select.poll
    ) -> None:
        """Everything printed so far belongs to the phase that ends here; then let the worker
        hand the next case its inputs."""
        if not isinstance(index, int) or not 0 <= index < len(self.cases):
            return
        for fd in list(self.capture_fds):
            # Bounded: a flood ends with the output kill, which closes the pipe.
            while fd in open_fds and not self.output_killed:
                if not self.drain(fd, open_fds, poller, pid):
                    break
        if index > (self.phases[-1][0] if self.phases[-1][0] is not None else -1):
            self.phases.append((index, {"stdout": bytearray(), "stderr": bytearray()}))
        if self.sync[index]:
            with contextlib.suppress(OSError):
                os.write(self.ack_fd, b"+")

    def emit_case(self, msg: dict[str, Any], data: bytes | None, pid: int) -> None:
        try:
            index = int(msg["index"])
            name, args = self.cases[index]
        except (KeyError, ValueError, TypeError, IndexError):
            return
        error = _clean_error(msg.get("error")) if msg.get("error") is not None else None
        npy: bytes | None = None
        if data is not None:
            try:
                npy = self.encode_output(msg["output"], data)
            except (ValueError, TypeError, KeyError) as exc:
                error = {
                    "type": "InvalidOutput",
                    "message": str(exc)[:MAX_MESSAGE],
                    "traceback": "",
                }
            if npy is not None:
                self.result_total += len(data)
                if self.result_total > self.result_cap:
                    self.overflow(pid)
                    return
        reported = msg.get("mutated_inputs")
        mutated = {a.name for a in args if isinstance(a, _Input) and a.mutated()}
        if isinstance(reported, list):
            pnames = set(self.job["param_names"])
            mutated |= {n for n in reported if isinstance(n, str) and n in pnames}
        seconds = msg.get("seconds")
        header = {
            "type": "case",
            "index": index,
            "name": name,
            "error": error,
            "mutated_inputs": [p for p in self.job["param_names"] if p in mutated],
            "seconds": float(seconds) if isinstance(seconds, (int, float)) else 0.0,
            "output": npy is not None,
        }
        write_json(self.out, header)
        if npy is not None:
            write_frame(self.out, BLOB_KIND, npy)

    def encode_output(self, meta: Any, data: bytes) -> bytes:
        np = self.np
        dtype = np.dtype(str(meta["dtype"]))
        if dtype.kind not in NUMERIC_KINDS or dtype.hasobject or dtype.fields is not None:
            raise ValueError(f"dtype {dtype} is not numeric")
        shape = tuple(int(d) for d in meta["shape"])
        if any(d < 0 for d in shape):
            raise ValueError("negative dimension")
        array = np.frombuffer(data, dtype=dtype)
        if array.size != _product(shape):
            raise ValueError("output bytes do not match its shape")
        buf = io.BytesIO()
        np.lib.format.write_array(buf, array.reshape(shape), allow_pickle=False)
        return buf.getvalue()

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


# --------------------------------------------------------------------------- worker


class _Worker:
    """Runs in the forked child. Everything it needs is bound before the submission is imported,
    so a submission that monkeypatches numpy or builtins cannot change how results are checked."""

    def __init__(self, sup: Supervisor, res_w: int, out_w: int, err_w: int, ack_r: int) -> None:
        self.np = sup.np
        self.ndarray = sup.np.ndarray
        self.cases = sup.cases
        self.sync = list(sup.sync)
        self.job = sup.job
        self.result_cap = sup.result_cap
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        # Only 0-2, the result pipe and the acknowledgement pipe stay open: never the
        # supervisor's result stream.
        keep = sorted((res_w, ack_r))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, os.sysconf("SC_OPEN_MAX"))
        self.res = os.fdopen(res_w, "wb", buffering=0)
        self.ack_r = ack_r
        self.read = os.read
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
        self.streams = (sys.stdout, sys.stderr)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-large file is an OSError
        self.send_json: Callable[[dict[str, Any]], None] = lambda obj: write_json(self.res, obj)
        self.send_blob: Callable[[bytes], None] = lambda b: write_frame(self.res, BLOB_KIND, b)
        self.clock = time.perf_counter
        self.getpid = os.getpid
        self.pid = os.getpid()
        self.shape_of = type(self.np.empty(0)).shape.__get__

    def run(self) -> None:
        fn = self.load()
        if fn is not None:
            for index, (name, args) in enumerate(self.cases):
                self.start_case(index)
                self.run_case(fn, index, name, args)
            self.send_json({"type": "done"})
        for stream in (*self.streams, sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the submission may have replaced or closed it
                stream.flush()
        os._exit(0)  # also ends threads the submission left running

    def load(self) -> Callable[..., Any] | None:
        import types

        module = types.ModuleType("submission")
        module.__file__ = SUBMISSION_FILENAME
        sys.modules["submission"] = module
        import linecache

        source = self.job["code"]
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
        fname = self.job["function_name"]
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
        """Attribute what was printed so far to the previous phase before this case's inputs
        exist in the submission's reach (see the module docstring)."""
        for stream in (*self.streams, sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # the submission may have replaced or closed it
                stream.flush()
        self.send_json({"type": "case_start", "index": index})
        if not self.sync[index]:
            return
        try:
            acknowledged = self.read(self.ack_r, 1) == b"+"
        except OSError:
            acknowledged = False
        if not acknowledged:  # the submission tampered with the pipe: stop rather than leak
            os._exit(71)

    def forked_copy_exits(self) -> None:
        """A child the submission forked returns here too: only the worker itself reports."""
        if self.getpid() != self.pid:
            os._exit(0)

    def load_failed(self, kind: str, exc: BaseException) -> None:
        self.send_json({"type": "load_failed", "kind": kind, "error": _describe(exc)})

    def run_case(
        self, fn: Callable[..., Any], index: int, name: str, args: list[_Input | int]
    ) -> None:
        values: list[Any] = []
        shapes: dict[str, tuple[int, ...]] = {}
        for arg in args:
            if isinstance(arg, _Input):
                array = self.ndarray(arg.shape, dtype=arg.dtype, buffer=arg.region)
                shapes[arg.name] = arg.shape
                values.append(array)
            else:
                values.append(arg)
        error: dict[str, str] | None = None
        result: Any = None
        start = self.clock()
        try:
            result = fn(*values)
        except BaseException as exc:
            error = _describe(exc)
        seconds = self.clock() - start
        self.forked_copy_exits()
        mutated = [
            n
            for n, v in zip(self.job["param_names"], values, strict=True)
            if n in shapes and tuple(self.shape_of(v)) != shapes[n]
        ]
        header: dict[str, Any] = {
            "type": "case",
            "index": index,
            "error": error,
            "mutated_inputs": mutated,
            "seconds": seconds,
            "output": None,
        }
        data = None
        if error is None:
            try:
                meta, data = self.convert(result)
                header["output"] = meta
            except _BadOutput as exc:
                header["error"] = {"type": "InvalidOutput", "message": str(exc), "traceback": ""}
        self.send_json(header)
        if data is not None:
            self.send_blob(data)

    def convert(self, result: Any) -> tuple[dict[str, Any], bytes]:
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
        if nbytes > self.result_cap:
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


def read_job(inp: BinaryIO) -> tuple[dict[str, Any], list[bytes]]:
    first = read_frame(inp, MAX_JSON_FRAME)
    if first is None or first[0] != JSON_KIND:
        raise FrameError("the job must start with a JSON frame")
    job = parse_json(first[1])
    blobs: list[bytes] = []
    while True:
        frame = read_frame(inp, 1 << 34)
        if frame is None:
            break
        if frame[0] != BLOB_KIND:
            raise FrameError("expected a blob frame")
        blobs.append(frame[1])
    return job, blobs


def main(argv: list[str]) -> int:
    for i, arg in enumerate(argv):
        if arg == "--sys-path" and i + 1 < len(argv):
            sys.path.insert(0, argv[i + 1])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")  # one BLAS thread: memory limits stay meaningful
    _preload()
    job, blobs = read_job(sys.stdin.buffer)
    Supervisor(job, blobs).run()
    # The end message is written and flushed: skip the interpreter's teardown (tens of ms with
    # numpy loaded), which would only delay the host seeing the stream close.
    os._exit(0)


def _preload() -> None:
    """Import what a job needs before the job arrives: a pooled runner waits warm."""
    import ctypes  # noqa: F401  (used by _set_not_dumpable)
    import linecache  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401

    import numpy
    import numpy.lib.format  # noqa: F401


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
