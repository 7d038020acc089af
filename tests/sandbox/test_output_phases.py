"""Every backend attributes what a submission prints to when it printed it: while importing, or
while (or after) a given case ran; never to an earlier phase than the one it was printed in."""

from __future__ import annotations

import numpy as np

from sandbox.protocol import Sandbox
from tests.sandbox.helpers import run

PRINTER = """
import sys, threading, time
print("import-out")
print("import-err", file=sys.stderr)

def f(a, n):
    print(f"case-out {n}")
    print(f"case-err {n}", file=sys.stderr)
    # A thread that prints after the call returned: attributed to this case or a later one.
    threading.Thread(target=lambda: (time.sleep(0.05), print(f"late {n}")), daemon=True).start()
    return a * n
"""


def test_output_is_attributed_to_import_time_and_to_each_case(sandbox: Sandbox) -> None:
    cases: list[dict[str, np.ndarray | int]] = [{"a": np.ones(2), "n": n} for n in range(3)]
    result = run(sandbox, PRINTER, cases=cases)
    assert result.status == "ok", result.message
    assert result.import_stdout == "import-out\n"
    assert result.import_stderr == "import-err\n"
    for n, case in enumerate(result.cases):
        assert case.stdout.startswith(f"case-out {n}\n"), case.stdout
        assert case.stderr == f"case-err {n}\n"
        # Nothing of a later case ever shows up under an earlier one.
        for later in range(n + 1, 3):
            assert f" {later}" not in case.stdout + case.stderr
    late = "".join(c.stdout for c in result.cases)
    assert "late 0" not in result.import_stdout
    # The whole capture is still there, in order, for operators.
    assert result.stdout.startswith("import-out\ncase-out 0\n")
    assert "late 2" not in result.cases[0].stdout + result.cases[1].stdout
    assert late.count("case-out") == 3


def test_output_of_a_crashed_run_is_attributed_too(sandbox: Sandbox) -> None:
    code = (
        "import os, sys\nprint('before')\n"
        "def f(a, n):\n    print('secret', n, flush=True)\n    os._exit(3)\n"
    )
    result = run(sandbox, code, cases=[{"a": np.ones(2), "n": 7}])
    assert result.status == "runtime_error"
    assert result.import_stdout == "before\n"
    assert "secret" not in result.import_stdout
    assert "secret 7" in result.stdout  # kept for operators; the grader shows only import time


def test_attribution_is_synchronised_up_to_the_first_hidden_case() -> None:
    """Cases before the first hidden one travel in the early section (each waits for the
    supervisor's acknowledgement); that case and every later one, public or not, in the later
    section, of which only the first waits."""
    import io

    from sandbox.protocol import CaseArgs, RunRequest
    from sandbox.runner import read_job
    from sandbox.wire import encode_job

    args: dict[str, np.ndarray | int] = {"a": np.ones(2), "n": 1}
    request = RunRequest(
        code="",
        function_name="f",
        param_names=["a", "n"],
        cases=[
            CaseArgs(name="public-1", args=args),
            CaseArgs(name="public-2", args=args),
            CaseArgs(name="hidden-1", args=args, hidden=True),
            CaseArgs(name="public-late", args=args),
            CaseArgs(name="probe", args=args, hidden=True),
        ],
    )
    job = read_job(io.BytesIO(encode_job(request)))
    assert len(job["header"]["cases"]) == 2
    assert job["header"]["later"]["cases"] == 3 and len(job["later"]["cases"]) == 3


def test_a_public_case_after_a_hidden_one_runs_in_the_later_section(sandbox: Sandbox) -> None:
    from tests.sandbox.helpers import phased_request

    code = "def f(a, n):\n    print('case', n)\n    return a * n\n"
    request = phased_request(
        code,
        [
            ("public-1", np.ones(2), False),
            ("hidden-1", np.ones(3), True),
            ("public-late", np.ones(4), False),
            ("probe", np.ones(5), True),
        ],
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message
    assert [c.name for c in result.cases] == ["public-1", "hidden-1", "public-late", "probe"]
    for n, case in enumerate(result.cases, start=1):
        assert case.output is not None
        np.testing.assert_array_equal(case.output, np.ones(n + 1) * n)
    # After the first hidden case there is no round trip: what the later cases print lands in
    # the hidden case's phase or theirs, never in an earlier one.
    assert result.import_stdout == "" and result.cases[0].stdout == "case 1\n"
    assert "".join(c.stdout for c in result.cases[1:]) == "case 2\ncase 3\ncase 4\n"
    assert result.cases[1].stdout.startswith("case 2\n")
