"""The runner: reads ONE job from stdin, runs it (``supervisor``, ``worker``) and writes the ONLY
result stream to stdout (formats in ``framing``). Every backend starts it the same way::

    python -I -S -B <the package>/__main__.py [--sys-path DIR]... [--preload-torch]

``--sys-path`` prepends DIR to ``sys.path`` (where numpy lives when ``-S`` hides site-packages);
``--preload-torch`` imports torch too before the job arrives (a warm pool's PyTorch runner).
Close stdin after writing the job. The runner exits 0 once it has written the ``end`` message.
Anything else (no ``end`` message, a truncated stream) means the sandbox died before reporting,
which is itself a verdict for the host. Its own stderr carries only the runner's diagnostics. It
needs no environment: it sets one BLAS thread and one malloc arena itself. It enforces no
resource limit but the output caps: CPU, memory, processes, file size and the wall clock are the
backend's job, from outside.

Warm start: the runner imports numpy and everything the worker uses BEFORE it reads the job, so
a backend may start it ahead of demand (a warm pool, the fork server's zygote) and send the job
when one arrives. Each runner still serves exactly one job and exits.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from .framing import JOB_VERSION, FrameError
from .job import JobReader
from .supervisor import Supervisor


def run_job(inp: BinaryIO) -> None:
    """Read one job from ``inp`` and run it, writing the result stream to fd 1 (what every
    backend, the fork server's zygote included, calls once the sandbox is set up). Only the
    header is read before the worker exists (see ``supervisor``)."""
    reader = JobReader(inp)
    header = reader.json()
    if header.get("version") != JOB_VERSION:
        raise FrameError(f"unsupported job version {header.get('version')!r}")
    Supervisor(header, reader).run()


def warm_up() -> None:
    """Run the path from a job's first byte to the worker's fork once on a made-up header, with
    no effect but the memory it touches: in a freshly forked process each first touch of a page
    is a copy-on-write fault, and a spare waiting for its go-ahead (``zygote``) takes them
    before its job arrives rather than on the submission's path (the cases are read after the
    fork, beside the worker's start: not warmed). Holds nothing of any job."""
    from .framing import write_json
    from .supervisor import ResultStream

    r, w = os.pipe()
    try:
        os.write(w, WARM_UP_HEADER)
        JobReader(os.fdopen(r, "rb", buffering=0, closefd=False)).json()
        sink = ResultStream(w)
        write_json(sink, {"type": "started"})
        sink.parts.clear()  # never written
    finally:
        os.close(r)
        os.close(w)


def _warm_up_header() -> bytes:
    """A made-up job header frame, shaped as the host's are."""
    import json

    from .framing import FRAME_HEADER, JSON_KIND

    header = {
        "version": JOB_VERSION,
        "code": "import numpy as np\n\n\ndef f(a, n):\n    return np.asarray(a) * n\n",
        "function_name": "f",
        "param_names": ["a", "n"],
        "cases": 1,
        "public": 1,
        "region_bytes": 192,
        "limits": {"output_bytes": 65536, "output_kill_bytes": 524288, "result_bytes": 1 << 26},
    }
    payload = json.dumps(header, separators=(",", ":")).encode()
    return FRAME_HEADER.pack(JSON_KIND, len(payload)) + payload


# Made once, in the process spares are forked from: building it in the spare would cost more
# than the warm-up saves.
WARM_UP_HEADER = _warm_up_header()


def add_sys_paths(argv: list[str]) -> None:
    """Every ``--sys-path DIR`` of ``argv``, first on ``sys.path``."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "--sys-path":
            sys.path.insert(0, argv[i + 1])


def one_blas_thread() -> None:
    """One BLAS thread: memory limits stay meaningful."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def pin_login_uid() -> None:
    """Give this process (and so every process of its runs) an audit login uid, if it has none.

    A task whose login uid is unset may set it once without privilege (``/proc/self/loginuid``),
    and each such write takes the next number of one host-wide counter, the audit session id,
    which ``/proc/self/sessionid`` then shows: a sender in one run setting it from thousands of
    new threads a second and a receiver in another run reading its own thread's number carried
    tens of bits a second between runs (red team, session 12). Once it is set, changing it takes
    CAP_AUDIT_CONTROL of the host, which no run has. Best effort: a kernel without audit has no
    such file, and one that refuses this write refuses the submission's too."""
    try:
        with open("/proc/self/loginuid", "rb") as f:
            if int(f.read() or b"0") != 0xFFFFFFFF:
                return
        with open("/proc/self/loginuid", "wb", buffering=0) as f:
            f.write(str(os.getuid()).encode())
    except (OSError, ValueError):
        pass


def main(argv: list[str]) -> int:
    pin_login_uid()
    add_sys_paths(argv)
    one_blas_thread()
    preload(torch="--preload-torch" in argv)
    run_job(sys.stdin.buffer)
    # The end message is written and flushed: skip the interpreter's teardown (tens of ms with
    # numpy loaded), which would only delay the host seeing the stream close.
    os._exit(0)


def preload(torch: bool = False) -> None:
    """Import what a job needs before the job arrives: a pooled runner waits warm. ``torch``:
    PyTorch too (the fork server's zygote, and the warm pool's runners kept for PyTorch jobs,
    where torch problems are offered)."""
    import linecache  # noqa: F401
    import traceback  # noqa: F401
    import types  # noqa: F401

    import numpy  # noqa: F401

    from . import frameworks, nochannels, supervisor, worker

    if torch:
        frameworks.import_torch()

    supervisor.bind_libc()
    nochannels.prepare()
    worker.prepare_streams()
