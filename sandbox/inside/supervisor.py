"""The runner's supervisor: reads the job, forks the worker, hands it one case at a time and
writes the only result stream. Everything the worker sends is untrusted (the submission shares
its process): the supervisor re-validates every frame and output, checks the inputs for
mutation against its own copy and keeps time on its own clock.

One case at a time: before each case the worker flushes and sends ``case_start`` on its result
pipe, then waits for the supervisor's one-byte acknowledgement. The supervisor first drains the
capture pipes into the phase that is ending, then switches phase, wipes the shared region of the
previous case and lays exactly this case's arguments there (see ``framing``), and only then
acknowledges. So whatever the submission prints once it holds a case's inputs is attributed to
that case or a later one, never to an earlier (e.g. public) one, and at any call the worker's
process holds the current case's inputs and no other case's. The supervisor accepts a case's
result only while that case is the current phase, so a result forged later cannot replace an
earlier case's.

Where the inputs live: the supervisor reads the header, creates the (empty) shared region, then
forks the worker; only then does it read the public cases' sections, into its own memory, which
the worker cannot reach (the supervisor is not dumpable, and the worker holds neither its stdin
nor its result stream). The header is read with exact reads on the raw file descriptor, never
through a read-ahead buffer, so no case's bytes are in the process when it forks. The hidden
cases' sections are read only once the first hidden case's phase begins, each while the case
before it runs (a case's copy is dropped when the next begins): until then what the worker
prints is shown to the student, and it may read how much memory and CPU time the supervisor has
used (``/proc/1/status``, ``stat``; not on the fork server, whose procfs hides the supervisor),
which would tell how large the hidden cases are. The region's size is the host's limit, not
the largest case's, for the same reason.

The worker's stdout and stderr are pipes the supervisor drains (capped, split into phases); the
worker never holds the result stream's fd. What is printed at import time and during public
cases is also written to the result stream as it comes (``output`` frames, at most every
``PROGRESS_SECONDS``), so a run killed from outside (a time limit) still shows it; a hidden
case's phase never produces one.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import mmap
import os
import select
import signal
import struct
import time
from typing import Any

from . import frameworks
from .errors import MAX_MESSAGE, clean_error, error_category
from .framing import (
    BLOB_KIND,
    CASE_INDEX,
    DIMENSION,
    FRAME_HEADER,
    JSON_KIND,
    MAX_DIMENSIONS,
    MAX_JSON_FRAME,
    NUMERIC_KINDS,
    RESULT_HEAD,
    RESULT_KIND,
    RESULT_PART,
    START_KIND,
    FrameError,
    inputs_base,
    npy_header,
    parse_json,
    product,
    write_json,
)
from .job import Arg, Case, JobReader, Slot, parse_args
from .worker import Worker

# Longest a public phase's printed text waits before it is written to the result stream.
PROGRESS_SECONDS = 0.2
CASE_FRAME = '{"type":"case","index":%d,"error":%s,"mutated_inputs":%s,"seconds":%s,"output":%s%s}'
STREAMS = ("stdout", "stderr")
# How much a read of the cases may bring beyond what it asks for (``JobReader.read_ahead``).
READ_AHEAD = 1 << 16


class Supervisor:
    def __init__(self, header: dict[str, Any], reader: JobReader) -> None:
        import numpy as np  # imported before the fork so the worker starts warm

        self.np = np
        self.reader = reader
        self.job = header
        # A torch job's tensors (``frameworks``): torch too is imported before the fork.
        self.torch = frameworks.import_torch() if header.get("framework") == "torch" else None
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
        self.cases: list[Case] = []  # read after the fork (``read_cases``)
        # Cases often share their arguments' layout (shapes, offsets): parsed and checked once.
        # A layout is checked against its inputs' size, so that is part of the key.
        self.layouts: dict[tuple[bytes, int], list[Arg]] = {}
        self.laid = 0  # how many bytes of the region the current case's arguments use
        self.case_started = 0.0  # time.monotonic() when the current case got its inputs
        # closefd=False: the forked worker inherits this object but must never close or reuse it.
        # The forked worker inherits this object too, but never writes or flushes it.
        self.out = ResultStream(os.dup(1))
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
        # Text of the current (public) phase not yet sent in an ``output`` frame; decoded
        # incrementally so a character split between two reads is not mangled.
        self.unsent = {name: bytearray() for name in STREAMS}
        # Made when a public phase first prints: most runs print nothing.
        self.decoders: dict[str, codecs.IncrementalDecoder] = {}
        self.progress_at = 0.0
        # Whether this phase's decoders saw any text (else its end has nothing to send).
        self.decoding = False
        self.reported: set[int] = set()
        self.capture_fds: dict[int, str] = {}
        self.capture_poll = select.poll()  # the capture pipes alone (``start_phase``)
        self.ack_fd = -1
        self.result_total = 0
        self.output_killed = False
        self.result_overflow = False
        self.completed = False
        self.buffer = bytearray()
        self.pending: dict[str, Any] | None = None
        self.dtypes: dict[str, str] = {}
        self.npy_heads: dict[tuple[str, tuple[int, ...]], tuple[bytes, int]] = {}

    def run(self) -> None:
        set_not_dumpable()
        # Flushed before the fork: from here on a missing result is the submission's doing.
        write_json(self.out, {"type": "started"})
        self.out.flush()
        res_r, res_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ack_r, ack_w = os.pipe()
        # The worker shares our uid: a SIGINT it sent would raise KeyboardInterrupt here (pid 1
        # of a pid namespace is spared only the signals it has no handler for). Ignored before
        # the fork, so no moment is left open; the worker gets Python's own handler back.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                os.close(res_r)
                os.close(out_r)
                os.close(err_r)
                os.close(ack_w)
                Worker(self, res_w, out_w, err_w, ack_r).run()
            finally:
                os._exit(70)
        for fd in (res_w, out_w, err_w, ack_r):
            os.close(fd)
        try:
            self.read_cases(min(self.public, self.total))
        except BaseException:
            kill(pid)
            raise
        # Non-blocking: a phase change drains them to empty without waiting for more.
        os.set_blocking(out_r, False)
        os.set_blocking(err_r, False)
        self.capture_fds = {out_r: "stdout", err_r: "stderr"}
        for fd in self.capture_fds:
            self.capture_poll.register(fd, select.POLLIN)
        # Non-blocking too: a worker that never reads its acknowledgements cannot stall us.
        os.set_blocking(ack_w, False)
        self.ack_fd = ack_w
        self.pump(pid, {res_r: "result", out_r: "stdout", err_r: "stderr"})
        os.close(ack_w)
        if self.completed:
            # Every case is reported: what the worker does from here on is graded by nobody.
            # Ended, not waited for: tearing down its address space (~1-2 ms) would delay the
            # end of the stream; its namespace's end (or its own exit) reaps it.
            kill(pid)
            self.finish(None, 0.0)
            return
        _, status, usage = os.wait4(pid, 0)
        self.finish(status, usage.ru_utime + usage.ru_stime)

    def read_cases(self, upto: int) -> None:
        """The sections of the cases before ``upto`` not read yet, into the supervisor's own
        memory (the worker exists already); the job's input is closed after the last one."""
        size = len(self.region)
        if upto > self.public and self.reader.spare is None:
            # Only now: a read-ahead would bring hidden bytes while they must not count yet.
            self.reader.read_ahead(READ_AHEAD)
        known = self.layouts
        for _ in range(len(self.cases), upto):
            spec, inputs = self.reader.case()
            base = inputs_base(len(spec))
            if base + len(inputs) > size:
                raise FrameError("a case does not fit the shared region")
            args = known.get((spec, len(inputs)))
            if args is None:
                args = parse_args(parse_json(spec), self.param_names, base, len(inputs), self.np)
                if len(known) < 256:
                    known[spec, len(inputs)] = args
            self.cases.append(Case(spec, inputs, args))
        if len(self.cases) == self.total and self.reader.fd is not None:
            os.close(self.reader.fd)
            self.reader.fd = None

    def lay(self, index: int) -> None:
        """Wipe the previous case's arguments from the shared region and lay this case's: this
        case's bytes (its head padded with zeros, then its inputs) overwrite the start of the
        region, and whatever of the previous case lay beyond them is zeroed."""
        region, case = self.region, self.cases[index]
        base, end = case.base, case.base + len(case.inputs)
        region[:base] = case.head
        region[base:end] = case.inputs
        if self.laid > end:
            region[end : self.laid] = bytes(self.laid - end)
        self.laid = end

    def pump(self, pid: int, fds: dict[int, str]) -> None:
        # The worker's exit is learnt from SIGCHLD, not from a pidfd: runs may not open pidfds
        # (their inode numbers come from a host-wide counter every pid advances). Its pipes may
        # stay open in stray children, so their end-of-file does not say it is gone.
        wake_r, wake_w = os.pipe()
        for fd in (wake_r, wake_w):
            os.set_blocking(fd, False)
        previous = signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        try:
            self.pump_until_exit(pid, fds, wake_r)
        finally:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, previous)
            os.close(wake_r)
            os.close(wake_w)

    def pump_until_exit(self, pid: int, fds: dict[int, str], wake_r: int) -> None:
        poller = select.poll()
        for fd in (*fds, wake_r):
            poller.register(fd, select.POLLIN)
        open_fds = dict(fds)
        # Checked once after the handler is in place: the worker may have exited before it was.
        worker_gone = exited(pid)
        while open_fds and not worker_gone and not self.completed:
            waiting = any(self.unsent.values())
            for fd, _ in poller.poll(PROGRESS_SECONDS * 1000 if waiting else None):
                if fd == wake_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake_r, 4096)
                    worker_gone = exited(pid)
                elif fd in open_fds and not self.drain(fd, open_fds, poller, pid):
                    continue
            # Only a public phase's unsent text has a deadline (no clock read at every call).
            public_text = waiting or self.decoding
            if public_text and time.monotonic() - self.progress_at >= PROGRESS_SECONDS:
                self.send_progress(final=False)
        # The worker has exited or reported every case (and flushed its streams before): take
        # what its pipes hold now, not what stray children (or its own threads) may add.
        for fd in list(open_fds):
            os.set_blocking(fd, False)
            try:
                for _ in range(64):
                    if not self.drain(fd, open_fds, poller, pid):
                        break
            except BlockingIOError:
                pass

    def drain(self, fd: int, open_fds: dict[int, str], poller: select.poll, pid: int) -> bool:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        stream = open_fds[fd]
        if not data:
            poller.unregister(fd)
            del open_fds[fd]
            self.stop_capture(fd)
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
                if self.current < self.public:
                    self.unsent[stream] += piece
                    self.decoding = True
            self.written[stream] += len(data)
            if self.written[stream] > self.output_kill and not self.output_killed:
                self.output_killed = True
                kill(pid)
        return True

    def on_result_bytes(
        self, data: bytes, pid: int, open_fds: dict[int, str], poller: select.poll
    ) -> None:
        if self.result_overflow:
            return
        buffer = self.buffer
        buffer += data
        pos, size, limit = 0, len(buffer), self.result_cap + MAX_JSON_FRAME
        try:
            while size - pos >= FRAME_HEADER.size:
                kind, length = FRAME_HEADER.unpack_from(buffer, pos)
                if length > limit:
                    self.overflow(pid)
                    return
                start = pos + FRAME_HEADER.size
                if size - start < length:
                    break
                pos = start + length
                if kind == START_KIND:
                    self.pending = None
                    if length == CASE_INDEX.size:
                        (index,) = CASE_INDEX.unpack_from(buffer, start)
                        self.start_phase(index, pid, open_fds, poller)
                elif kind == RESULT_KIND:
                    self.pending = None
                    self.on_result(bytes(buffer[start:pos]), pid)
                else:
                    self.on_worker_frame(kind, bytes(buffer[start:pos]), pid, open_fds, poller)
                if self.result_overflow:
                    return
        finally:
            if not self.result_overflow:
                del buffer[:pos]

    def overflow(self, pid: int) -> None:
        self.result_overflow = True
        self.buffer.clear()
        kill(pid)

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
                    "error": clean_error(msg.get("error")),
                },
            )
        elif mtype == "done" and self.current == self.total - 1:
            # Only once the last case is reported: the worker is ended at ``done``.
            self.completed = self.total == 0 or self.current in self.reported

    def stop_capture(self, fd: int) -> None:
        """A capture pipe at its end (closed by ``drain``): no more polls of it."""
        if self.capture_fds.pop(fd, None) is not None:
            self.capture_poll.unregister(fd)

    def start_phase(
        self, index: Any, pid: int, open_fds: dict[int, str], poller: select.poll
    ) -> None:
        """Everything printed so far belongs to the phase that ends here; then lay the next
        case's inputs (and only those) and let the worker call it."""
        if type(index) is not int or index != self.current + 1 or index >= self.total:
            return
        # One poll says whether either capture pipe holds anything (most calls print nothing),
        # rather than a read of each. Bounded: a flood ends with the output kill.
        capture = self.capture_poll
        while not self.output_killed:
            ready = capture.poll(0)
            if not ready:
                break
            took = False
            for fd, _ in ready:
                if fd in open_fds:
                    took = self.drain(fd, open_fds, poller, pid) or took
                else:
                    self.stop_capture(fd)
            if not took:
                break
        if self.decoding:
            self.send_progress(final=True)
        if index == len(self.cases):  # the first hidden case: nothing is shown from now on
            self.read_hidden(index + 1, pid)
        if index:
            # No result of the previous case is taken from here on (``accepts``): its copy goes,
            # so the supervisor holds at most two cases (this one and the next, read ahead).
            self.cases[index - 1].inputs = bytearray()
        self.phases.append((index, {"stdout": bytearray(), "stderr": bytearray()}))
        self.current = index
        self.lay(index)
        self.case_started = time.monotonic()
        with contextlib.suppress(OSError):
            os.write(self.ack_fd, b"+")
        if index >= self.public and len(self.cases) < self.total:
            # The next hidden case is read while this one runs, not in the way of its start.
            self.read_hidden(index + 2, pid)

    def read_hidden(self, upto: int, pid: int) -> None:
        """``read_cases`` once the hidden phase has begun; a malformed job ends the worker."""
        try:
            self.read_cases(upto)
        except BaseException:
            kill(pid)
            raise

    def send_progress(self, final: bool) -> None:
        """The current phase's new text as an ``output`` frame, if it is a public phase (only
        public text is ever collected in ``unsent``); ``final`` at the phase's end."""
        if not self.decoders:
            self.decoders = {name: UTF8_DECODER("replace") for name in STREAMS}
        texts = {
            name: self.decoders[name].decode(bytes(self.unsent[name]), final=final)
            for name in STREAMS
        }
        for name in STREAMS:
            self.unsent[name].clear()
            if final:
                self.decoders[name].reset()
        if final:
            self.decoding = False
        self.progress_at = time.monotonic()
        if any(texts.values()):
            case = None if self.current == -1 else self.current
            write_json(self.out, {"type": "output", "case": case, **texts})
            self.out.flush()

    def accepts(self, index: Any) -> bool:
        """Only the case whose phase it is, once: a frame forged after hidden inputs were laid
        cannot stand in for an earlier (public) case's result."""
        if type(index) is not int or index != self.current or index in self.reported:
            return False
        self.reported.add(index)
        return True

    def emit_case(self, msg: dict[str, Any], data: bytes | None, pid: int) -> None:
        index = msg.get("index")
        if not self.accepts(index):
            return
        seconds = time.monotonic() - self.case_started
        error = clean_error(msg.get("error")) if msg.get("error") is not None else None
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
        reported = msg.get("mutated_inputs")
        said = reported if isinstance(reported, list) else []
        self.report(self.current, seconds, error, said, blobs, pid)

    def on_result(self, payload: bytes, pid: int) -> None:
        """A call's result in its binary form (``framing``: ``R``), checked as strictly as the
        JSON one: the dtypes, the shapes and that the bytes are exactly the arrays'."""
        if len(payload) < RESULT_HEAD.size:
            return
        index, parts = RESULT_HEAD.unpack_from(payload)
        if not self.accepts(index):
            return
        seconds = time.monotonic() - self.case_started
        error: dict[str, Any] | None = None
        blobs: list[tuple[bytes, bytes]] | None = None
        try:
            if (parts == 0) != (self.outputs is None) or (parts and parts != self.outputs):
                raise ValueError("wrong number of outputs")
            pos = RESULT_HEAD.size
            shapes = []
            for _ in range(parts or 1):
                code, ndim = RESULT_PART.unpack_from(payload, pos)
                pos += RESULT_PART.size
                if ndim > MAX_DIMENSIONS:
                    raise ValueError("bad output shape")
                shape = struct.unpack_from(f">{ndim}Q", payload, pos)
                pos += ndim * DIMENSION.size
                shapes.append((code.rstrip(b"\0").decode("ascii"), shape))
            blobs = []
            for descr, shape in shapes:
                head, size = self.npy_head(descr, shape)
                if pos + size > len(payload):
                    raise ValueError("output bytes do not match their shapes")
                blobs.append((head, payload[pos : pos + size]))
                pos += size
            if pos != len(payload):
                raise ValueError("output bytes do not match their shapes")
        except (ValueError, TypeError, struct.error, UnicodeDecodeError) as exc:
            blobs = None
            error = {"type": "InvalidOutput", "message": str(exc)[:MAX_MESSAGE], "traceback": ""}
        self.report(index, seconds, error, [], blobs, pid)

    def report(
        self,
        index: int,
        seconds: float,
        error: dict[str, Any] | None,
        reported: list[Any],
        blobs: list[tuple[bytes, bytes]] | None,
        pid: int,
    ) -> None:
        """Write one accepted case's frame: what the supervisor saw, and for a public case
        what the worker said."""
        if blobs is not None:
            self.result_total += sum(len(body) for _, body in blobs)
            if self.result_total > self.result_cap:
                self.overflow(pid)
                return
        mutated = self.mutated(self.cases[index])
        if index >= self.public:
            # A hidden case: only categories and what the supervisor saw itself leave the
            # sandbox; the worker's words (exception names, messages, tracebacks, the arguments
            # it says it reshaped) are the submission's to choose and could spell out inputs.
            error = error_category(error)
        else:
            mutated |= {n for n in reported if isinstance(n, str) and n in self.param_names}
        names = [p for p in self.param_names if p in mutated] if mutated else []
        # The frame ``write_json`` would write, formatted directly: it is written at every call.
        parts = f',"parts":{len(blobs)}' if blobs is not None and self.outputs is not None else ""
        frame = CASE_FRAME % (
            index,
            "null" if error is None else json.dumps(error, separators=(",", ":")),
            json.dumps(names, separators=(",", ":")) if names else "[]",
            repr(seconds),
            "true" if blobs is not None else "false",
            parts,
        )
        payload = frame.encode()
        out = self.out
        out.write(FRAME_HEADER.pack(JSON_KIND, len(payload)) + payload)
        for npy_head, body in blobs or ():
            out.write(FRAME_HEADER.pack(BLOB_KIND, len(npy_head) + len(body)) + npy_head)
            out.write(body)

    def npy_head(self, descr: str, shape: tuple[int, ...]) -> tuple[bytes, int]:
        """The .npy header of an output and its size in bytes, for a dtype string the worker
        sent (checked once to be numeric); remembered, as a run's outputs share a few shapes."""
        key = (descr, shape)
        known = self.npy_heads.get(key)
        if known is not None:
            return known
        dtype_str = self.dtypes.get(descr)
        if dtype_str is None:
            dtype = self.numeric_dtype(descr)
            if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.shape != ():
                raise ValueError(f"dtype {dtype} is not numeric")
            dtype_str = self.dtypes[descr] = dtype.str
        check_extent(shape, int(dtype_str[2:]))
        known = (npy_header(dtype_str, shape), product(shape) * int(dtype_str[2:]))
        if len(self.npy_heads) < 256:
            self.npy_heads[key] = known
        return known

    def numeric_dtype(self, descr: str) -> Any:
        """np.dtype of a dtype string the worker sent. numpy parses some strings (",", "01")
        as Python literals and raises SyntaxError on them: every failure is a ValueError here,
        the case's invalid output, never an exception that would end the supervisor."""
        try:
            return self.np.dtype(descr)
        except Exception:
            raise ValueError(f"dtype {descr[:16]!r} is not understood") from None

    def mutated(self, case: Case) -> set[str]:
        """The arguments whose bytes in the shared region differ from the supervisor's copy."""
        live, pristine, base = self.region, case.inputs, case.base
        # One comparison over the case's bytes, then per argument only when something changed.
        if same(live, base, pristine, 0, len(pristine)):
            return set()
        slots = [a for a in case.args if isinstance(a, Slot)]
        return {
            s.name for s in slots if not same(live, s.start, pristine, s.start - base, s.end - base)
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
            dtype = self.numeric_dtype(str(meta["dtype"]))
            if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.shape != ():
                raise ValueError(f"dtype {dtype} is not numeric")
            descr = self.dtypes[str(meta["dtype"])] = dtype.str
        itemsize = int(descr[2:])
        shape = tuple(int(d) for d in meta["shape"])
        if any(d < 0 for d in shape) or len(shape) > 64:
            raise ValueError("bad output shape")
        check_extent(shape, itemsize)
        if len(data) != product(shape) * itemsize:
            raise ValueError("output bytes do not match its shape")
        return npy_header(descr, shape)

    def finish(self, status: int | None, cpu: float) -> None:
        """The end message; ``status`` None: the worker reported every case and was ended."""
        exit_code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
        sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
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


# numpy's bound on an array's bytes, counted over its non-zero dimensions (an empty array too).
MAX_ARRAY_BYTES = (1 << 63) - 1


def check_extent(shape: tuple[int, ...], itemsize: int) -> None:
    """Refuse a shape no numpy array can have: zero bytes of an empty one pass the size check,
    but the host could not read it back and would count the whole run's stream invalid."""
    extent = itemsize
    for d in shape:
        extent *= max(d, 1)
    if extent > MAX_ARRAY_BYTES:
        raise ValueError("bad output shape")


# The most of a case's bytes ``same`` copies at a time.
COMPARE_CHUNK = 1 << 20


def same(live: mmap.mmap, start: int, pristine: bytearray, lo: int, hi: int) -> bool:
    """Whether ``live[start:]`` holds ``pristine[lo:hi]``, compared a chunk at a time: a case may
    be tens of MiB, and slicing it whole would copy it (the supervisor's memory is limited)."""
    for pos in range(lo, hi, COMPARE_CHUNK):
        end = min(pos + COMPARE_CHUNK, hi)
        if live[start + pos - lo : start + end - lo] != pristine[pos:end]:
            return False
    return True


def exited(pid: int) -> bool:
    """Whether the worker has exited, leaving it to be reaped (its resource usage is read then)."""
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    return os.waitid(os.P_PID, pid, flags) is not None


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


class ResultStream:
    """The result stream, buffered: frames are kept (not copied) until ``flush`` writes them
    with as few system calls as the pipe takes (an ``io.BufferedWriter`` costs more to set up
    in a freshly forked process than a whole small job's frames cost to write)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.parts: list[bytes] = []
        self.size = 0

    def write(self, data: bytes, /) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.size >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        parts, self.parts, self.size = self.parts, [], 0
        while parts:
            done = os.writev(self.fd, parts[:1024])
            while parts and done >= len(parts[0]):
                done -= len(parts.pop(0))
            if done:
                parts[0] = parts[0][done:]


UTF8_DECODER = codecs.getincrementaldecoder("utf-8")
# libc's prctl and mallopt, looked up ahead of any job (``bind_libc``, from ``runner.preload``):
# a freshly forked supervisor would spend most of a millisecond on the lookups.
LIBC: dict[str, Any] = {}


def bind_libc() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        LIBC.update(prctl=libc.prctl, mallopt=libc.mallopt)
    except (OSError, AttributeError, ImportError):
        pass


def set_not_dumpable() -> None:
    """Keep /proc/<supervisor>/fd and /mem out of the worker's reach (same uid, same pid ns), and
    make every thread share one malloc arena: glibc reserves 64 MiB of address space per thread
    arena, which would turn a few threads into a MemoryError under RLIMIT_AS."""
    if not LIBC:
        bind_libc()
    try:
        LIBC["prctl"](4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        LIBC["mallopt"](-8, 1)  # M_ARENA_MAX = -8
    except (KeyError, OSError):
        pass
