"""Warnings for cases that are valid but weak for diagnosis. They never block a case.

Generic rules, for every problem (documented in docs/problem-authoring.md):

- the problem's own warnings first (``case_warnings(inputs, dims)`` in its ``cases.py``, e.g.
  a single head or a saturated softmax for attention);
- ``unit-dimension``: a symbolic dimension of an array is 1 (except those in ``unit_dims_ok``
  of ``problem.toml``, those a problem warning already speaks for, and the axes of a variadic
  group such as ``*lead``);
- ``integer-valued``: a float input holds only whole numbers: exact arithmetic hides float32
  work, and ties make different mistakes agree;
- ``misses-faults``: some known mistakes of the problem's error model give the right answer on
  this case, so a student who makes only those mistakes passes it. Mistakes that most of the
  problem's built-in cases miss too are left out: they need a dedicated case (an unstable
  softmax only shows on huge scores).
"""

from __future__ import annotations

import threading

import numpy as np

from app.problems.cases import Dims, Inputs, Result, TestCase, parts_of
from app.problems.hooks import CaseWarning, exception_name
from app.problems.loader import Problem
from app.problems.spec import ArrayParam

__all__ = ["CaseWarning", "case_warnings"]


def case_warnings(
    problem: Problem,
    inputs: Inputs,
    dims: Dims,
    expected: Result | None,
    raises: str | None = None,
) -> list[CaseWarning]:
    found: list[CaseWarning] = list(problem.warnings_hook(inputs, dims))
    covered = {dim for w in found for dim in w.about} | set(problem.spec.unit_dims_ok)
    # Dimensions of arrays only: an int parameter (an axis, a head count) is not a size.
    sizes = {d for p in problem.spec.params if isinstance(p, ArrayParam) for d in p.shape}
    # A variadic group (*lead) is left out: size-1 leading axes are how arrays broadcast.
    for dim, size in dims.items():
        if isinstance(size, int) and size == 1 and dim in sizes and dim not in covered:
            found.append(
                CaseWarning(code="unit-dimension", message=f"{dim} = 1: a size-1 dimension.")
            )
    whole = [
        name
        for name, value in inputs.items()
        if isinstance(value, np.ndarray)
        and value.dtype.kind == "f"
        and value.size
        and bool(np.all(value == np.round(value)))
    ]
    if whole:
        found.append(
            CaseWarning(
                code="integer-valued",
                message=f"Only whole numbers in {', '.join(whole)}: exact arithmetic hides "
                f"low-precision work and ties make different mistakes agree.",
            )
        )
    case = TestCase("case", inputs, expected=expected, raises=raises)
    special = _special_purpose(problem)
    missed = [c for c in _missed_faults(problem, case) if c not in special]
    if missed:
        found.append(
            CaseWarning(
                code="misses-faults",
                message=f"These mistakes give the right answer on this case: {', '.join(missed)}.",
            )
        )
    return found


def _missed_faults(problem: Problem, case: TestCase) -> list[str]:
    diagnostics = problem.diagnostics
    if diagnostics is None:
        return []
    spec = problem.spec
    missed: list[str] = []
    model = diagnostics.error_model
    for code in model.faults:
        for flag in model.flags(code):
            try:
                with np.errstate(all="ignore"):
                    got = problem.evaluate(case.inputs, frozenset({flag}))
            except Exception as exc:  # a fault that cannot run on these shapes is not missed...
                if exception_name(exc) == case.raises:  # ...unless raising is the right answer
                    missed.append(code)
                    break
                continue
            if case.raises is not None or case.expected is None:
                continue
            want = parts_of(case.expected)
            if len(got) == len(want) and all(
                g.shape == w.shape
                and np.allclose(
                    g, w, rtol=spec.tolerance_of(o).rtol, atol=spec.tolerance_of(o).atol
                )
                for o, g, w in zip(spec.outputs, got, want, strict=True)
            ):
                missed.append(code)
                break
    return missed


_special: dict[int, tuple[Problem, frozenset[str]]] = {}
_special_lock = threading.Lock()


def _special_purpose(problem: Problem) -> frozenset[str]:
    """Faults most of the problem's own cases miss: they need a dedicated case (e.g. an
    unstable softmax shows only on huge scores), so missing them is no fault of a case."""
    with _special_lock:
        cached = _special.get(id(problem))
        if cached is not None and cached[0] is problem:
            return cached[1]
    cases = problem.examples + problem.hidden
    counts: dict[str, int] = {}
    for case in cases:
        for code in _missed_faults(problem, case):
            counts[code] = counts.get(code, 0) + 1
    found = frozenset(code for code, n in counts.items() if 2 * n > len(cases))
    with _special_lock:
        _special[id(problem)] = (problem, found)
    return found
