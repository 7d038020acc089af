"""A submission that hunts its own process for the hidden cases' inputs finds nothing before the
first hidden case starts (while what it prints is shown to the student), and finds them with the
same scan once it runs a hidden case (so the scan works and this test can fail).

The scan reads every file descriptor it can (its own and its supervisor's), the objects the
garbage collector knows and their referents (bytes, bytearrays, arrays, mmaps), and every
writable mapping of /proc/self/maps through /proc/self/mem. The needles are split in two halves
held apart, so the scanner never holds a needle whole itself: a hit means the process held it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from app.grading.pipeline import HIDDEN_OUTPUT_NOTE, grade_submission
from app.problems.loader import Problem
from sandbox.protocol import RunRequest, RunResult, Sandbox
from tests.sandbox.helpers import FAST, phased_request, visible_text

pytestmark = pytest.mark.timeout(180)

SCANNER = """
import gc, os, select, sys
import numpy as _np

_NEEDLES = {NEEDLES}
_calls = [0]


def _hit(buf, head, tail):
    start = 0
    while True:
        i = buf.find(head, start)
        if i < 0:
            return False
        if buf[i + len(head) : i + len(head) + len(tail)] == tail:
            return True
        start = i + 1


def _search(buf, found, where):
    for name, (head, tail) in _NEEDLES.items():
        try:
            if _hit(buf, head, tail):
                found.add(name + "@" + where)
        except Exception:
            pass


def _scan(phase):
    found = set()
    fd_bytes = 0
    # Every descriptor it holds, and its parent's (the supervisor's stdin holds the later section).
    paths = ["/proc/%d/fd/%s" % (os.getppid(), n) for n in range(64)]
    for fd in range(64):
        try:
            if select.select([fd], [], [], 0)[0]:
                data = os.read(fd, 1 << 20)
                fd_bytes += len(data)
                _search(data, found, "fd")
        except OSError:
            pass
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read(1 << 20)
            fd_bytes += len(data)
            _search(data, found, "parent-fd")
        except OSError:
            pass
    # Its whole writable memory.
    mem_bytes = regions = 0
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    try:
        mem = os.open("/proc/self/mem", os.O_RDONLY)
    except PermissionError:  # not dumpable (inherited from the supervisor): make it so
        import ctypes

        ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        mem = os.open("/proc/self/mem", os.O_RDONLY)
    try:
        for line in maps:
            fields = line.split()
            if len(fields) < 2 or "w" not in fields[1] or line.endswith(("[vvar]", "[vsyscall]")):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            regions += 1
            pos = lo
            while pos < hi:
                size = min(1 << 20, hi - pos)
                try:
                    chunk = os.pread(mem, size + 64 if pos + size < hi else size, pos)
                except OSError:
                    break
                mem_bytes += len(chunk)
                _search(chunk, found, "mem")
                pos += size
    finally:
        os.close(mem)
    # The objects the collector knows (frozen ones too) and what they hold.
    gc.unfreeze()
    objects = 0
    for obj in gc.get_objects():
        try:
            referents = gc.get_referents(obj)
        except Exception:
            continue
        for ref in [obj, *referents]:
            try:
                if isinstance(ref, (bytes, bytearray)):
                    buf = ref
                elif isinstance(ref, _np.ndarray):
                    buf = ref.tobytes()
                elif type(ref).__name__ in ("mmap", "memoryview"):
                    buf = bytes(ref)
                else:
                    continue
            except Exception:
                continue
            objects += 1
            _search(buf, found, "gc")
    print("SCAN %s found=%s mem_bytes=%d regions=%d objects=%d fd_bytes=%d" % (
        phase, ",".join(sorted(found)) or "-", mem_bytes, regions, objects, fd_bytes))


_scan("import")
"""

CALL = """
    _calls[0] += 1
    _scan("call-%d" % _calls[0])
"""

SCAN_LINE = re.compile(r"SCAN (\S+) found=(\S+) mem_bytes=(\d+) regions=(\d+) objects=(\d+)")


def scanner(needles: dict[str, bytes]) -> str:
    halves = {name: (n[: len(n) // 2], n[len(n) // 2 :]) for name, n in needles.items()}
    # As hex, split: the source (and its compiled constants) never holds a needle whole.
    pairs = [
        f"{name!r}: (bytes.fromhex({h.hex()!r}), bytes.fromhex({t.hex()!r}))"
        for name, (h, t) in halves.items()
    ]
    text = "{" + ", ".join(pairs) + "}"
    return SCANNER.replace("{NEEDLES}", text)


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


def test_hidden_inputs_are_out_of_reach_until_the_first_hidden_case(sandbox: Sandbox) -> None:
    rng = np.random.default_rng(20261129)
    public, hidden, probe = (rng.standard_normal((8, 8)) for _ in range(3))
    code = scanner({"hidden": needle(hidden), "probe": needle(probe)})
    code += "\n\ndef f(a, n):" + CALL + "    return a * n\n"
    request = phased_request(
        code,
        [("public-1", public, False), ("hidden-1", hidden, True), ("probe", probe, True)],
        limits=FAST.model_copy(update={"cpu_seconds": 8, "wall_seconds": 15}),
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    by_phase = {
        "import": scans(result.import_stdout),
        "public-1": scans(result.cases[0].stdout),
        "hidden-1": scans(result.cases[1].stdout),
    }
    assert by_phase["import"] == [("import", set())], result.stdout
    assert by_phase["public-1"] == [("call-1", set())], result.stdout
    # The same scan, once the first hidden case holds its inputs: both later cases' inputs are
    # laid by then.
    assert by_phase["hidden-1"] == [("call-2", {"hidden", "probe"})], result.stdout
    for case, array, n in zip(result.cases, (public, hidden, probe), (1, 2, 3), strict=True):
        assert case.output is not None and not case.mutated_inputs
        np.testing.assert_array_equal(case.output, array * n)


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
    # The reference solution, made to scan at import and at the start of every call.
    signature_end = solution.index(":\n", solution.index(head)) + 2
    code = scanner(needles) + solution[:signature_end] + CALL + solution[signature_end:]
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
    # Behind the scenes, the first hidden case's scan found them: the scan works here too.
    first_hidden = run.cases[len(problem.examples)]
    assert first_hidden.name == problem.hidden[0].name
    assert scans(first_hidden.stdout)[0][1] == {"hidden", "probe"}, first_hidden.stdout


def test_a_scanner_that_holds_the_needle_finds_it() -> None:
    """The test's own control: the same scan, run here on the host, finds a needle it is given
    in memory, and finds nothing when it is not."""
    array = np.random.default_rng(3).standard_normal(16)
    code = scanner({"hidden": needle(array)}).replace('_scan("import")\n', "")
    namespace: dict[str, object] = {}
    exec(compile(code, "scanner", "exec"), namespace)
    search = namespace["_search"]
    found: set[str] = set()
    search(b"x" * 100, found, "t")  # type: ignore[operator]
    assert found == set()
    search(b"x" * 100 + array.tobytes() + b"y", found, "t")  # type: ignore[operator]
    assert found == {"hidden@t"}


HIJACK = """
import gc

gc.unfreeze()
_worker = next(o for o in gc.get_objects() if type(o).__name__ == "_Worker")
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
