"""What a submission prints while a hidden case runs never reaches the student's report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from app.grading.pipeline import HIDDEN_OUTPUT_NOTE, grade_submission
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.pool import WarmPoolSandbox
from sandbox.protocol import Sandbox

CORRECT = (Path(__file__).parent / "corpus" / "correct_reshape.py").read_text()

# Prints every input in full (exact hex of the bytes, and a readable rendering), and a marker
# from a thread that keeps printing after the call returned.
LEAKY = (
    CORRECT.replace("def multi_head_attention(", "def _solve(")
    + """
import sys, threading
print("IMPORT-TIME-LINE")
_seen = []

def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    _seen.append(Q)
    print("CALL", Q.tobytes().hex(), np.array2string(Q, precision=17, threshold=10**9))
    print("ERR", K.tobytes().hex(), file=sys.stderr)
    threading.Thread(target=lambda q=Q: print("LATE", q.tobytes().hex()), daemon=True).start()
    return _solve(Q, K, V, W_q, W_k, W_v, W_o, num_heads)
"""
)


@pytest.fixture(scope="module", params=["cold", "warm"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """The real bwrap sandbox, started per run (cold) and from the warm pool."""
    if request.param == "cold":
        yield BwrapSandbox()
        return
    pool = WarmPoolSandbox(BwrapSandbox(), size=1)
    yield pool
    pool.close()


def test_hidden_inputs_printed_by_the_submission_are_not_shown(mha: Problem, sandbox: Sandbox):
    report = grade_submission(mha, LEAKY, sandbox)
    assert report.verdict == Verdict.ACCEPTED, report.error
    shown = report.stdout + report.stderr + (report.error or "")
    assert mha.hidden
    for case in mha.hidden:
        for name in ("Q", "K"):
            value = case.inputs[name]
            assert isinstance(value, np.ndarray)
            assert value.tobytes().hex() not in shown, f"{case.name}.{name} leaked"
            # No element rendered in full either (the readable form of the array).
            assert np.array2string(value.ravel()[:1], precision=17)[1:-1].strip() not in shown
    assert HIDDEN_OUTPUT_NOTE.strip() in report.stdout
    assert HIDDEN_OUTPUT_NOTE.strip() in report.stderr


def test_import_time_and_public_example_output_is_shown(mha: Problem, sandbox: Sandbox):
    report = grade_submission(mha, LEAKY, sandbox)
    assert report.stdout.startswith("IMPORT-TIME-LINE\n")
    assert mha.examples
    for case in mha.examples:
        q, k = case.inputs["Q"], case.inputs["K"]
        assert isinstance(q, np.ndarray) and isinstance(k, np.ndarray)
        assert f"CALL {q.tobytes().hex()}" in report.stdout
        assert f"ERR {k.tobytes().hex()}" in report.stderr


def test_examples_only_run_shows_everything_it_printed(mha: Problem, sandbox: Sandbox):
    report = grade_submission(mha, LEAKY, sandbox, public_only=True)
    for case in mha.examples:
        q = case.inputs["Q"]
        assert isinstance(q, np.ndarray)
        assert f"CALL {q.tobytes().hex()}" in report.stdout
    # The probes still run along, and they are not the student's examples.
    assert HIDDEN_OUTPUT_NOTE.strip() in report.stdout


def _printing(public: str, hidden: str) -> str:
    """The correct solution, printing ``public`` (an expression) in the public examples and
    ``hidden`` in every later call (the examples are the two first calls)."""
    return (
        CORRECT.replace("def multi_head_attention(", "def _solve(")
        + f"""
import sys
_calls = [0]

def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    _calls[0] += 1
    text = {public} if _calls[0] <= 2 else {hidden}
    sys.stdout.write(text)
    sys.stderr.write(text)
    return _solve(Q, K, V, W_q, W_k, W_v, W_o, num_heads)
"""
    )


@pytest.mark.parametrize("public", ['""', '"x" * 40000'])
def test_whether_hidden_cases_printed_changes_nothing_shown(
    mha: Problem, sandbox: Sandbox, public: str
):
    """Silent hidden cases and hidden cases that flood past the cap give the same report
    output: the note and the cut flags depend on the public output only (two public calls of
    40 000 bytes reach the 64 KiB cap; silent ones reach nothing)."""
    quiet = grade_submission(mha, _printing(public, '""'), sandbox)
    loud = grade_submission(mha, _printing(public, "Q.tobytes().hex()[:4000]"), sandbox)
    for report in (quiet, loud):
        assert report.verdict == Verdict.ACCEPTED, report.error
    fields = ("stdout", "stderr", "stdout_truncated", "stderr_truncated")
    assert [getattr(quiet, f) for f in fields] == [getattr(loud, f) for f in fields]
    assert quiet.stdout_truncated == (public != '""')


def _hanging(on_call: int) -> str:
    """The correct solution that prints each call's Q in full, then spins forever in call
    ``on_call`` (the examples are the two first calls; later ones are hidden)."""
    return (
        CORRECT.replace("def multi_head_attention(", "def _solve(")
        + f"""
_calls = [0]

def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    _calls[0] += 1
    print("CALL", _calls[0], Q.tobytes().hex(), flush=True)
    while _calls[0] == {on_call}:
        pass
    return _solve(Q, K, V, W_q, W_k, W_v, W_o, num_heads)
"""
    )


def test_a_public_example_that_hangs_shows_what_it_printed(mha: Problem, sandbox: Sandbox):
    report = grade_submission(mha, _hanging(2), sandbox)
    assert report.verdict == Verdict.TIME_LIMIT_EXCEEDED, report.error
    q = mha.examples[1].inputs["Q"]
    assert isinstance(q, np.ndarray)
    assert "CALL 1 " in report.stdout
    assert f"CALL 2 {q.tobytes().hex()}" in report.stdout


def test_a_hidden_case_that_hangs_shows_nothing_it_printed(mha: Problem, sandbox: Sandbox):
    report = grade_submission(mha, _hanging(3), sandbox)
    assert report.verdict == Verdict.TIME_LIMIT_EXCEEDED, report.error
    # The examples' output is shown, then only the note: not the hidden call's line.
    assert "CALL 1 " in report.stdout and "CALL 2 " in report.stdout
    assert "CALL 3" not in report.stdout + report.stderr + (report.error or "")
    for case in mha.hidden:
        value = case.inputs["Q"]
        assert isinstance(value, np.ndarray)
        assert value.tobytes().hex() not in report.stdout
    assert report.stdout.endswith(HIDDEN_OUTPUT_NOTE)
