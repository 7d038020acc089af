"""The runner's protocol through real sandboxes: outputs, per-case errors, compile errors."""

from __future__ import annotations

import numpy as np
import pytest

from app.problems.loader import Problem
from sandbox.protocol import CaseArgs, RunRequest, Sandbox
from tests.sandbox.helpers import FAST, run

pytestmark = pytest.mark.timeout(60)


def test_correct_solution_outputs_match_the_reference_outside(
    sandbox: Sandbox, mha: Problem
) -> None:
    reference_code = (mha.directory / "reference.py").read_text()
    cases = [*mha.examples, *mha.hidden]
    request = RunRequest(
        code=reference_code,
        function_name=mha.spec.function_name,
        param_names=[p.name for p in mha.spec.params],
        cases=[CaseArgs(name=c.name, args=c.inputs) for c in cases],
        limits=FAST,
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message
    assert [c.name for c in result.cases] == [c.name for c in cases]
    for outcome, case in zip(result.cases, cases, strict=True):
        assert outcome.error is None
        assert outcome.mutated_inputs == []
        assert outcome.output is not None and outcome.output.dtype == np.float64
        np.testing.assert_array_equal(outcome.output, mha.solve(case.inputs))
        assert outcome.seconds >= 0
    assert 0 < result.wall_seconds < FAST.wall_seconds


def test_stdout_and_stderr_are_captured(sandbox: Sandbox) -> None:
    code = (
        "import sys\ndef f(a, n):\n"
        "    print('to out', n)\n    print('to err', file=sys.stderr)\n    return a\n"
    )
    result = run(sandbox, code)
    assert result.status == "ok"
    assert result.stdout == "to out 2\n"
    assert result.stderr == "to err\n"
    assert not result.stdout_truncated and not result.stderr_truncated


def test_fresh_inputs_per_case_and_mutation_reported(sandbox: Sandbox) -> None:
    code = """
def f(a, n):
    seen = float(a[0, 0])
    a[0, 0] = 99.0
    return a * 0 + seen
"""
    a = np.arange(6.0).reshape(2, 3)
    result = run(sandbox, code, cases=[{"a": a, "n": 1}, {"a": a, "n": 2}])
    assert result.status == "ok"
    for outcome in result.cases:
        assert outcome.mutated_inputs == ["a"]
        assert outcome.output is not None
        # Each call saw the original value, not the previous call's write.
        assert outcome.output[0, 0] == 0.0


def test_in_place_reshape_counts_as_mutation(sandbox: Sandbox) -> None:
    result = run(sandbox, "def f(a, n):\n    a.shape = (3, 2)\n    return a.copy()\n")
    assert result.status == "ok"
    assert result.cases[0].mutated_inputs == ["a"]


def test_monkeypatched_numpy_cannot_hide_a_mutation(sandbox: Sandbox) -> None:
    code = """
import hashlib
import numpy as np

def _same(*args, **kwargs):
    return True

for name in ("array_equal", "allclose", "array_equiv", "shares_memory", "may_share_memory"):
    setattr(np, name, _same)
np.copy = lambda x, *a, **k: x
np.asarray = lambda x, *a, **k: x
np.frombuffer = lambda *a, **k: np.zeros(1)
hashlib.blake2b = lambda *a, **k: hashlib.md5(b"")

def f(a, n):
    a += 1.0
    return np.array(a)
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    assert result.cases[0].mutated_inputs == ["a"]


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("def f(a, n:\n    return a\n", "SyntaxError"),
        ("import not_a_module_tj\ndef f(a, n):\n    return a\n", "not_a_module_tj"),
        ("def g(a, n):\n    return a\n", "no function named 'f'"),
        ("f = 3\n", "not a function"),
    ],
    ids=["syntax", "import", "missing", "not-callable"],
)
def test_compile_errors(sandbox: Sandbox, code: str, needle: str) -> None:
    result = run(sandbox, code)
    assert result.status == "compile_error"
    assert needle in result.message
    assert result.cases == []


def test_raise_at_import_is_a_runtime_error(sandbox: Sandbox) -> None:
    result = run(sandbox, "x = 1 / 0\ndef f(a, n):\n    return a\n")
    assert result.status == "runtime_error"
    assert "ZeroDivisionError" in result.message


def test_per_case_exception_with_trimmed_traceback(sandbox: Sandbox) -> None:
    code = """
import numpy as np

def helper(a):
    return a.reshape(7, 7)

def f(a, n):
    if n == 2:
        return helper(a)
    return a
"""
    a = np.ones((2, 3))
    result = run(sandbox, code, cases=[{"a": a, "n": 1}, {"a": a, "n": 2}])
    assert result.status == "ok"  # a raising case is graded, not a failed run
    assert result.cases[0].error is None
    err = result.cases[1].error
    assert err is not None and err.type == "ValueError"
    assert "cannot reshape" in err.message
    assert 'File "submission.py", line 5, in helper' in err.traceback
    assert "return a.reshape(7, 7)" in err.traceback
    assert "worker.py" not in err.traceback and "numpy" not in err.traceback.split("\n")[1]


@pytest.mark.parametrize(
    ("returned", "needle"),
    [
        ("None", "returned NoneType"),
        ("(a, a)", "returned tuple"),
        ("[1.0, 2.0]", "returned list"),
        ("np.float64(1.0)", "numpy.float64"),
        ("np.array(['x'])", "dtype <U1"),
        ("np.array([object()], dtype=object)", "dtype object"),
        ("np.zeros(2, dtype=[('x', 'f8')])", "dtype"),
        ("a.view(Sub)", "subclass of numpy.ndarray"),
        ("np.ma.masked_array(a)", "subclass of numpy.ndarray"),
    ],
    ids=["none", "tuple", "list", "scalar", "str", "object", "structured", "subclass", "masked"],
)
def test_non_array_results_are_a_clear_per_case_error(
    sandbox: Sandbox, returned: str, needle: str
) -> None:
    code = f"""
import numpy as np

class Sub(np.ndarray):
    def __array_finalize__(self, obj):
        pass

def f(a, n):
    return {returned}
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    err = result.cases[0].error
    assert err is not None and err.type == "InvalidOutput"
    assert needle in err.message
    assert result.cases[0].output is None


def test_numeric_dtypes_come_back_as_they_are(sandbox: Sandbox) -> None:
    code = (
        "import numpy as np\n"
        "def f(a, n):\n    return np.asfortranarray(a).astype(np.float32)[:, ::2]\n"
    )
    result = run(sandbox, code)
    out = result.cases[0].output
    assert out is not None and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.arange(6.0, dtype=np.float32).reshape(2, 3)[:, ::2])


def test_int_argument_and_empty_arrays(sandbox: Sandbox) -> None:
    result = run(
        sandbox, "def f(a, n):\n    return a[:0] + n\n", cases=[{"a": np.ones((0, 4)), "n": 5}]
    )
    out = result.cases[0].output
    assert out is not None and out.shape == (0, 4)
