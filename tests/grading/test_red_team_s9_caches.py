"""A hostile student against the host's caches: a test set's calls (``app.grading.calls``) and
their encoded sections (``sandbox.wire.SECTIONS``) are reused by every run on it, and output
headers are parsed once per distinct byte string (``sandbox.wire``). Nothing one run does may
change what a later run is sent or how its outputs are read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from app.assignments.cases import personal
from app.grading.calls import CALLS
from app.grading.pipeline import build_request, grade_submission
from app.grading.verdicts import Verdict
from app.problems.loader import Problem
from sandbox import wire
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.forkserver import ForkServerSandbox

pytestmark = pytest.mark.timeout(180)

CORRECT = (Path(__file__).parent / "corpus" / "correct_reshape.py").read_text()

# Writes over every array it is given (and keeps a view to write again in later calls), then
# returns nothing useful.
MUTATOR = """
import numpy as np

_kept = []


def multi_head_attention(Q, K, V, W_q, W_k, W_v, W_o, num_heads):
    for a in (Q, K, V, W_q, W_k, W_v, W_o):
        _kept.append(a)
    for a in _kept:
        try:
            a[...] = 12345.0
        except ValueError:
            pass
    return np.zeros(Q.shape)
"""


@pytest.fixture(scope="module")
def forked() -> Iterator[ForkServerSandbox]:
    server = ForkServerSandbox(BwrapSandbox())
    try:
        assert server.wait_ready()
        yield server
    finally:
        server.close()


def test_a_run_that_writes_over_its_inputs_changes_no_later_run_s_job(
    mha: Problem, forked: ForkServerSandbox
) -> None:
    """The cached calls and sections are shared by every run on the test set: a submission
    that writes over each input it is given (through the shared region's views) leaves the
    host's arrays, the cached sections and so the next submission's job exactly as they were,
    and the next (correct) submission is accepted."""
    cases = mha.examples + mha.hidden
    before = wire.encode_job(build_request(mha, CORRECT, cases))
    arrays = [
        (v, v.copy()) for case in cases for v in case.inputs.values() if isinstance(v, np.ndarray)
    ]
    report = grade_submission(mha, MUTATOR, forked)
    assert report.verdict != Verdict.ACCEPTED
    assert any("in place" in (t.message or "") for t in report.tests if t.visibility == "public"), (
        "the control: the submission did write over its inputs"
    )
    request = build_request(mha, CORRECT, cases)
    for case in request.cases:
        spec, blob = wire.case_section(case, request.param_names)
        assert type(spec) is bytes and type(blob) is bytes  # nothing can write into them
    assert wire.encode_job(request) == before
    for live, copy in arrays:
        np.testing.assert_array_equal(live, copy)
    CALLS.clear()
    wire.SECTIONS.clear()
    assert wire.encode_job(build_request(mha, CORRECT, cases)) == before
    assert grade_submission(mha, CORRECT, forked).verdict == Verdict.ACCEPTED


def _npy(dtype: str, shape: tuple[int, ...], body: bytes) -> bytes:
    header = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + body


@pytest.fixture
def header_table() -> Iterator[None]:
    """The process's table of parsed headers, as it was before the test filled it."""
    saved = dict(wire._LAYOUTS)
    yield
    wire._LAYOUTS.clear()
    wire._LAYOUTS.update(saved)


@pytest.mark.usefixtures("header_table")
def test_output_headers_seen_before_never_change_how_a_later_output_is_read() -> None:
    """Output headers are parsed once and kept by their bytes, for the life of the process:
    a run that fills the table with every shape it likes, or that sent a header with bytes
    that do not match it, changes nothing of how a later run's outputs are read (a later
    output is read from its own header and checked against its own length)."""
    for n in range(700):  # far past the table's size: the table is full from here on
        blob = _npy("<f8", (n, 1), np.zeros(n).tobytes())
        out = wire._load_plain_npy(blob)
        assert out is not None and out.shape == (n, 1)
    # The same header bytes with too few or too many data bytes: never read as that shape.
    header_of = _npy("<f8", (3, 1), b"")
    assert wire._load_plain_npy(header_of + np.zeros(2).tobytes()) is None
    assert wire._load_plain_npy(header_of + np.zeros(4).tobytes()) is None
    # A header seen for the first time once the table is full is still read exactly.
    value = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = wire._load_plain_npy(_npy("<i4", (3, 4), value.tobytes()))
    assert got is not None and got.dtype == np.int32
    np.testing.assert_array_equal(got, value)
    # A header that is not a plain one is left to np.load, seen once or many times.
    odd = _npy("<f8", (2,), np.zeros(2).tobytes()).replace(b"False", b"True ")
    assert wire._load_plain_npy(odd) is None and wire._load_plain_npy(odd) is None


def test_one_student_s_cached_calls_are_never_another_s(mha: Problem) -> None:
    """Per-student hidden cases go through the same caches: once one student's calls and
    sections are cached, another student's job (same problem, same test set version, same
    case names) holds only that student's own hidden inputs, exactly as encoded from scratch;
    and the first student's job is served from the cache unchanged."""
    assert mha.hidden_from_seed is not None
    base = mha.examples + mha.hidden
    first = personal(base, mha, 1111)
    second = personal(base, mha, 2222)
    job_first = wire.encode_job(build_request(mha, CORRECT, first))
    job_second = wire.encode_job(build_request(mha, CORRECT, second))
    hidden_first = {c.name: c for c in first if c.visibility == "hidden"}
    assert hidden_first
    for case in second:
        if case.visibility != "hidden":
            continue
        mine, theirs = case.inputs["Q"], hidden_first[case.name].inputs["Q"]
        assert isinstance(mine, np.ndarray) and isinstance(theirs, np.ndarray)
        assert not np.array_equal(mine, theirs)  # the control: the sets differ
        assert np.ascontiguousarray(theirs).tobytes() not in job_second
        assert np.ascontiguousarray(mine).tobytes() in job_second
    assert wire.encode_job(build_request(mha, CORRECT, first)) == job_first
    CALLS.clear()
    wire.SECTIONS.clear()
    assert wire.encode_job(build_request(mha, CORRECT, second)) == job_second
    assert wire.encode_job(build_request(mha, CORRECT, first)) == job_first
