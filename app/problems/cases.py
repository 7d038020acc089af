"""Test cases: named inputs for a problem's entry point, checked against its signature."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from app.problems.spec import ArrayParam, ProblemSpec, is_symbolic

Visibility = Literal["public", "hidden"]
# An array (float64 or bool), an int, or None for an omitted optional parameter.
InputValue = np.ndarray | int | None
Inputs = dict[str, InputValue]
# What the function returns: one array, or a tuple of arrays when the problem names several
# outputs (in the order of ``returns``).
Result = np.ndarray | tuple[np.ndarray, ...]


class CaseError(ValueError):
    """A case does not fit the signature; ``field`` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class TestCase:
    name: str
    inputs: Inputs
    visibility: Visibility = "hidden"
    weight: float = 1.0
    # Filled in by the reference when the problem is loaded; never taken from a submission.
    expected: Result | None = field(default=None, compare=False)
    # The exception type (its name, e.g. "ValueError") the function must raise on these inputs;
    # such a case has no expected output.
    raises: str | None = None


def parts_of(result: Result) -> tuple[np.ndarray, ...]:
    """A result as a tuple of arrays, one per output."""
    return result if isinstance(result, tuple) else (result,)


def bind_dims(spec: ProblemSpec, inputs: Inputs) -> dict[str, int]:
    """Check ``inputs`` against the signature and return the size of every symbolic dimension.

    An optional parameter may be absent or None. Raises ``CaseError`` naming the first input
    that is missing, mistyped or inconsistent.
    """
    expected_names = [p.name for p in spec.params]
    for name in inputs:
        if name not in expected_names:
            raise CaseError(name, f"unexpected input; the signature takes {expected_names}")
    dims: dict[str, int] = {}
    for param in spec.params:
        if param.name not in inputs and not param.optional:
            raise CaseError(param.name, "missing")
        value = inputs.get(param.name)
        if value is None:
            if not param.optional:
                raise CaseError(param.name, "must not be null: the parameter is not optional")
            continue
        if isinstance(param, ArrayParam):
            _bind_array(param, value, dims)
        else:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise CaseError(param.name, "must be an integer")
            if not param.minimum <= int(value) <= param.maximum:
                raise CaseError(param.name, f"must be between {param.minimum} and {param.maximum}")
            dims[param.name] = int(value)
    return dims


def _bind_array(param: ArrayParam, value: object, dims: dict[str, int]) -> None:
    if not isinstance(value, np.ndarray):
        raise CaseError(param.name, "must be an array")
    if value.dtype != np.dtype(param.dtype):
        raise CaseError(param.name, f"must be {param.dtype}, got {value.dtype}")
    if value.ndim != len(param.shape):
        raise CaseError(
            param.name,
            f"must have {len(param.shape)} dimensions {tuple(param.shape)}, "
            f"got shape {value.shape}",
        )
    for axis, (dim, size) in enumerate(zip(param.shape, value.shape, strict=True)):
        if not is_symbolic(dim):
            if size != int(dim):
                raise CaseError(param.name, f"axis {axis} must be {dim}, got {size}")
        elif dims.setdefault(dim, size) != size:
            raise CaseError(
                param.name,
                f"axis {axis} ({dim}) is {size} but another input gives {dim}={dims[dim]}",
            )
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        raise CaseError(param.name, "contains NaN or infinity")


def _sizes(shape: Sequence[str], dims: dict[str, int]) -> tuple[int, ...]:
    unbound = [d for d in shape if is_symbolic(d) and d not in dims]
    if unbound:
        raise CaseError("inputs", f"no input gives the size of {unbound}")
    return tuple(dims[d] if is_symbolic(d) else int(d) for d in shape)


def output_shapes(spec: ProblemSpec, dims: dict[str, int]) -> list[tuple[int, ...]]:
    """The shape of every output, in the order of ``returns``."""
    return [_sizes(o.shape, dims) for o in spec.outputs]


def expected_shape(spec: ProblemSpec, dims: dict[str, int]) -> tuple[int, ...]:
    """The first (for most problems, the only) output's shape."""
    return output_shapes(spec, dims)[0]
