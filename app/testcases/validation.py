"""Turns an instructor's case (JSON or .npz) into checked inputs and the reference's output.

Everything is checked before anything is stored; each failure is a ``CaseError`` whose field
names the input (``inputs.Q``), ``expected``, or the case field, for a 422 response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.problems.cases import CaseError, Inputs, expected_shape
from app.problems.loader import Problem
from app.problems.spec import ArrayParam
from app.testcases.warnings import CaseWarning, case_warnings


@dataclass(frozen=True)
class CheckedCase:
    inputs: Inputs
    expected: np.ndarray
    dims: dict[str, int]
    warnings: list[CaseWarning]


def _prefixed(exc: CaseError, prefix: str) -> CaseError:
    return CaseError(f"{prefix}.{exc.field}", exc.message)


def array_from_json(field: str, value: Any, max_elements: int) -> np.ndarray:
    """Nested lists of numbers -> float64. JSON has no float type, so whole numbers are read as
    floats too (and then warned about as integer-valued)."""
    if not isinstance(value, list):
        raise CaseError(field, "must be an array (nested lists of numbers)")
    try:
        array = np.array(value)
    except (ValueError, OverflowError):
        raise CaseError(field, "is ragged: every row must have the same length") from None
    if array.size > max_elements:
        raise CaseError(field, f"has {array.size} elements; the limit is {max_elements}")
    if array.dtype.kind not in "iuf":
        raise CaseError(field, "must hold only numbers (no strings, booleans, nulls or objects)")
    return array.astype(np.float64)


def inputs_from_json(problem: Problem, raw: dict[str, Any], max_elements: int) -> Inputs:
    inputs: Inputs = {}
    for name, value in raw.items():
        field = f"inputs.{name}"
        try:
            param = problem.spec.param(name)
        except KeyError:
            names = [p.name for p in problem.spec.params]
            raise CaseError(field, f"unexpected input; the signature takes {names}") from None
        if isinstance(param, ArrayParam):
            inputs[name] = array_from_json(field, value, max_elements)
        elif isinstance(value, bool) or not isinstance(value, int):
            raise CaseError(field, "must be an integer")
        else:
            inputs[name] = value
    return inputs


def inputs_from_npz(
    problem: Problem, arrays: dict[str, np.ndarray]
) -> tuple[Inputs, np.ndarray | None]:
    """Split an upload into inputs and an optional ``expected`` member."""
    inputs: Inputs = {}
    expected = arrays.pop("expected", None)
    for name, array in arrays.items():
        try:
            param = problem.spec.param(name)
        except KeyError:
            names = [p.name for p in problem.spec.params]
            raise CaseError(
                f"inputs.{name}", f"unexpected member; the signature takes {names}"
            ) from None
        if isinstance(param, ArrayParam):
            inputs[name] = array
        elif array.ndim == 0 and array.dtype.kind in "iu":
            inputs[name] = int(array)
        else:
            raise CaseError(f"inputs.{name}", "must be a 0-d integer array (np.int64(2))")
    return inputs, expected


def check_case(
    problem: Problem, inputs: Inputs, given_expected: np.ndarray | None, max_elements: int
) -> CheckedCase:
    for name, value in inputs.items():
        if isinstance(value, np.ndarray) and value.size > max_elements:
            raise CaseError(
                f"inputs.{name}", f"has {value.size} elements; the limit is {max_elements}"
            )
    try:
        dims = problem.validate_inputs(inputs)
    except CaseError as exc:
        raise _prefixed(exc, "inputs") from None
    try:
        with np.errstate(all="ignore"):
            expected = problem.solve(inputs)
    except Exception as exc:  # trusted code, but inputs may still be out of its domain
        raise CaseError("inputs", f"the reference failed on these inputs: {exc}") from None
    want = expected_shape(problem.spec, dims)
    if expected.shape != want:
        raise CaseError("inputs", f"the reference returned shape {expected.shape}, not {want}")
    if not np.all(np.isfinite(expected)):
        raise CaseError(
            "inputs", "the reference's output has NaN or infinity: the values are too large"
        )
    if given_expected is not None:
        _check_given(problem, given_expected, expected)
    return CheckedCase(
        inputs=inputs,
        expected=expected,
        dims=dims,
        warnings=case_warnings(problem, inputs, dims, expected),
    )


def _check_given(problem: Problem, given: np.ndarray, reference: np.ndarray) -> None:
    if given.dtype.kind not in "iuf":
        raise CaseError("expected", "must hold only numbers")
    given = given.astype(np.float64)
    if given.shape != reference.shape:
        raise CaseError(
            "expected", f"has shape {given.shape} but the reference's output is {reference.shape}"
        )
    if not np.all(np.isfinite(given)):
        raise CaseError("expected", "contains NaN or infinity")
    tol = problem.spec.tolerance
    if np.allclose(given, reference, rtol=tol.rtol, atol=tol.atol):
        return
    diff = np.abs(given - reference)
    index = np.unravel_index(int(np.argmax(diff)), diff.shape)
    at = tuple(int(i) for i in index)
    raise CaseError(
        "expected",
        f"disagrees with the reference: largest difference {float(diff[index]):.6g} at index "
        f"{list(at)} (given {float(given[index]):.17g}, reference {float(reference[index]):.17g}; "
        f"tolerance rtol={tol.rtol:g}, atol={tol.atol:g})",
    )
