"""A hostile student against the runner's speed work: the worker ended at ``done`` without
waiting for its exit, the cases read after the fork with read-ahead, the argument layouts parsed
once per distinct one, the spare's warm-up and the wall clock's grace for a computing run. Each
test fails if its attack works; every probe runs as submission code through the real fork
server."""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from app.grading.pipeline import build_request, grade_submission
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox
from sandbox.protocol import CaseArgs, Limits, RunRequest, RunResult
from tests.sandbox.conftest import AlwaysForked
from tests.sandbox.helpers import FAST, assert_grader_still_works, visible_text

pytestmark = pytest.mark.timeout(180)

CORPUS = Path(__file__).resolve().parents[1] / "grading" / "corpus"

ROOMY = FAST.model_copy(
    update={"cpu_seconds": 10, "wall_seconds": 20, "memory_mb": 512, "output_bytes": 65536}
)


def request(
    code: str, cases: list[tuple[np.ndarray, int, bool]], limits: Limits = FAST
) -> RunRequest:
    return RunRequest(
        code=code,
        function_name="f",
        param_names=["a", "n"],
        cases=[
            CaseArgs(name=f"c{i}", args={"a": a, "n": n}, hidden=hidden)
            for i, (a, n, hidden) in enumerate(cases)
        ],
        limits=limits,
    )


# Looks through every readable page of its own process for secrets: a secret is found when its
# first 16 bytes are followed by 16 bytes with the given hash (the code holds only the head
# and the hash, so its own copy of a needle never counts).
SCANNER = """
import ctypes, hashlib, json, os, time

SECRETS = json.loads(%r)


def scan():
    heads = [(name, bytes.fromhex(h), t) for name, (h, t) in SECRETS.items()]
    found = set()
    with open('/proc/self/maps') as fh:
        maps = fh.read().splitlines()
    for line in maps:
        parts = line.split()
        path = parts[5] if len(parts) > 5 else ''
        # Memory no file backs: anonymous, heap, stack and the shared region (the cases' bytes
        # are never in a file's pages; reading those past a file's end, or [vvar], would fault).
        if parts[1][0] != 'r' or path not in ('', '[heap]', '[stack]', '/dev/zero'):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split('-'))
        at = lo
        while at < hi:
            size = min(1 << 22, hi - at)
            data = ctypes.string_at(at, size)
            for name, head, tail in heads:
                i = data.find(head)
                while i >= 0:
                    if hashlib.sha256(data[i + 16 : i + 32]).hexdigest() == tail:
                        found.add(name)
                    i = data.find(head, i + 1)
            at += size - 32 if size > 64 and at + size < hi else size
    return sorted(found)


def supervisor_reach():
    out = {}
    ppid = os.getppid()
    for what in ('fd', 'fd/0', 'mem', 'environ', 'maps'):
        try:
            path = '/proc/%%d/%%s' %% (ppid, what)
            if what == 'fd':
                out[what] = os.listdir(path)
            else:
                fd = os.open(path, os.O_RDONLY)
                try:
                    out[what] = len(os.read(fd, 64))
                finally:
                    os.close(fd)
        except OSError as exc:
            out[what] = type(exc).__name__
    return out


# Races the supervisor reading the cases: it reads them right after forking us.
_reach = []
_until = time.monotonic() + 0.3
while time.monotonic() < _until:
    _reach.append(json.dumps(supervisor_reach(), sort_keys=True))
print('IMPORT' + json.dumps({'found': scan(), 'reach': sorted(set(_reach)),
                             'fds': sorted(os.listdir('/proc/self/fd'))}), flush=True)


def f(a, n):
    if n == 1:
        print('CALL' + json.dumps({'found': scan(), 'reach': supervisor_reach()}), flush=True)
    return a
"""


def public_text(result: RunResult, public: int) -> str:
    """What the grader may show a student of a run whose first ``public`` cases are public:
    the import phase, the public cases' text, the messages and every case's error."""
    parts = [visible_text(result).replace(result.stdout, "").replace(result.stderr, "")]
    parts += [result.import_stdout, result.import_stderr]
    parts += [result.unfinished_stdout, result.unfinished_stderr]
    for case in result.cases[:public]:
        parts += [case.stdout, case.stderr]
    return "\n".join(parts)


def _secret() -> tuple[np.ndarray, tuple[str, str]]:
    raw = secrets.token_bytes(64)
    return np.frombuffer(raw, dtype=np.uint8).copy(), (
        raw[:16].hex(),
        hashlib.sha256(raw[16:32]).hexdigest(),
    )


def _line(text: str, tag: str) -> dict[str, object]:
    line = next(x for x in text.splitlines() if x.startswith(tag))
    found: dict[str, object] = json.loads(line[len(tag) :])
    return found


def test_no_later_case_is_in_the_worker_or_reachable_through_its_supervisor(
    forked: AlwaysForked,
) -> None:
    """The worker is forked before the cases are read (with read-ahead now): at import time and
    during the public call no byte of a later (hidden) case is anywhere in its memory, its
    supervisor's stdin, memory and descriptors are out of reach, and it holds no descriptor
    but its own. The control: the public case's bytes are found while it runs."""
    public, public_key = _secret()
    hidden = [_secret() for _ in range(3)]
    keys = {"public": public_key} | {f"hidden{i}": key for i, (_, key) in enumerate(hidden)}
    code = SCANNER % json.dumps(keys)
    cases = [(public, 1, False)] + [(a, 2 + i, True) for i, (a, _) in enumerate(hidden)]
    result = forked.run(request(code, cases, ROOMY))
    assert result.status == "ok", (result.message, result.stderr)
    at_import = _line(result.stdout, "IMPORT")
    in_call = _line(result.stdout, "CALL")
    assert at_import["found"] == [], at_import
    assert in_call["found"] == ["public"], in_call  # the control, and no hidden one
    for seen in [json.loads(r) for r in at_import["reach"]] + [in_call["reach"]]:  # type: ignore[union-attr]
        assert all(isinstance(v, str) for v in seen.values()), seen  # every try refused
    # 0-2, the result and acknowledgement pipes, and the listing's own descriptor.
    assert len(at_import["fds"]) <= 6, at_import["fds"]  # type: ignore[arg-type]


# From the first hidden call on, a thread keeps printing, writing forged frames (a result with
# the inputs in its error, ``done``, a next case's start) onto the result pipe, and a child
# keeps the pipes open: the worker is ended at ``done``.
AFTER_DONE = """
import gc, json, os, struct, sys, threading, time

W = next(o for o in gc.get_objects() if type(o).__name__ == 'Worker')
FRAMING = next(m for m in list(sys.modules.values()) if hasattr(m, 'FRAME_HEADER')
               and hasattr(m, 'JSON_KIND'))
_current = [0]


def frame(obj):
    payload = json.dumps(obj).encode()
    return FRAMING.FRAME_HEADER.pack(FRAMING.JSON_KIND, len(payload)) + payload


def flood(secret):
    while True:
        i = _current[0]
        for obj in ({'type': 'case', 'index': i, 'error': {'type': 'LEAK' + secret,
                     'message': 'LEAK' + secret, 'traceback': 'LEAK' + secret},
                     'mutated_inputs': ['LEAK' + secret], 'seconds': 0.0, 'output': None},
                    {'type': 'done'}, {'type': 'case_start', 'index': i + 1},
                    {'type': 'load_failed', 'kind': 'runtime',
                     'error': {'type': 'LEAK', 'message': 'LEAK' + secret, 'traceback': ''}}):
            try:
                os.write(W.res, frame(obj))
            except OSError:
                pass
        print('LATE' + secret, flush=True)
        print('LATE' + secret, file=sys.stderr, flush=True)
        time.sleep(0.001)


def f(a, n):
    _current[0] = n - 1
    if n >= 2:
        secret = a.tobytes().hex()
        threading.Thread(target=flood, args=(secret,), daemon=True).start()
        if n == 2 and os.fork() == 0:
            try:
                os.setsid()
            except OSError:  # refused by the worker's filter: stays in the session
                pass
            flood(secret)
        time.sleep(0.02)
    return a * n
"""


def test_frames_and_text_after_done_never_reach_the_report(forked: AlwaysForked) -> None:
    """Threads and a child of the worker keep forging frames (a hidden case's result with its
    inputs as the error, ``done``, a next case, a load failure) and printing after the last
    call: the report has every case's true output, none of the hidden inputs in any text, the
    run ends although a child holds the pipes, and nothing of it outlives it."""
    public = np.arange(4, dtype=np.float64)
    hidden = [np.full(4, 1000.0 + i) for i in range(3)]
    cases = [(public, 1, False)] + [(a, 2 + i, True) for i, a in enumerate(hidden)]
    started = time.monotonic()
    result = forked.run(request(AFTER_DONE, cases, ROOMY))
    took = time.monotonic() - started
    assert result.status == "ok", result.message  # completed by the forged done
    text = public_text(result, len(cases) - len(hidden))
    assert "LATE" in result.stdout  # the control: the floods ran
    for a in hidden:
        assert a.tobytes().hex() not in text
    for case in result.cases[1:]:
        assert case.error is None or "LEAK" not in case.error.type + case.error.message
    # A forged result may stand for a call (it is the submission's own): never one of an
    # earlier case, and never one with a hidden input in it.
    assert result.cases[0].output is not None
    np.testing.assert_array_equal(result.cases[0].output, public)
    assert took < ROOMY.wall_seconds / 2, took  # ended at done, not at the wall clock
    assert_grader_still_works(forked)


# Cases sharing a layout (shapes, offsets, n): the same spec bytes, other inputs.
SAME_LAYOUT = """
_seen = []


def f(a, n):
    _seen.append(a)  # a view kept from an earlier call
    return a * n + sum(float(v.flat[0]) for v in _seen[:-1]) * 0
"""


def test_cases_sharing_a_layout_each_get_their_own_inputs(forked: AlwaysForked) -> None:
    """The supervisor parses a layout once per (spec bytes, size) and the worker once per spec
    bytes: cases with byte-identical specs still each see their own inputs, and a view kept
    from an earlier call reads only the current case's bytes."""
    # (3, 2) and (2, 3): specs of the same length, not the same bytes.
    arrays = [np.full((3, 2) if i % 3 else (2, 3), float(i)) for i in range(1, 8)]
    cases = [(a, 2, i >= 2) for i, a in enumerate(arrays)]
    result = forked.run(request(SAME_LAYOUT, cases))
    assert result.status == "ok", result.message
    for a, case in zip(arrays, result.cases, strict=True):
        assert isinstance(case.output, np.ndarray)
        assert case.output.shape == a.shape
        np.testing.assert_array_equal(case.output, a * 2)


# Computes a fraction of each 10 ms on a thread, sleeping otherwise, until ended.
DUTY = """
import threading, time


def spin(share):
    while True:
        end = time.perf_counter() + 0.01 * share
        while time.perf_counter() < end:
            pass
        time.sleep(0.01 * (1 - share))


def f(a, n):
    threading.Thread(target=spin, args=(%r,), daemon=True).start()
    time.sleep(3600)
    return a
"""

WALL = FAST.model_copy(update={"cpu_seconds": 20, "wall_seconds": 2})


@pytest.mark.parametrize(("share", "most"), [(0.05, 1.0), (0.35, 2.0)])
def test_a_mostly_waiting_run_holds_its_worker_at_most_twice_the_wall_clock(
    forked: AlwaysForked, share: float, most: float
) -> None:
    """A run that waits forever while a thread computes a little: below a quarter of a core it
    ends at its wall clock; at a third of one, were the machine shared, it would get the grace
    once, never more than twice its wall clock (the grace is no way to hold a grading worker
    longer)."""
    started = time.monotonic()
    result = forked.run(request(DUTY % share, [(np.ones(2), 1, True)], WALL))
    took = time.monotonic() - started
    assert result.status == "time_limit_exceeded", result.message
    assert "wall-clock" in result.message
    assert took < WALL.wall_seconds * most + 1.0, took


def test_a_run_that_chooses_to_wait_on_an_idle_machine_gets_no_grace(
    forked: AlwaysForked,
) -> None:
    """The grace is for a run held back by a busy machine. Alone on the machine (nothing else
    runs in this test), a run whose thread computes a third of each 10 ms and sleeps the rest
    was never held back: it is to end at its wall clock, as a sleeping one does."""
    started = time.monotonic()
    result = forked.run(request(DUTY % 0.35, [(np.ones(2), 1, True)], WALL))
    took = time.monotonic() - started
    assert result.status == "time_limit_exceeded", result.message
    assert took < WALL.wall_seconds + 1.0, took


def test_frames_and_text_after_done_never_reach_the_student_s_report(
    forked: AlwaysForked, problems: dict[str, Problem]
) -> None:
    """The same floods through the whole grader, on the real problem: the report (what the
    API returns and the page shows) has no hidden input byte and none of the forged text."""
    problem = problems["multi-head-attention"]
    correct = (CORPUS / "correct_reshape.py").read_text()
    code = (
        correct.replace("def multi_head_attention(", "def _solve(")
        + AFTER_DONE.replace("def f(a, n):", "def _f(a, n):")
        + """
_calls = [0]


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    _calls[0] += 1
    if _calls[0] >= LAST_CALL - 1:  # the last two calls (hidden): then done
        _f(Q, _calls[0])
    return _solve(Q, K, V, W_q, W_k, W_v, W_o, num_heads)
"""
    )
    total = len(build_request(problem, code, problem.examples + problem.hidden).cases)
    code = code.replace("LAST_CALL", str(total))
    report = grade_submission(problem, code, forked.server)
    # The floods forge errors for the last two calls (a probe's and the repeated call's, which
    # prove nothing); every hidden test keeps its true result.
    assert report.verdict == Verdict.ACCEPTED, report.verdict
    shown = report.model_dump_json()
    assert "LEAK" not in shown and "LATE" not in shown, shown[:2000]
    for case in problem.hidden:
        q = case.inputs["Q"]
        assert isinstance(q, np.ndarray)
        assert q.tobytes()[:8].hex() not in shown
    assert_grader_still_works(forked)


# Signals everything it may reach, again and again, and lists what it sees of other processes.
KILLER = """
import os, signal, time


def f(a, n):
    seen = set()
    until = time.monotonic() + 1.5
    while time.monotonic() < until:
        for sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM):
            try:
                os.kill(-1, sig)
            except OSError:
                pass
        seen.update(p for p in os.listdir('/proc') if p.isdigit())
        time.sleep(0.01)
    print('SEEN', len(seen), flush=True)
    return a
"""


def test_a_spare_primed_while_a_hostile_run_goes_on_is_out_of_its_reach() -> None:
    """While a run is in flight the fork server primes a spare for the next one: a run that
    signals everything it can for as long as it lasts reaches neither that spare nor the
    run that then starts from it."""
    server = ForkServerSandbox(BwrapSandbox(), spares=1)
    try:
        assert server.wait_ready()
        deadline = time.monotonic() + 10
        while server.spares_ready() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        code = KILLER
        first = server.run(request(code, [(np.ones(2), 1, False)]))
        assert first.status == "ok", first.message
        assert "SEEN" in first.stdout
        assert int(first.stdout.split()[1]) <= 2, first.stdout  # its supervisor and itself
        # The spare the first run took was replaced while it ran (one per run in flight).
        deadline = time.monotonic() + 10
        while server.spares_ready() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        spares = server.spare_runs
        second = server.run(request(SAME_LAYOUT, [(np.ones((3, 2)), 2, True)]))
        assert server.spare_runs == spares + 1, "the second run did not start from a spare"
        assert second.status == "ok", second.message
        assert second.cases[0].output is not None
        np.testing.assert_array_equal(second.cases[0].output, np.full((3, 2), 2.0))
        # Two at once: the hostile one beside a run primed while it goes on.
        results: dict[str, RunResult] = {}

        def hostile() -> None:
            results["hostile"] = server.run(request(code, [(np.ones(2), 1, False)]))

        thread = threading.Thread(target=hostile)
        thread.start()
        time.sleep(0.3)
        for _ in range(5):
            beside = server.run(request(SAME_LAYOUT, [(np.ones((3, 2)), 2, True)]))
            assert beside.status == "ok", beside.message
        thread.join(timeout=60)
        assert results["hostile"].status == "ok", results["hostile"].message
        assert server.leftovers() == []
    finally:
        server.close()
