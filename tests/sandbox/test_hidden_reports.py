"""What the sandbox reports of a hidden case is chosen outside the submission's process: an
outcome category, what the supervisor saw change, and the supervisor's own clock. Each attack
below writes a hidden input into one channel the submission's process controls (exception
names, messages and tracebacks, the report frames themselves, the shape it returns, the clock,
its exit code) and checks that the channel no longer reaches the host, on every backend; then
that nothing of it reaches the student's report either.
"""

from __future__ import annotations

import numpy as np
import pytest

from app.grading.compare import HIDDEN_WORDING, compare_cases
from app.grading.pipeline import grade_submission
from app.problems.cases import TestCase as Case
from app.problems.loader import Problem
from app.problems.spec import Tolerance
from sandbox.inside.errors import HIDDEN_ERROR_TYPES
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import FAST, phased_request, visible_text

# Each hidden call (n >= 2) pushes ``LEAK<first 8 input bytes, hex>`` out through one channel.
LEAKER = """
import gc, sys, time, traceback
import numpy as np

_worker = next(o for o in gc.get_objects() if type(o).__name__ == "Worker")
_send = _worker.send_json


def _secret(a):
    return "LEAK" + a.tobytes()[:8].hex()


def f(a, n):
    s = _secret(a)
    if n == 1:  # public: its details are the student's to see
        raise KeyError("public detail " + s)
    if n == 2:  # a class whose name is the secret, raising the secret
        cls = type(s, (Exception,), {"__module__": s})
        cls.__qualname__ = s
        raise cls(s)
    if n == 3:  # every way the traceback is worded, replaced
        traceback.StackSummary.format = lambda self: [s + "\\\\n"]
        traceback.format_exception_only = lambda *a, **k: [s + "\\\\n"]
        for mod in list(sys.modules.values()):
            if hasattr(mod, "describe") and hasattr(mod, "Worker"):
                mod.describe = lambda exc: {"type": s, "message": s, "traceback": s}
                mod.type_name = lambda obj: s
        raise ValueError(s)
    if n == 4:  # the report frame itself, forged: an error, reshaped inputs, a time
        _send({"type": "case", "index": 3, "error": {"type": s, "message": s, "traceback": s},
               "mutated_inputs": ["a", "n"], "seconds": 1234.5, "output": None})
        return a
    if n == 5:  # the shape of an empty output
        return np.zeros((0, 100000 + int(s[4:8], 16)))
    if n == 6:  # a return value whose type name is the secret
        return type(s, (), {"__module__": s})()
    if n == 7:  # a clock of its own, and a real (slow) call
        time.perf_counter = time.monotonic = time.time = lambda: 1e9
        _sleep(0.3)
        return a
    if n == 8:  # a real in-place change, found by the supervisor, not by the worker's word
        a[0] = 0.0
        return a
    return a


_sleep = time.sleep
"""

CHANNELS = 8


def hidden_arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(1313)
    return [rng.standard_normal(6) for _ in range(CHANNELS)]


def secret(array: np.ndarray) -> str:
    return "LEAK" + array.tobytes()[:8].hex()


def test_a_hidden_case_is_reported_as_a_category_whatever_the_submission_writes(
    sandbox: Sandbox,
) -> None:
    arrays = hidden_arrays()
    cases = [("public-1", arrays[0], False)]
    cases += [(f"hidden-{n}", arrays[n - 1], True) for n in range(2, CHANNELS + 1)]
    request = phased_request(LEAKER, cases, limits=FAST.model_copy(update={"wall_seconds": 8}))
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    by_name = {c.name: c for c in result.cases}
    assert list(by_name) == [name for name, _, _ in cases]

    # The public case keeps every detail.
    public = by_name["public-1"].error
    assert public is not None and public.type == "KeyError"
    assert secret(arrays[0]) in public.message and secret(arrays[0]) in public.traceback

    hidden = [by_name[f"hidden-{n}"] for n in range(2, CHANNELS + 1)]
    for case in hidden:
        if case.error is not None:
            assert case.error.type in HIDDEN_ERROR_TYPES
            assert case.error.message == case.error.traceback == ""
        assert 0 <= case.seconds < FAST.wall_seconds
    errors = {c.name: c.error.type if c.error else None for c in hidden}
    assert errors["hidden-2"] == errors["hidden-3"] == "Exception"
    assert errors["hidden-6"] == "InvalidOutput"
    # The forged frame stands for the case (it came first), but only as a category.
    assert errors["hidden-4"] == "Exception" and by_name["hidden-4"].output is None
    # Only the supervisor's own check names reshaped inputs, and it still finds a real change.
    assert [c.mutated_inputs for c in hidden] == [[]] * 6 + [["a"]]
    # The time is the supervisor's: the slow call took its 0.3 s, whatever its clock said.
    assert 0.3 <= by_name["hidden-7"].seconds < 3.0
    text = visible_text(result)
    for array in arrays[1:]:
        assert secret(array) not in text


def test_a_hidden_case_s_exit_code_is_not_reported(sandbox: Sandbox) -> None:
    code = "import os\n\ndef f(a, n):\n    if n == 2:\n        os._exit(123)\n    return a\n"
    request = phased_request(code, [("public-1", np.ones(2), False), ("hidden", np.ones(2), True)])
    result = sandbox.run(request)
    assert result.status == "runtime_error"
    assert "123" not in result.message and "during a hidden test" in result.message


@pytest.mark.timeout(120)
def test_the_student_s_report_carries_nothing_of_the_hidden_phase(
    sandbox: Sandbox, problems: dict[str, Problem]
) -> None:
    """The same channels through the whole grader, on the real problem: the report (what the
    API returns and the page shows) has no hidden input byte, shape, message or time."""
    problem = problems["multi-head-attention"]
    code = (
        LEAKER.replace("def f(a, n):", "def _f(a, n):")
        + """
_calls = [0]


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    _calls[0] += 1
    n = _calls[0] - 1  # the two public examples run first: hidden calls are n >= 2
    if n < 2:
        return np.zeros(Q.shape)
    result = _f(Q.reshape(-1), n)
    return result if n != 4 else np.zeros(Q.shape)
"""
    )
    report = grade_submission(problem, code, sandbox)
    shown = report.model_dump_json()
    assert "LEAK" not in shown and "1234" not in shown
    for case in problem.hidden:
        q = case.inputs["Q"]
        assert isinstance(q, np.ndarray)
        assert q.tobytes()[:8].hex() not in shown
        assert str(100000 + int(q.tobytes()[:2].hex(), 16)) not in shown
    hidden = [t for t in report.tests if t.visibility == "hidden"]
    assert len(hidden) == len(problem.hidden)
    for t in hidden:
        assert t.actual_shape is None and t.seconds is None
        assert t.status == "passed" or t.message in HIDDEN_WORDING.values()
    assert report.error is not None and "hidden test" in report.error
    assert all(v == round(v, 2) for v in report.timings.values())


# Expected-error cases: f(a, n) raises on every call but the last, each time something else.
RAISER = """
import builtins
import numpy as np


class ValueError(builtins.ValueError):  # the submission's own, named and built like the real one
    pass


def f(a, n):
    secret = "LEAK" + a.tobytes()[:8].hex()
    if n == 1:  # public: the student may read what it raised
        raise ValueError("public")
    if n == 2:
        raise builtins.ValueError("a real one")
    if n == 3:
        raise ValueError("the submission's own")
    if n == 4:  # a type whose name is the secret
        raise type(secret, (builtins.ValueError,), {"__module__": secret})(secret)
    if n == 5:
        raise np.linalg.LinAlgError(secret)
    return a
"""

# (name, hidden, the type the case requires, the error type the sandbox reports, the outcome)
# A subclass meets the type it derives from; on a hidden case it is named by its nearest listed
# base, never by its own (the submission's) name.
RAISING = [
    ("public-fake", False, "ValueError", "submission.ValueError", "passed"),
    ("real", True, "ValueError", "ValueError", "passed"),
    ("fake", True, "ValueError", "ValueError", "passed"),
    ("secret-name", True, "TypeError", "ValueError", "failed"),
    ("linalg", True, "numpy.linalg.LinAlgError", "numpy.linalg.LinAlgError", "passed"),
    ("returns", True, "ValueError", None, "failed"),
]


def test_a_hidden_expected_error_is_judged_on_an_allowed_type_name_only(
    sandbox: Sandbox,
) -> None:
    """The host must know whether a hidden case raised the type it requires, but the worker's
    type name is the submission's text: only a short list of standard names leaves the sandbox,
    so the submission's own ``ValueError`` subclass is reported by its listed base (and meets
    a required ValueError, as any subclass does), and a name it makes up never reaches the
    host, let alone the student."""
    arrays = [np.full(3, float(i)) + 0.25 for i in range(len(RAISING))]
    request = phased_request(
        RAISER, [(name, a, hidden) for (name, hidden, *_), a in zip(RAISING, arrays, strict=True)]
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    reported = [c.error.type if c.error else None for c in result.cases]
    assert reported == [r[3] for r in RAISING]
    for array in arrays[1:]:
        assert secret(array) not in visible_text(result)

    cases = [
        Case(name, {"a": a, "n": n}, "hidden" if hidden else "public", raises=raises)
        for n, ((name, hidden, raises, *_), a) in enumerate(zip(RAISING, arrays, strict=True), 1)
    ]
    reports = compare_cases(cases, result, Tolerance(rtol=1e-7, atol=1e-9))
    assert [r.status for r in reports] == [r[4] for r in RAISING]
    # The hidden ones that fail say only the grader's fixed wording.
    assert reports[0].message == "raised ValueError, as required"
    hidden = reports[1:]
    assert [r.message for r in hidden if r.status != "passed"] == [
        HIDDEN_WORDING["error"],
        HIDDEN_WORDING["not_raised"],
    ]
    shown = "".join(r.model_dump_json() for r in hidden)
    assert "LEAK" not in shown and "submission" not in shown
