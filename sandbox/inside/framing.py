"""The byte formats the host and the runner share: frames, the job, the result stream, the shared
input region and the ``.npy`` header of an output. The host imports this module too.

Framing (both directions, see ``write_frame`` and ``job.JobReader``): each frame is one kind byte
(``J`` = UTF-8 JSON object, ``B`` = binary blob) followed by an 8-byte big-endian length and the
payload.

Job (stdin): a header, then one section per case, in order::

    J {"version": 3, "code": str, "function_name": str, "param_names": [str],
       "cases": int, "public": int, "region_bytes": int,
       "limits": {"output_bytes": int, "output_kill_bytes": int, "result_bytes": int}}

and, for each of the ``cases`` cases::

    J {"args": [ARG, ...]}
    B that case's input bytes

where ``ARG`` (one per parameter, in ``param_names`` order) is ``{"int": int}``, ``{"float":
float}`` (finite; JSON's shortest repr reads back as the same double), ``{"none": true}`` (the
argument is None: an omitted optional parameter) or ``{"dtype": str, "shape": [int], "offset":
int}``: a C-ordered array of a numeric or boolean dtype (``numpy.dtype.str``,
e.g. ``"<f8"``, ``"|b1"``) whose raw bytes start at ``offset`` in its case's input bytes. The
host aligns offsets to 64 bytes; every array argument has bytes of its own. The first ``public``
cases are public (their details may be shown to the student); every later one is hidden (a
hidden case or a probe), and no public case follows a hidden one. ``region_bytes`` is the size of
the one shared input region: the run's ``Limits.input_bytes``, at least ``align(8 + len(args
JSON)) + len(input bytes)`` of every case, and never derived from them (the submission sees the
region's size while its output is still shown). The header may hold ``"outputs": N``: the
function then returns a tuple of N arrays, not one array.

Results (stdout), in order:

* ``{"type": "started"}`` once the header is read and numpy imported (without it, the sandbox
  itself failed);
* per case, a ``J`` frame ``{"type": "case", "index": int, "error": null | {"type", "message",
  "traceback"}, "mutated_inputs": [str], "seconds": float, "output": bool}``; when ``output`` is
  true a ``B`` frame with the output as a ``.npy`` file (format 1.0, C order) follows, or, when
  the job asks for ``outputs``, the frame also holds ``"parts": N`` and N such ``B`` frames
  follow, one per array of the returned tuple. For a hidden case ``error`` is only a category
  (``type`` one of ``errors.HIDDEN_ERROR_TYPES``, empty ``message`` and ``traceback``) and
  ``mutated_inputs`` only what the supervisor saw change: the worker's own words never leave the
  sandbox. ``seconds`` is measured by the supervisor, from handing the case its inputs to
  receiving its result;
* or, instead of any case, ``{"type": "load_failed", "kind": "compile" | "runtime" | "memory",
  "error": {...}}`` when the submission cannot be imported or has no usable entry point;
* always last, ``{"type": "end", "completed": bool, "worker_exit": int | null,
  "worker_signal": int | null, "worker_cpu_seconds": float, "output_killed": bool,
  "result_overflow": bool, "stdout": str, "stderr": str, "stdout_bytes": int,
  "stderr_bytes": int, "phases": [{"case": int | null, "stdout": str, "stderr": str}]}``
  (``completed``: the worker reported every case, and said ``done``: it is then ended without
  waiting for its exit, so ``worker_exit`` and ``worker_signal`` are null and
  ``worker_cpu_seconds`` 0; ``*_bytes``: how much was written in total,
  the text being cut at ``output_bytes``; ``phases``: the same kept text split by when it was
  printed: ``case: null`` while importing, else while that case ran or after it).

The shared region holds one case at a time (see ``supervisor``): an 8-byte big-endian length
(``CASE_LENGTH``), the case's ``{"args": ...}`` JSON, and its input bytes from
``inputs_base(length)``.

Worker to supervisor (a pipe, untrusted): ``J`` frames (``case_start``, ``case``,
``load_failed``, ``done``) and a ``case`` frame's ``B`` output, plus two fixed binary forms of the
two frames every call sends, so a call costs no JSON on either side:

* ``S``: a ``case_start``, its payload the case index (``CASE_INDEX``);
* ``R``: a ``case`` frame of a call that returned its output(s) and raised nothing: the index and
  how many parts (``RESULT_HEAD``; 0 parts: the one array of a job without ``outputs``), per
  array its dtype string and number of dimensions (``RESULT_PART``) and its dimensions
  (``DIMENSION`` each), then every array's raw C-ordered bytes end to end.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Protocol

JOB_VERSION = 3
FRAME_HEADER = struct.Struct(">cQ")
JSON_KIND = b"J"
BLOB_KIND = b"B"
START_KIND = b"S"
RESULT_KIND = b"R"
CASE_INDEX = struct.Struct(">Q")
RESULT_HEAD = struct.Struct(">QB")
RESULT_PART = struct.Struct(">4sB")
DIMENSION = struct.Struct(">Q")
MAX_DIMENSIONS = 64
MAX_JSON_FRAME = 8 * 1024 * 1024
MAX_INPUT_BYTES = 1 << 34
INPUT_ALIGN = 64
# A case's arguments in the shared region: their JSON's length, the JSON, then the input bytes.
CASE_LENGTH = struct.Struct(">Q")
# dtype kinds an input or output may have: booleans, integers, floats, complex. Never object,
# void, str.
NUMERIC_KINDS = frozenset("biufc")
NPY_MAGIC = b"\x93NUMPY\x01\x00"


class FrameError(Exception):
    """The peer sent something that is not a well-formed frame or job."""


class Writer(Protocol):
    def write(self, data: bytes, /) -> Any: ...


def write_frame(out: Writer, kind: bytes, payload: bytes) -> None:
    out.write(FRAME_HEADER.pack(kind, len(payload)))
    out.write(payload)


def write_json(out: Writer, obj: dict[str, Any]) -> None:
    write_frame(out, JSON_KIND, json.dumps(obj, separators=(",", ":")).encode())


def parse_json(payload: bytes | bytearray) -> dict[str, Any]:
    obj = json.loads(payload)
    if not isinstance(obj, dict):
        raise FrameError("JSON frame is not an object")
    return obj


def align(n: int) -> int:
    return -(-n // INPUT_ALIGN) * INPUT_ALIGN


def inputs_base(spec_bytes: int) -> int:
    """Where a case's input bytes start in the shared region, after its arguments' JSON."""
    return align(CASE_LENGTH.size + spec_bytes)


def product(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def npy_header(descr: str, shape: tuple[int, ...]) -> bytes:
    """The .npy (format 1.0) header of a C-ordered array, padded as numpy pads it (to 64)."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    total = len(NPY_MAGIC) + 2 + len(text) + 1
    text += " " * (-total % INPUT_ALIGN) + "\n"
    return NPY_MAGIC + len(text).to_bytes(2, "little") + text.encode("latin1")
