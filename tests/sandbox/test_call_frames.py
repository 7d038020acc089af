"""The per-call frames between worker and supervisor, attacked from the submission: the binary
``case_start`` (``S``) and result (``R``) forms, forged, malformed or sent out of turn, and the
shared region, searched for another case's bytes. Each attack fails the test if it works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sandbox import wire
from sandbox.inside.framing import FRAME_HEADER, JSON_KIND
from sandbox.protocol import RunRequest, Sandbox
from tests.sandbox.helpers import phased_request

pytestmark = pytest.mark.timeout(120)

INSIDE = Path(__file__).resolve().parents[2] / "sandbox" / "inside"
SITE = str(Path(np.__file__).resolve().parents[1])

# Tools every attack below shares: the worker (found through the collector), and a writer of
# binary frames straight onto its result pipe.
TOOLS = """
import gc, os, struct
import numpy as np

gc.unfreeze()
_worker = next(o for o in gc.get_objects() if type(o).__name__ == "Worker")


def _frame(kind, payload):
    os.write(_worker.res, struct.pack(">cQ", kind, len(payload)) + payload)


def _result(index, arrays, parts=0, codes=None):
    head = struct.pack(">QB", index, parts)
    for i, a in enumerate(arrays):
        code = (codes[i] if codes else a.dtype.str).encode()
        head += struct.pack(">4sB", code, a.ndim) + struct.pack(">%dQ" % a.ndim, *a.shape)
    _frame(b"R", head + b"".join(a.tobytes() for a in arrays))
"""


def raw_frames(request: RunRequest) -> tuple[bytes, list[dict[str, Any]]]:
    """Run the runner natively on the job and return its stream and JSON frames: what the
    supervisor itself wrote, before any host-side parsing."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-B", str(INSIDE / "__main__.py"), "--sys-path", SITE],
        input=wire.encode_job(request),
        capture_output=True,
        timeout=60,
        check=True,
    )
    import json

    data, frames, pos = done.stdout, [], 0
    while pos < len(data):
        kind, length = FRAME_HEADER.unpack_from(data, pos)
        pos += FRAME_HEADER.size
        if kind == JSON_KIND:
            frames.append(json.loads(data[pos : pos + length]))
        pos += length
    return data, frames


REGION_SEARCH = """
import numpy as np

NEEDLES = {needles}


def f(a, n):
    region = bytes(a.base)  # the whole shared region the call's inputs view
    return np.array([1.0 if bytes.fromhex(h) in region else 0.0 for h in NEEDLES])
"""


def test_the_shared_region_holds_only_the_current_case_whatever_the_sizes(
    sandbox: Sandbox,
) -> None:
    """Cases of falling then rising sizes: at each call the whole region holds this call's
    input bytes (the control) and none of the previous or the next case's, public or hidden."""
    rng = np.random.default_rng(2024)
    arrays = [rng.standard_normal(4096), rng.standard_normal(8), rng.standard_normal(2048)]
    needles = [a.tobytes()[-64:].hex() for a in arrays]  # the tail: what a shorter case leaves
    code = REGION_SEARCH.format(needles=needles)
    request = phased_request(
        code,
        [
            ("public-big", arrays[0], False),
            ("hidden-small", arrays[1], True),
            ("hidden-mid", arrays[2], True),
        ],
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    seen = np.array([c.output for c in result.cases])
    np.testing.assert_array_equal(seen, np.eye(3))


FORGED_RESULT = (
    TOOLS
    + """
_send = _worker.send_json
_held = []


def _hold_first_result(obj, *rest):
    if obj.get("type") == "case" and obj.get("index") == 0:
        _held.append(obj)
        return None
    return _send(obj, *rest)


_worker.send_json = _hold_first_result


def f(a, n):
    if n == 2 and _held:
        _result(0, [a.copy()])  # the public case's result, carrying the hidden input
    return a * n
"""
)


def test_a_binary_result_forged_for_the_public_case_from_a_hidden_one_is_dropped(
    sandbox: Sandbox,
) -> None:
    """The public case's result is held back and forged in binary from the hidden case, with
    the hidden input as its output: the supervisor accepts no result for a finished phase."""
    hidden = np.random.default_rng(7).standard_normal(4)
    request = phased_request(
        FORGED_RESULT, [("public-1", np.ones(4), False), ("hidden-1", hidden, True)]
    )
    result = sandbox.run(request)
    assert [c.name for c in result.cases] == ["hidden-1"]
    assert result.status == "runtime_error", result.message


SKIP_AHEAD = (
    TOOLS
    + """
def f(a, n):
    if n == 1:
        # Start the next (hidden) case itself, take the acknowledgement, and print what the
        # region holds now, hoping it counts as this public case's output.
        _frame(b"S", struct.pack(">Q", 1))
        assert os.read(_worker.ack_r, 1) == b"+"
        print("GOT", a.tobytes().hex(), flush=True)
        os._exit(0)  # (rather than wait for an acknowledgement that will not come)
    return a * n
"""
)


def test_a_case_started_out_of_turn_moves_its_printing_out_of_the_public_phase(
    sandbox: Sandbox,
) -> None:
    """A public call starts the hidden case itself and prints the hidden inputs it then holds:
    the printing belongs to the hidden phase, and the public case's result no longer counts."""
    hidden = np.random.default_rng(8).standard_normal(4)
    request = phased_request(
        SKIP_AHEAD, [("public-1", np.ones(4), False), ("hidden-1", hidden, True)]
    )
    result = sandbox.run(request)
    secret = hidden.tobytes().hex()
    assert secret in result.stdout  # the attack did print the hidden input (operators see it)
    student = [result.import_stdout, result.import_stderr, result.unfinished_stdout]
    student += [result.unfinished_stderr, result.message]
    student += [c.stdout + c.stderr for c in result.cases if c.name == "public-1"]
    assert secret not in "".join(student)
    assert "public-1" not in [c.name for c in result.cases]


FLOOD = """
import os, time


def f(a, n):
    if n == 1:
        print("public text")
    else:
        line = ("HIDDEN " + a.tobytes().hex() + "\\n").encode()
        os.write(1, line)
        time.sleep(0.5)  # past the time a public phase's text waits before it is sent
        for _ in range(100000):
            os.write(1, line)
    return a * n
"""


def test_a_hidden_case_s_flood_emits_no_output_frame() -> None:
    """A hidden case prints, waits, then floods stdout past the kill limit: the supervisor's
    stream holds an ``output`` frame for the public case (the control) and none for the hidden
    phase."""
    hidden = np.random.default_rng(9).standard_normal(4)
    request = phased_request(FLOOD, [("public-1", np.ones(4), False), ("hidden-1", hidden, True)])
    _, frames = raw_frames(request)
    outputs = [f for f in frames if f["type"] == "output"]
    assert [o["case"] for o in outputs] == [0]
    assert outputs[0]["stdout"] == "public text\n"
    end = frames[-1]
    assert end["type"] == "end" and end["output_killed"] is True
    # Only the end frame (for operators, split by phase) carries the hidden text.
    assert not any(hidden.tobytes().hex() in str(f) for f in frames[:-1])
    assert hidden.tobytes().hex() in end["stdout"]


MALFORMED = (
    TOOLS
    + """
def f(a, n):
    index = n - 1
    if n == 1:  # a dtype that is not numeric
        _result(index, [np.zeros(2)], codes=["|O8"])
    elif n == 2:  # more bytes than the shape says
        head = struct.pack(">QB", index, 0) + struct.pack(">4sB", b"<f8", 1) + struct.pack(">Q", 1)
        _frame(b"R", head + bytes(16))
    elif n == 3:  # a tuple where one array is asked for
        _result(index, [a, a], parts=2)
    elif n == 4:  # more dimensions than any array has
        _frame(b"R", struct.pack(">QB", index, 0) + struct.pack(">4sB", b"<f8", 200))
    elif n == 5:  # a payload cut inside its description
        _frame(b"R", struct.pack(">QB", index, 0) + b"<f")
    return a * n
"""
)


def test_malformed_binary_results_are_invalid_outputs_never_accepted() -> None:
    """Binary results that lie about their dtype, size, parts or dimensions are each that
    case's ``InvalidOutput``, and the worker's genuine result sent after it is not taken."""
    cases = [(f"public-{i}", np.arange(2.0), False) for i in range(5)]
    request = phased_request(MALFORMED, cases)
    data, _ = raw_frames(request)
    parsed = wire.parse_stream(data, request)
    assert parsed.problem == ""
    assert [c.name for c in parsed.cases] == [f"public-{i}" for i in range(5)]
    for outcome in parsed.cases:
        assert outcome.output is None, outcome.name
        assert outcome.error is not None and outcome.error.type == "InvalidOutput", outcome


def test_a_genuine_binary_result_round_trips() -> None:
    """The control for the attacks above: a plain call's output comes back exact through the
    binary form, for one array and for a tuple of them."""
    a = np.random.default_rng(10).standard_normal((3, 5)).astype(np.float32)
    request = phased_request("def f(a, n):\n    return a * n\n", [("p", a, False)])
    parsed = wire.parse_stream(raw_frames(request)[0], request)
    assert parsed.cases[0].error is None
    np.testing.assert_array_equal(parsed.cases[0].output, a)
    code = "import numpy as np\ndef f(a, n):\n    return a, np.arange(n, dtype=np.int16)\n"
    tupled = request.model_copy(update={"code": code, "outputs": 2})
    parsed = wire.parse_stream(raw_frames(tupled)[0], tupled)
    out = parsed.cases[0].output
    assert isinstance(out, tuple) and len(out) == 2
    np.testing.assert_array_equal(out[0], a)
    np.testing.assert_array_equal(out[1], np.arange(1, dtype=np.int16))
