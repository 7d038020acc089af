"""The runner's worker: the forked child that imports the submission and calls its entry point
once per case, on fresh arrays viewing the shared inputs, and sends what each call returned or
raised to the supervisor. The submission runs in this process and may change anything in it:
nothing the worker sends is trusted by the supervisor."""

from __future__ import annotations

import io
import json
import os
import signal
import struct
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import frameworks, nochannels
from .errors import SUBMISSION_FILENAME, describe, type_name
from .fds import FALLBACK_BOUND
from .framing import (
    BLOB_KIND,
    CASE_INDEX,
    CASE_LENGTH,
    FRAME_HEADER,
    JSON_KIND,
    NUMERIC_KINDS,
    RESULT_HEAD,
    RESULT_KIND,
    RESULT_PART,
    START_KIND,
    inputs_base,
    product,
)

if TYPE_CHECKING:
    from .supervisor import Supervisor


class Worker:
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
        close_all_from_3_but(res_w, ack_r)
        self.res = res_w
        self.outbox: list[bytes] = []
        self.ack_r = ack_r
        self.read = os.read
        if not TEXT_STREAMS:
            prepare_streams()
        sys.stdout, sys.stderr = TEXT_STREAMS
        self.streams = (sys.stdout, sys.stderr)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-large file is an OSError
        self.dumps = json.dumps
        self.loads = json.loads
        self.write_all = write_all
        self.pack = FRAME_HEADER.pack
        self.pack_index = CASE_INDEX.pack
        self.pack_head = RESULT_HEAD.pack
        self.pack_part = RESULT_PART.pack
        self.pack_dims = PACK_DIMS
        self.struct_pack = struct.pack
        self.dtype_of: dict[str, Any] = {}
        self.layouts: dict[bytes, list[tuple[str, Any, Any, Any, int]]] = {}
        self.unpack_length = CASE_LENGTH.unpack_from
        self.inputs_base = inputs_base
        self.getpid = os.getpid
        self.exit = os._exit
        self.pid = os.getpid()
        self.shape_of = self.ndarray.shape.__get__
        # torch jobs: tensors in, arrays out (``frameworks``); bound before the submission loads.
        self.bridge = frameworks.TorchBridge(sup.torch) if sup.torch is not None else None
        self.forbidden = [str(n) for n in sup.job.get("forbidden") or ()]
        if self.bridge is not None:
            self.forbidden += frameworks.TORCH_ALWAYS_FORBIDDEN
        self.forbidden_calls: list[str] = []

    def send_json(self, obj: dict[str, Any], blob: bytes | None = None) -> None:
        """Queue a message. It leaves with the next case's start, or when the worker is done:
        a case's result and the next case's start wake the supervisor once, not twice. The two
        messages of every call travel in their binary forms (``framing``)."""
        kind = obj.get("type")
        if kind == "case_start":
            self.outbox += [self.pack(START_KIND, CASE_INDEX.size), self.pack_index(obj["index"])]
            return
        output = obj.get("output")
        if (
            kind == "case"
            and blob is not None
            and output is not None
            and obj.get("error") is None
            and not obj.get("mutated_inputs")
        ):
            parts = output.get("parts")
            metas = [output] if parts is None else parts
            head = [self.pack_head(obj["index"], 0 if parts is None else len(parts))]
            for meta in metas:
                if len(meta["dtype"]) > 4:  # no such numeric dtype today; JSON carries it
                    break
                shape = meta["shape"]
                head.append(self.pack_part(meta["dtype"].encode(), len(shape)))
                head.append(self.struct_pack(self.pack_dims[len(shape)], *shape))
            else:
                described = b"".join(head)
                self.outbox += [self.pack(RESULT_KIND, len(described) + len(blob)), described, blob]
                return
        payload = self.dumps(obj, separators=(",", ":")).encode()
        self.outbox += [self.pack(JSON_KIND, len(payload)), payload]
        if blob is not None:
            self.outbox += [self.pack(BLOB_KIND, len(blob)), blob]

    def send_queued(self) -> None:
        parts, self.outbox = self.outbox, []
        if parts:
            self.write_all(self.res, parts)

    def run(self) -> None:
        # From here on the process makes no new pipe, socket or shared memory (``nochannels``).
        nochannels.install()
        frameworks.forbid(self.forbidden, self.forbidden_calls)
        fn = self.load()
        if fn is not None:
            for index in range(self.total):
                self.start_case(index)
                self.run_case(fn, index, *self.load_case())
            self.send_json({"type": "done"})
        # Printed text first: the supervisor ends the worker once it has every case.
        self.flush()
        self.send_queued()
        self.exit(0)  # also ends threads the submission left running

    def load_case(self) -> tuple[list[Any], list[tuple[str, Any, tuple[int, ...]]]]:
        """The current case's arguments, as the supervisor laid them (and checked) before
        acknowledging: the values to call with, and each array's (name, view, shape). Fresh
        views at every call; the layout is decoded once per distinct one."""
        try:
            region, ndarray = self.region, self.ndarray
            (length,) = self.unpack_length(region)
            spec = region[CASE_LENGTH.size : CASE_LENGTH.size + length]
            layout = self.layouts.get(spec)
            if layout is None:
                layout = self.layout(spec, self.inputs_base(length))
            values: list[Any] = []
            arrays: list[tuple[str, Any, tuple[int, ...]]] = []
            bridge = self.bridge
            for name, value, dtype, shape, offset in layout:
                if dtype is None:
                    values.append(value)
                else:
                    view = ndarray(shape, dtype=dtype, buffer=region, offset=offset)
                    values.append(view if bridge is None else bridge.tensor(view))
                    arrays.append((name, view, shape))
            return values, arrays
        except Exception:
            self.exit(72)  # the submission scribbled over them

    def layout(self, spec: bytes, base: int) -> list[tuple[str, Any, Any, Any, int]]:
        """A case's arguments' JSON as (name, scalar value, dtype, shape, offset in the region)
        per parameter, dtype None for a scalar; in ``job.parse_args``'s order, which checked
        them."""
        layout: list[tuple[str, Any, Any, Any, int]] = []
        for name, arg in zip(self.param_names, self.loads(spec)["args"], strict=True):
            if type(arg.get("int")) is int:
                layout.append((name, arg["int"], None, None, 0))
            elif type(arg.get("float")) is float:
                layout.append((name, arg["float"], None, None, 0))
            elif arg.get("none") is True:
                layout.append((name, None, None, None, 0))
            else:
                code = arg["dtype"]
                dtype = self.dtype_of.get(code)
                if dtype is None:
                    dtype = self.dtype_of[code] = self.np.dtype(code)
                layout.append((name, None, dtype, tuple(arg["shape"]), base + arg["offset"]))
        if len(self.layouts) < 64:
            self.layouts[spec] = layout
        return layout

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
                        "message": f"{fname!r} is a {type_name(fn)}, not a function",
                        "traceback": "",
                    },
                }
            )
            return None
        return fn  # type: ignore[no-any-return]

    def start_case(self, index: int) -> None:
        """Attribute what was printed so far to the previous phase, and wait while the
        supervisor swaps the previous case's inputs for this one's (see ``supervisor``)."""
        self.flush()
        self.send_json({"type": "case_start", "index": index})
        self.send_queued()
        try:
            acknowledged = self.read(self.ack_r, 1) == b"+"
        except OSError:
            acknowledged = False
        if not acknowledged:  # the submission tampered with the pipe: stop rather than leak
            self.exit(71)

    def flush(self) -> None:
        for stream in (*self.streams, sys.stdout, sys.stderr):
            try:  # noqa: SIM105  (cheaper than contextlib.suppress, and it runs at every call)
                stream.flush()
            except Exception:  # the submission may have replaced or closed it
                pass

    def forked_copy_exits(self) -> None:
        """A child the submission forked returns here too: only the worker itself reports."""
        if self.getpid() != self.pid:
            self.exit(0)

    def load_failed(self, kind: str, exc: BaseException) -> None:
        self.send_json({"type": "load_failed", "kind": kind, "error": describe(exc)})

    def run_case(
        self, fn: Callable[..., Any], index: int, values: list[Any], arrays: list[Any]
    ) -> None:
        error: dict[str, str] | None = None
        result: Any = None
        try:
            result = fn(*values)
        except BaseException as exc:
            error = describe(exc)
        self.forked_copy_exits()
        if self.forbidden_calls:
            # Reported even when the submission caught the stand-in's exception.
            name = self.forbidden_calls[0]
            error = {
                "type": frameworks.FORBIDDEN_ERROR,
                "message": f"{name} is forbidden in this problem",
                "traceback": "",
            }
        shape_of = self.shape_of
        mutated = [name for name, view, shape in arrays if shape_of(view) != shape]
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
            except BadOutput as exc:
                header["error"] = {"type": "InvalidOutput", "message": str(exc), "traceback": ""}
        self.send_json(header, data)

    def convert(self, result: Any) -> tuple[dict[str, Any], bytes]:
        if self.outputs is None:
            return self.convert_array(result, self.result_cap)
        n = self.outputs
        if type(result) is not tuple or len(result) != n:
            got = f"a tuple of {len(result)}" if type(result) is tuple else type_name(result)
            raise BadOutput(f"returned {got}; expected a tuple of {n} numpy.ndarrays")
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
        bridge = self.bridge
        if bridge is not None and bridge.is_tensor(result):
            try:
                result = bridge.to_array(result)
            except Exception as exc:
                raise BadOutput(str(exc)[:500]) from None
        if type(result) is not self.ndarray:
            if isinstance(result, self.ndarray):
                raise BadOutput(
                    f"returned a {type_name(result)}, a subclass of numpy.ndarray; "
                    "return a plain numpy.ndarray (np.asarray(x))"
                )
            expected = "a numpy.ndarray" if bridge is None else "a torch.Tensor"
            raise BadOutput(f"returned {type_name(result)}; expected {expected}")
        dtype = result.dtype
        if dtype.kind not in NUMERIC_KINDS or dtype.hasobject or dtype.fields is not None:
            raise BadOutput(f"returned an array of dtype {dtype}; expected a numeric dtype")
        shape = tuple(int(d) for d in self.shape_of(result))
        nbytes = product(shape) * dtype.itemsize
        if nbytes > cap:
            raise BadOutput(
                f"returned an array of shape {shape} ({nbytes} bytes); "
                f"the limit is {self.result_cap} bytes"
            )
        data = memoryview(result).tobytes()  # C order, materialises views only after the check
        return {"dtype": dtype.str, "shape": list(shape)}, data


# The submission's sys.stdout and sys.stderr: text streams on fds 1 and 2, made ahead of any job
# (``runner.preload``) and never written before the worker's fds 1 and 2 are its capture pipes.
# Made in the freshly forked worker instead, they cost it about half a millisecond.
TEXT_STREAMS: list[io.TextIOWrapper] = []


def prepare_streams() -> None:
    TEXT_STREAMS[:] = [
        io.TextIOWrapper(os.fdopen(fd, "wb", closefd=False), write_through=True) for fd in (1, 2)
    ]


# The struct format of an output's dimensions, by their number.
PACK_DIMS = {n: f">{n}Q" for n in range(65)}


def close_all_from_3_but(*keep: int) -> None:
    """Close every descriptor from 3 on but ``keep``: a few close_range calls over the gaps,
    up to the kernel's default bound on descriptor numbers (``fs.nr_open``). ``fds.close_all_but``
    lists /proc/self/fd instead, a third of a millisecond in a freshly forked process."""
    low = 3
    for fd in sorted({k for k in keep if k >= low}):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, FALLBACK_BOUND)


class BadOutput(Exception):
    pass


def write_all(fd: int, parts: list[bytes]) -> None:
    """One system call for a whole message in the common case (a pipe takes it whole)."""
    total = sum(len(p) for p in parts)
    done = os.writev(fd, parts)
    if done < total:
        rest = memoryview(b"".join(parts))[done:]
        while rest:
            rest = rest[os.write(fd, rest) :]
