"""A run that fails before any case, graded through the real sandbox: each kind of failure has its
own headline (a missing function is not "does not compile") and the line it points to."""

from __future__ import annotations

import pytest

from app.grading.pipeline import grade_submission
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from sandbox.protocol import Sandbox

SIGNATURE = "def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):\n"


@pytest.mark.parametrize(
    ("code", "verdict", "kind", "title", "message", "line"),
    [
        (
            "import numpy as np\n\n\n" + SIGNATURE.rstrip(":\n") + "\n    return Q\n",
            Verdict.COMPILE_ERROR,
            "syntax_error",
            "Syntax error on line 4",
            "SyntaxError: expected ':'",
            4,
        ),
        (
            "import numpy as np\nimport no_such_module\n",
            Verdict.COMPILE_ERROR,
            "import_error",
            "Import error on line 2",
            "ModuleNotFoundError: No module named 'no_such_module'",
            2,
        ),
        (
            "import numpy as np\n\n\ndef multi_head_attn(Q):\n    return Q\n",
            Verdict.COMPILE_ERROR,
            "missing_function",
            "No function named multi_head_attention",
            "the submission defines no function named 'multi_head_attention'",
            None,
        ),
        (
            "multi_head_attention = 3\n",
            Verdict.COMPILE_ERROR,
            "not_callable",
            "multi_head_attention is not a function",
            "'multi_head_attention' is a int, not a function",
            None,
        ),
        (
            "x = 1\nSCALE = np.sqrt(2)\n" + SIGNATURE + "    return Q\n",
            Verdict.RUNTIME_ERROR,
            "raised_on_import",
            "Error while loading your code on line 2",
            "NameError: name 'np' is not defined",
            2,
        ),
    ],
    ids=["syntax", "import", "missing", "not-callable", "raised"],
)
def test_each_failure_before_any_case_is_named_with_its_line(
    mha: Problem,
    bwrap: Sandbox,
    code: str,
    verdict: Verdict,
    kind: str,
    title: str,
    message: str,
    line: int | None,
) -> None:
    report = grade_submission(mha, code, bwrap)
    assert report.verdict == verdict
    failure = report.load_failure
    assert failure is not None
    assert (failure.kind, failure.title, failure.message, failure.line) == (
        kind,
        title,
        message,
        line,
    )
    assert all(t.status == "error" for t in report.tests)


def test_a_run_that_loads_has_no_load_failure(mha: Problem, bwrap: Sandbox) -> None:
    code = "import numpy as np\n\n\n" + SIGNATURE + "    raise ValueError('not yet')\n"
    report = grade_submission(mha, code, bwrap)
    assert report.verdict == Verdict.RUNTIME_ERROR
    assert report.load_failure is None
