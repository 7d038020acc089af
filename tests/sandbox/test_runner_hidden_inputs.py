"""A submission that hunts its own process for every case's inputs finds, at each call, the
current case's inputs and no other case's: nothing at import time, and at each public or hidden
call (probes included) only that call's own. What it prints during public cases is shown to the
student, so a public case also must not hold a later (hidden) case's bytes.

The scan reads every file descriptor it can (its own and its supervisor's), the objects the
garbage collector knows and their referents (bytes, bytearrays, arrays, mmaps), and every
writable mapping of /proc/self/maps through /proc/self/mem. The needles are split in two halves
held apart, so the scanner never holds a needle whole itself: a hit means the process held it.
It copies what it reads only into one scratch buffer that it zeroes after each search, so a scan
leaves no copy of the current case's inputs behind for the next scan to find.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from app.grading.determinism import repeat_name, repeated
from app.grading.pipeline import HIDDEN_OUTPUT_NOTE, grade_submission
from app.problems.cases import TestCase as Case
from app.problems.loader import Problem
from sandbox.protocol import RunRequest, RunResult, Sandbox
from tests.sandbox.helpers import FAST, phased_request, visible_text

pytestmark = pytest.mark.timeout(180)

SCANNER = """
import gc, mmap, os, select, sys
import numpy as _np

_NEEDLES = {NEEDLES}
_SCAN_CALLS = {CALLS}  # which calls scan (None: every one)
_calls = [0]
_CHUNK = 1 << 20
_SCRATCH = bytearray(_CHUNK + 64)
_VIEW = memoryview(_SCRATCH)
_BUFFERS = frozenset((bytes, bytearray, memoryview, mmap.mmap, _np.ndarray))


def _hit(buf, end, head, tail):
    start = 0
    while True:
        i = buf.find(head, start, end)
        if i < 0:
            return False
        if buf[i + len(head) : i + len(head) + len(tail)] == tail:
            return True
        start = i + 1


def _search(n, found, where):
    # Searches the first n bytes of the scratch buffer, then wipes them.
    for name, (head, tail) in _NEEDLES.items():
        if _hit(_SCRATCH, n, head, tail):
            found.add(name + "@" + where)
    _VIEW[:n] = bytes(n)


def _search_view(view, found, where):
    # A byte view, copied chunk by chunk into the scratch buffer (overlapping by 64 bytes).
    pos = 0
    while pos < len(view):
        n = min(_CHUNK + 64, len(view) - pos)
        _VIEW[:n] = view[pos : pos + n]
        _search(n, found, where)
        pos += _CHUNK


def _scan(phase):
    found = set()
    fd_bytes = 0
    # Every descriptor it holds, and its parent's (the supervisor's stdin holds every case).
    for fd in range(64):
        try:
            if select.select([fd], [], [], 0)[0]:
                n = os.readv(fd, [_VIEW[:_CHUNK]])
                fd_bytes += n
                _search(n, found, "fd")
        except OSError:
            pass
    for n in range(64):
        try:
            parent = os.open("/proc/%d/fd/%d" % (os.getppid(), n), os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            got = os.readv(parent, [_VIEW[:_CHUNK]])
            fd_bytes += got
            _search(got, found, "parent-fd")
        except OSError:
            pass
        finally:
            os.close(parent)
    # Its whole writable memory.
    mem_bytes = regions = 0
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    import ctypes

    # Not dumpable (inherited from the supervisor), and the worker's filter refuses making it
    # so: /proc/self/mem is root's. The process reads its own memory directly instead.
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    try:
        mem = os.open("/proc/self/mem", os.O_RDONLY)
    except PermissionError:
        mem = -1
    scratch = (ctypes.c_char * len(_SCRATCH)).from_buffer(_SCRATCH)
    try:
        for line in maps:
            fields = line.split()
            if len(fields) < 2 or "w" not in fields[1] or line.endswith(("[vvar]", "[vsyscall]")):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            regions += 1
            pos = lo
            while pos < hi:
                size = min(_CHUNK + 64, hi - pos)
                try:
                    if mem < 0:
                        ctypes.memmove(scratch, pos, size)
                        n = size
                    else:
                        n = os.preadv(mem, [_VIEW[:size]], pos)
                except OSError:
                    break
                mem_bytes += n
                _search(n, found, "mem")
                pos += _CHUNK
    finally:
        if mem >= 0:
            os.close(mem)
        del scratch
    # The objects the collector knows (frozen ones too) and what they hold.
    gc.unfreeze()
    objects = 0
    known = gc.get_objects()
    for ref in known + gc.get_referents(*known):
        kind = type(ref)
        if kind not in _BUFFERS or ref is _SCRATCH or ref is _VIEW:
            continue
        try:
            if kind is _np.ndarray:
                if ref.dtype.hasobject:
                    continue
                view = memoryview(_np.ascontiguousarray(ref).reshape(-1).view(_np.uint8))
            else:
                view = memoryview(ref).cast("B")
            objects += 1
            _search_view(view, found, "gc")
        except Exception:
            continue
    print("SCAN %s found=%s mem_bytes=%d regions=%d objects=%d fd_bytes=%d" % (
        phase, ",".join(sorted(found)) or "-", mem_bytes, regions, objects, fd_bytes))


_scan("import")
"""

CALL = """
    _calls[0] += 1
    if _SCAN_CALLS is None or _calls[0] in _SCAN_CALLS:
        _scan("call-%d" % _calls[0])
"""

SCAN_LINE = re.compile(r"SCAN (\S+) found=(\S+) mem_bytes=(\d+) regions=(\d+) objects=(\d+)")


def scanner(needles: dict[str, bytes], calls: set[int] | None = None) -> str:
    """The scanning code; ``calls``: which calls (from 1) scan, by default every one."""
    halves = {name: (n[: len(n) // 2], n[len(n) // 2 :]) for name, n in needles.items()}
    # As hex, split: the source (and its compiled constants) never holds a needle whole.
    pairs = [
        f"{name!r}: (bytes.fromhex({h.hex()!r}), bytes.fromhex({t.hex()!r}))"
        for name, (h, t) in halves.items()
    ]
    text = "{" + ", ".join(pairs) + "}"
    return SCANNER.replace("{NEEDLES}", text).replace("{CALLS}", repr(calls))


def scans(text: str) -> list[tuple[str, set[str]]]:
    """(phase, needles found) of each scan printed in ``text``; checks each scan covered memory."""
    out = []
    for match in SCAN_LINE.finditer(text):
        phase, found, mem_bytes, regions, objects = match.groups()
        assert int(mem_bytes) > 1 << 20 and int(regions) > 5 and int(objects) > 100, match[0]
        out.append((phase, set() if found == "-" else {f.split("@")[0] for f in found.split(",")}))
    return out


def needle(array: np.ndarray) -> bytes:
    data = array.tobytes()
    assert len(data) >= 32
    return data[:32]


def test_each_call_holds_its_own_case_inputs_and_no_other(sandbox: Sandbox) -> None:
    rng = np.random.default_rng(20261129)
    names = ["public-1", "public-2", "hidden-1", "hidden-2", "probe"]
    arrays = {name: rng.standard_normal((8, 8)) for name in names}
    code = scanner({name: needle(a) for name, a in arrays.items()})
    # The output is no copy of an input (which would be a copy of its bytes to find later).
    code += "\n\ndef f(a, n):" + CALL + "    return a * 3.0 + n\n"
    request = phased_request(
        code,
        [(name, arrays[name], not name.startswith("public")) for name in names],
        limits=FAST.model_copy(update={"cpu_seconds": 8, "wall_seconds": 15}),
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    assert scans(result.import_stdout) == [("import", set())], result.stdout
    for n, (name, case) in enumerate(zip(names, result.cases, strict=True), start=1):
        assert case.name == name
        # The same scan finds the current case's inputs (so it works, and can fail), and no
        # other case's: not an earlier one's (wiped) nor a later one's (not laid yet).
        assert scans(case.stdout) == [(f"call-{n}", {name})], result.stdout
        assert case.output is not None and not case.mutated_inputs
        np.testing.assert_array_equal(case.output, arrays[name] * 3.0 + n)


class Recording:
    """A real sandbox that keeps the last RunResult, to look behind what the pipeline shows."""

    def __init__(self, inner: Sandbox) -> None:
        self.inner = inner
        self.name = inner.name
        self.last: RunResult | None = None

    def run(self, request: RunRequest) -> RunResult:
        self.last = self.inner.run(request)
        return self.last


CORRECT = Path(__file__).resolve().parents[1] / "grading" / "corpus" / "correct_reshape.py"


def test_the_student_is_shown_no_hidden_input(
    sandbox: Sandbox, problems: dict[str, Problem]
) -> None:
    problem = problems["multi-head-attention"]
    spec = problem.spec
    probes = problem.diagnostics.probes if problem.diagnostics else ()
    hidden_array = next(v for v in problem.hidden[0].inputs.values() if isinstance(v, np.ndarray))
    probe_array = next(v for v in probes[0].inputs.values() if isinstance(v, np.ndarray))
    needles = {"hidden": needle(hidden_array), "probe": needle(probe_array)}
    for example in problem.examples:  # the needles are truly hidden bytes
        for value in example.inputs.values():
            if isinstance(value, np.ndarray):
                assert not any(n in value.tobytes() for n in needles.values())
    solution = CORRECT.read_text()
    head = f"\ndef {spec.function_name}("
    assert head in solution
    # The reference solution, made to scan at import and at the start of calls: every public
    # one, the first two hidden ones and the first two probes (where a needle is held, and just
    # after, where a copy left behind would show), and the last (scanning all would take longer
    # than the problem's CPU limit).
    examples, hidden = len(problem.examples), len(problem.hidden)
    total = examples + hidden + len(probes) + 1  # the determinism check repeats an example
    calls = {*range(1, examples + 3), examples + hidden + 1, examples + hidden + 2, total}
    signature_end = solution.index(":\n", solution.index(head)) + 2
    code = scanner(needles, calls) + solution[:signature_end] + CALL + solution[signature_end:]
    recording = Recording(sandbox)
    report = grade_submission(problem, code, recording)
    assert report.verdict.value == "accepted", report
    run = recording.last
    assert run is not None
    shown = scans(report.stdout)
    # Import time and every public example are shown, and none of them saw a hidden byte.
    assert [p for p, _ in shown] == ["import"] + [
        f"call-{i}" for i in range(1, len(problem.examples) + 1)
    ], report.stdout
    assert all(found == set() for _, found in shown), report.stdout
    assert report.stdout.endswith(HIDDEN_OUTPUT_NOTE)
    # Behind the scenes each call found exactly the needles its own inputs hold (some probes
    # share an array): the scan works here too, and finds no other case's.
    inputs = {c.name: c.inputs for c in (*problem.examples, *problem.hidden, *probes)}
    again = repeated((*problem.examples, *problem.hidden), probes)
    assert again is not None
    inputs[repeat_name(again[0])] = again[1]
    assert [o.name for o in run.cases] == list(inputs)
    for call, outcome in enumerate(run.cases, start=1):
        held = {
            name
            for name, n in needles.items()
            for value in inputs[outcome.name].values()
            if isinstance(value, np.ndarray) and n in value.tobytes()
        }
        expected = [(f"call-{call}", held)] if call in calls else []
        assert scans(outcome.stdout) == expected, (outcome.name, outcome.stdout)
    # (Both needles were found where held, so the scans can fail.)
    assert "hidden" in scans(run.cases[examples].stdout)[0][1]
    assert "probe" in scans(run.cases[examples + hidden].stdout)[0][1]


def test_a_scanner_that_holds_the_needle_finds_it() -> None:
    """The test's own control: the same scan, run here on the host, finds a needle it is given
    in memory, and finds nothing when it is not."""
    array = np.random.default_rng(3).standard_normal(16)
    code = scanner({"hidden": needle(array)}).replace('_scan("import")\n', "")
    namespace: dict[str, object] = {}
    exec(compile(code, "scanner", "exec"), namespace)
    search = namespace["_search_view"]
    found: set[str] = set()
    search(memoryview(b"x" * 100), found, "t")  # type: ignore[operator]
    assert found == set()
    search(memoryview(b"x" * 100 + array.tobytes() + b"y"), found, "t")  # type: ignore[operator]
    assert found == {"hidden@t"}
    # Across the boundary of two scratch-sized chunks too.
    chunk = namespace["_CHUNK"]
    assert isinstance(chunk, int)
    found.clear()
    search(memoryview(b"x" * (chunk - 20) + array.tobytes()), found, "t")  # type: ignore[operator]
    assert found == {"hidden@t"}


HIJACK = """
import gc

gc.unfreeze()
_worker = next(o for o in gc.get_objects() if type(o).__name__ == "Worker")
_send = _worker.send_json
_held = []


def _hold_first_result(obj, *rest):
    # Keep the public case's result back, to send it once hidden inputs are at hand.
    if obj.get("type") == "case" and obj.get("index") == 0:
        _held.append(obj)
        return None
    return _send(obj, *rest)


_worker.send_json = _hold_first_result


def f(a, n):
    if n == 2 and _held:
        forged = dict(_held[0], output=None)
        forged["error"] = {"type": "Leak", "message": "LEAK:" + a.tobytes().hex(), "traceback": ""}
        _send(forged)
    return a * n
"""


def test_a_public_result_forged_once_hidden_inputs_exist_is_dropped(sandbox: Sandbox) -> None:
    """The submission holds back its public case's result and sends it, carrying a hidden input,
    from the hidden case: the supervisor no longer accepts a result for the public case."""
    hidden = np.random.default_rng(5).standard_normal(4)
    request = phased_request(HIJACK, [("public-1", np.ones(4), False), ("hidden-1", hidden, True)])
    result = sandbox.run(request)
    assert hidden.tobytes().hex() not in visible_text(result)
    assert "LEAK" not in visible_text(result)
    assert [c.name for c in result.cases] == ["hidden-1"]
    assert result.status == "runtime_error", result.message


# Keeps every Q it is given (its first 8 bytes, which tell them apart) and prints all of them at
# every call: were a public case run after a hidden one, its (shown) output would carry them.
HOARDER = """
_hoard = []

def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    _hoard.append(Q.tobytes()[:8].hex())
    print("HOARD", " ".join(_hoard))
    return _solve(Q, K, V, W_q, W_k, W_v, W_o, num_heads)
"""


def test_public_cases_all_run_before_the_first_hidden_one(
    sandbox: Sandbox, problems: dict[str, Problem]
) -> None:
    """The test set is the folder's examples, its hidden cases, then the instructors' stored
    cases (a public one among them): every public case still runs before any hidden one."""
    problem = problems["multi-head-attention"]
    rng = np.random.default_rng(99)
    stored_inputs = {
        name: (rng.standard_normal(value.shape) if isinstance(value, np.ndarray) else value)
        for name, value in problem.examples[0].inputs.items()
    }
    stored = problem.with_expected(
        Case(name="instructor-public", inputs=stored_inputs, visibility="public")
    )
    cases = (*problem.examples, *problem.hidden, stored)
    code = CORRECT.read_text().replace("def multi_head_attention(", "def _solve(") + HOARDER
    recording = Recording(sandbox)
    report = grade_submission(problem, code, recording, cases=cases)
    assert report.verdict.value == "accepted", report
    run = recording.last
    assert run is not None
    public = [*problem.examples, stored]
    assert [o.name for o in run.cases[: len(public)]] == [c.name for c in public]

    # The instructor's public case ran, and what it printed is shown: the public Qs only.
    def prefix(case: Case) -> str:
        q = case.inputs["Q"]
        assert isinstance(q, np.ndarray)
        return q.tobytes()[:8].hex()

    assert f"HOARD {' '.join(prefix(c) for c in public)}\n" in report.stdout
    shown = report.model_dump_json()
    for case in problem.hidden:
        assert prefix(case) not in shown, f"{case.name}'s Q was shown"
        # It really hoarded them: the hidden cases' own (withheld) output holds them.
        assert prefix(case) in run.stdout
