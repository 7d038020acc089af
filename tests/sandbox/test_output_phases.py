"""Every backend attributes what a submission prints to when it printed it: while importing, or
while (or after) a given case ran; never to an earlier phase than the one it was printed in."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from sandbox.protocol import CaseArgs, RunRequest, Sandbox
from tests.sandbox.helpers import FAST, phased_request, run

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


HIDDEN_PRINTER = """
import os, sys, threading, time

_kept = []


def f(a, n):
    print("case", n)
    if n >= 2:
        # Hidden from here on: print every way that could come out later or elsewhere.
        text = "HIDDEN-%d " % n + a.tobytes().hex()
        sys.stdout = open(1, "w", buffering=1 << 20, closefd=False)  # flushed at exit
        print(text)
        print(text, file=sys.stderr)
        os.write(2, (text + "\\n").encode())
        threading.Thread(target=lambda: (time.sleep(0.05), print(text, flush=True))).start()
        if os.fork() == 0:  # a child that prints after its parent has moved on
            time.sleep(0.1)
            os.write(1, (text + " child\\n").encode())
            os._exit(0)
    return a * n
"""


def test_nothing_printed_once_a_hidden_case_started_lands_in_a_public_phase(
    sandbox: Sandbox,
) -> None:
    """Buffered and flushed later, from a thread, from a child, on both streams: whatever a
    hidden case prints is attributed to a hidden case, never to import time or a public case."""
    from tests.sandbox.helpers import phased_request

    hidden = np.random.default_rng(11).standard_normal(4)
    request = phased_request(
        HIDDEN_PRINTER,
        [("public-1", np.ones(2), False), ("hidden-1", hidden, True), ("probe", hidden, True)],
    )
    result = sandbox.run(request)
    assert result.status == "ok", result.message + result.stderr
    assert result.import_stdout == result.import_stderr == ""
    assert result.cases[0].stdout == "case 1\n" and result.cases[0].stderr == ""
    # The hidden text was printed (operators see all of it), only never in a public phase.
    assert "HIDDEN-2" in result.stdout and "HIDDEN-2" in result.stderr
    assert hidden.tobytes().hex() in "".join(c.stdout + c.stderr for c in result.cases[1:])


def test_a_hidden_case_named_like_a_public_one_is_refused() -> None:
    """Printed text and outcomes are matched to cases by name: were a hidden case named like a
    public one accepted, what it printed (its inputs) would be shown as the public case's."""
    args: dict[str, np.ndarray | int] = {"a": np.ones(2), "n": 1}
    with pytest.raises(ValidationError, match="same name"):
        RunRequest(
            code=PRINTER,
            function_name="f",
            param_names=["a", "n"],
            cases=[
                CaseArgs(name="example", args=args),
                CaseArgs(name="example", args=args, hidden=True),
            ],
        )


HANGS = """
import sys, time
print("import-out")

def f(a, n):
    print(f"before-hang {n}", flush=True)
    print(f"err-before-hang {n}", file=sys.stderr, flush=True)
    if n == 2:
        {hang}
    return a * n
"""
SPIN = "while True: pass"
SLEEP = "time.sleep(60)"


@pytest.mark.parametrize("hang", [SPIN, SLEEP], ids=["cpu-limit", "wall-clock-limit"])
def test_what_a_public_case_printed_before_a_timeout_is_kept(sandbox: Sandbox, hang: str):
    limits = FAST.model_copy(update={"cpu_seconds": 1.0, "wall_seconds": 2.0})
    request = phased_request(
        HANGS.replace("{hang}", hang),
        [("first", np.ones(2), False), ("second", np.ones(2), False)],
        limits=limits,
    )
    result = sandbox.run(request)
    assert result.status == "time_limit_exceeded", result.message
    assert result.import_stdout == "import-out\n"
    assert [c.stdout for c in result.cases] == ["before-hang 1\n"]
    # The case it hung in never reported; what it printed first is kept.
    assert result.unfinished_stdout == "before-hang 2\n"
    assert result.unfinished_stderr == "err-before-hang 2\n"


@pytest.mark.parametrize("hang", [SPIN, SLEEP], ids=["cpu-limit", "wall-clock-limit"])
def test_nothing_printed_in_a_hidden_case_survives_its_timeout(sandbox: Sandbox, hang: str):
    limits = FAST.model_copy(update={"cpu_seconds": 1.0, "wall_seconds": 2.0})
    request = phased_request(
        HANGS.replace("{hang}", hang),
        [("public", np.ones(2), False), ("hidden", np.ones(2), True)],
        limits=limits,
    )
    result = sandbox.run(request)
    assert result.status == "time_limit_exceeded", result.message
    assert [c.stdout for c in result.cases] == ["before-hang 1\n"]
    assert result.unfinished_stdout == result.unfinished_stderr == ""
    assert "before-hang 2" not in result.import_stdout + result.cases[0].stdout
