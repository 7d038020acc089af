"""Turns an instructor's case (JSON or .npz) into checked inputs and the reference's output.

Everything is checked before anything is stored; each failure is an ``InvalidCase`` whose field
names the input (``inputs.Q``), ``expected``, or the case field, for a 422 response.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.grading.pipeline import input_bytes, run_limits
from app.problems.cases import (
    Dims,
    Inputs,
    InvalidCase,
    Result,
    output_shapes,
    parts_of,
    with_defaults,
)
from app.problems.hooks import exception_name
from app.problems.loader import Problem
from app.problems.spec import AnyParam, ArrayParam, FloatParam, Tolerance
from app.testcases.warnings import CaseWarning, case_warnings


@dataclass(frozen=True)
class CheckedCase:
    inputs: Inputs
    # The reference's result (an array, or a tuple for several outputs); None when the case
    # requires the function to raise ``raises``.
    expected: Result | None
    dims: Dims
    warnings: list[CaseWarning]
    raises: str | None = None


def _prefixed(exc: InvalidCase, prefix: str) -> InvalidCase:
    return InvalidCase(f"{prefix}.{exc.field}", exc.message)


def array_from_json(
    field: str, value: Any, max_elements: int, dtype: str = "float64"
) -> np.ndarray:
    """Nested lists of numbers -> float64, or of true/false -> bool for a boolean parameter.
    JSON has no float type, so whole numbers are read as floats too (and then warned about as
    integer-valued)."""
    if not isinstance(value, list):
        kind = "true/false values" if dtype == "bool" else "numbers"
        raise InvalidCase(field, f"must be an array (nested lists of {kind})")
    try:
        array = np.array(value)
    except (ValueError, OverflowError):
        raise InvalidCase(field, "is ragged: every row must have the same length") from None
    if array.size > max_elements:
        raise InvalidCase(field, f"has {array.size} elements; the limit is {max_elements}")
    if dtype == "bool":
        if array.dtype.kind != "b" and array.size:
            raise InvalidCase(field, "must hold only true/false (a boolean mask)")
        return array.astype(np.bool_)
    if array.dtype.kind not in "iuf":
        raise InvalidCase(field, "must hold only numbers (no strings, booleans, nulls or objects)")
    return array.astype(np.float64)


def _param(problem: Problem, name: str, what: str) -> AnyParam:
    try:
        return problem.spec.param(name)
    except KeyError:
        names = [p.name for p in problem.spec.params]
        raise InvalidCase(
            f"inputs.{name}", f"unexpected {what}; the signature takes {names}"
        ) from None


def inputs_from_json(problem: Problem, raw: dict[str, Any], max_elements: int) -> Inputs:
    """``null`` (or leaving it out) gives an optional parameter no value."""
    inputs: Inputs = {}
    for name, value in raw.items():
        field = f"inputs.{name}"
        param = _param(problem, name, "input")
        if value is None:
            if not param.optional:
                raise InvalidCase(field, "must not be null: the parameter is not optional")
            inputs[name] = None
        elif isinstance(param, ArrayParam):
            inputs[name] = array_from_json(field, value, max_elements, param.dtype)
        elif isinstance(param, FloatParam):
            # Bounds and finiteness are checked with the signature (bind_dims).
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InvalidCase(field, "must be a number")
            inputs[name] = value
        elif isinstance(value, bool) or not isinstance(value, int):
            raise InvalidCase(field, "must be an integer")
        else:
            inputs[name] = value
    return with_defaults(problem.spec, inputs)


def expected_from_json(problem: Problem, value: Any, max_elements: int) -> Result:
    """One array (nested lists), or for several outputs an object with one array per name."""
    outputs = problem.spec.outputs
    # A bool output's expected values are true/false; every other output's are numbers.
    kind = {o.name: "bool" if o.dtype == "bool" else "float64" for o in outputs}
    if not problem.spec.multiple_outputs:
        return array_from_json("expected", value, max_elements, kind[outputs[0].name])
    names = [o.name for o in outputs]
    if not isinstance(value, dict) or sorted(value) != sorted(names):
        raise InvalidCase("expected", f"must be an object with one array per output {names}")
    return tuple(array_from_json(f"expected.{n}", value[n], max_elements, kind[n]) for n in names)


def inputs_from_npz(
    problem: Problem, arrays: dict[str, np.ndarray]
) -> tuple[Inputs, Result | None]:
    """Split an upload into inputs and an optional expected result: the member ``expected``, or
    for several outputs ``expected.<name>`` for each. An optional parameter left out is None."""
    inputs: Inputs = {}
    spec = problem.spec
    names = [o.name for o in spec.outputs]
    given = {k: arrays.pop(k) for k in list(arrays) if k == "expected" or k.startswith("expected.")}
    for name, array in arrays.items():
        param = _param(problem, name, "member")
        if isinstance(param, ArrayParam):
            inputs[name] = array
        elif isinstance(param, FloatParam):
            if array.ndim != 0 or array.dtype.kind not in "iuf":
                raise InvalidCase(f"inputs.{name}", "must be a 0-d number array (np.float64(1e-5))")
            inputs[name] = float(array)
        elif array.ndim == 0 and array.dtype.kind in "iu":
            inputs[name] = int(array)
        else:
            raise InvalidCase(f"inputs.{name}", "must be a 0-d integer array (np.int64(2))")
    inputs = with_defaults(spec, inputs)
    if not given:
        return inputs, None
    if not spec.multiple_outputs:
        if set(given) != {"expected"}:
            raise InvalidCase("expected", "name the expected output 'expected'")
        return inputs, given["expected"]
    wanted = {f"expected.{n}" for n in names}
    if set(given) != wanted:
        raise InvalidCase("expected", f"give one member per output: {sorted(wanted)}")
    return inputs, tuple(given[f"expected.{n}"] for n in names)


def validate_case(
    problem: Problem,
    inputs: Inputs,
    given_expected: Result | None,
    max_elements: int,
    raises: str | None = None,
) -> CheckedCase:
    for name, value in inputs.items():
        if isinstance(value, np.ndarray) and value.size > max_elements:
            raise InvalidCase(
                f"inputs.{name}", f"has {value.size} elements; the limit is {max_elements}"
            )
    try:
        dims = problem.validate_inputs(inputs)
    except InvalidCase as exc:
        raise _prefixed(exc, "inputs") from None
    need, limit = input_bytes(problem, inputs), run_limits(problem).input_bytes
    if need > limit:
        raise InvalidCase(
            "inputs", f"take {need} bytes in the sandbox (with their layout); the limit is {limit}"
        )
    if raises is not None:
        return _check_raises(problem, inputs, dims, given_expected, raises)
    spec = problem.spec
    try:
        with np.errstate(all="ignore"):
            expected = problem.evaluate(inputs)
    except Exception as exc:  # trusted code, but inputs may still be out of its domain
        raise InvalidCase(
            "inputs",
            f"the reference raised {exception_name(exc)} on these inputs: {exc} (a case that "
            f"requires an exception names it in 'raises')",
        ) from None
    for output, got, want in zip(spec.outputs, expected, output_shapes(spec, dims), strict=True):
        label = f" {output.name}" if spec.multiple_outputs else ""
        if got.shape != want:
            raise InvalidCase(
                "inputs", f"the reference returned{label} shape {got.shape}, not {want}"
            )
        if not np.all(np.isfinite(got)):
            raise InvalidCase(
                "inputs",
                f"the reference's output{label} has NaN or infinity: the values are too large",
            )
    if given_expected is not None:
        for k, (output, given) in enumerate(
            zip(spec.outputs, parts_of(given_expected), strict=True)
        ):
            field = f"expected.{output.name}" if spec.multiple_outputs else "expected"
            _check_given(field, spec.tolerance_of(output), given, expected[k])
    result: Result = expected if spec.multiple_outputs else expected[0]
    return CheckedCase(
        inputs=inputs,
        expected=result,
        dims=dims,
        warnings=case_warnings(problem, inputs, dims, result),
    )


def _check_raises(
    problem: Problem, inputs: Inputs, dims: Dims, given: Result | None, raises: str
) -> CheckedCase:
    if given is not None:
        raise InvalidCase("expected", "a case that requires an exception has no expected output")
    raised = problem.raised_by(inputs)
    if raised != raises:
        did = f"raises {raised}" if raised else "returns normally"
        raise InvalidCase("raises", f"the reference {did} on these inputs, not {raises}")
    return CheckedCase(
        inputs=inputs,
        expected=None,
        dims=dims,
        warnings=case_warnings(problem, inputs, dims, None, raises),
        raises=raises,
    )


def _check_given(field: str, tol: Tolerance, given: np.ndarray, reference: np.ndarray) -> None:
    if given.dtype.kind not in "biuf":
        raise InvalidCase(field, "must hold only numbers")
    given = given.astype(np.float64)
    if given.shape != reference.shape:
        raise InvalidCase(
            field, f"has shape {given.shape} but the reference's output is {reference.shape}"
        )
    if not np.all(np.isfinite(given)):
        raise InvalidCase(field, "contains NaN or infinity")
    if np.allclose(given, reference, rtol=tol.rtol, atol=tol.atol):
        return
    diff = np.abs(given - reference)
    index = np.unravel_index(int(np.argmax(diff)), diff.shape)
    at = tuple(int(i) for i in index)
    raise InvalidCase(
        field,
        f"disagrees with the reference: largest difference {float(diff[index]):.6g} at index "
        f"{list(at)} (given {float(given[index]):.17g}, reference {float(reference[index]):.17g}; "
        f"tolerance rtol={tol.rtol:g}, atol={tol.atol:g})",
    )
