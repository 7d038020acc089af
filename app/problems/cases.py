"""Test cases: named inputs for a problem's entry point, checked against its signature."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from app.problems.spec import (
    ArrayParam,
    FloatParam,
    IntParam,
    ProblemSpec,
    is_symbolic,
    is_variadic,
)

Visibility = Literal["public", "hidden"]
# An array (float64 or bool), an int, a float, or None for an omitted optional parameter.
InputValue = np.ndarray | int | float | None
Inputs = dict[str, InputValue]
# What the function returns: one array, or a tuple of arrays when the problem names several
# outputs (in the order of ``returns``).
Result = np.ndarray | tuple[np.ndarray, ...]
# The size of every symbolic dimension by name ("n_q": 3), and the sizes of every variadic group
# under its starred name ("*lead": (2, 4)); an int parameter is bound under its own name.
Dims = dict[str, int | tuple[int, ...]]


class InvalidCase(ValueError):
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


def bind_dims(spec: ProblemSpec, inputs: Inputs) -> Dims:
    """Check ``inputs`` against the signature and return the size of every symbolic dimension.

    An optional parameter may be absent or None. Raises ``InvalidCase`` naming the first input
    that is missing, mistyped or inconsistent.
    """
    expected_names = [p.name for p in spec.params]
    for name in inputs:
        if name not in expected_names:
            raise InvalidCase(name, f"unexpected input; the signature takes {expected_names}")
    dims: Dims = {}
    origin: dict[str, str] = {}  # which input bound each dimension first, for the messages
    for param in spec.params:
        if param.name not in inputs and not param.optional:
            raise InvalidCase(param.name, "missing")
        value = inputs.get(param.name)
        if value is None:
            if not param.optional:
                raise InvalidCase(param.name, "must not be null: the parameter is not optional")
            continue
        if isinstance(param, ArrayParam):
            _bind_array(param, value, dims, origin)
        elif isinstance(param, FloatParam):
            _check_float(param, value)
        else:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise InvalidCase(param.name, "must be an integer")
            if not param.minimum <= int(value) <= param.maximum:
                raise InvalidCase(
                    param.name, f"must be between {param.minimum} and {param.maximum}"
                )
            dims[param.name] = int(value)
    return dims


def _check_float(param: FloatParam, value: object) -> None:
    # A whole number is a fine value of a float parameter ("eps": 1 in JSON); a bool is not.
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidCase(param.name, "must be a number")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidCase(param.name, "must be a finite number (not NaN or infinity)")
    if not param.minimum <= number <= param.maximum:
        raise InvalidCase(param.name, f"must be between {param.minimum:g} and {param.maximum:g}")


def with_defaults(spec: ProblemSpec, inputs: Inputs) -> Inputs:
    """``inputs`` as the function receives them: a float parameter's value as a Python float,
    and its default where the case leaves it out (so a stored case never depends on a default
    that a later edit of problem.toml changes). Anything else is left for ``bind_dims``."""
    out = dict(inputs)
    for param in spec.params:
        value = out.get(param.name)
        if isinstance(param, FloatParam):
            if param.name not in out and param.default is not None:
                out[param.name] = param.default
            elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(
                value, bool
            ):
                out[param.name] = float(value)
        elif isinstance(param, IntParam) and isinstance(value, np.integer):
            out[param.name] = int(value)
    return out


def _bind_array(param: ArrayParam, value: object, dims: Dims, origin: dict[str, str]) -> None:
    if not isinstance(value, np.ndarray):
        raise InvalidCase(param.name, "must be an array")
    if value.dtype != np.dtype(param.dtype):
        raise InvalidCase(param.name, f"must be {param.dtype}, got {value.dtype}")
    shape = param.shape
    group = next((i for i, d in enumerate(shape) if is_variadic(d)), None)
    fixed = len(shape) - (group is not None)
    if group is None and value.ndim != fixed:
        raise InvalidCase(
            param.name,
            f"must have {fixed} dimensions {tuple(shape)}, got shape {value.shape}",
        )
    if group is not None and value.ndim < fixed:
        raise InvalidCase(
            param.name,
            f"must have at least {fixed} dimensions ({', '.join(shape)}), got shape {value.shape}",
        )
    # Each declared entry with the axes it covers: one axis, or a group's run of axes.
    width = value.ndim - fixed
    axis = 0
    for dim in shape:
        span = width if is_variadic(dim) else 1
        sizes = tuple(int(n) for n in value.shape[axis : axis + span])
        where = f"axes {axis}..{axis + span - 1}" if span > 1 else f"axis {axis}"
        if is_variadic(dim):
            bound = dims.setdefault(dim, sizes)
            if bound != sizes:
                raise InvalidCase(
                    param.name,
                    f"{dim} is {sizes} ({where if span else 'no axes'}) but {origin[dim]} "
                    f"gives {dim}={bound}",
                )
        elif not is_symbolic(dim):
            if sizes[0] != int(dim):
                raise InvalidCase(param.name, f"{where} must be {dim}, got {sizes[0]}")
        else:
            bound = dims.setdefault(dim, sizes[0])
            if bound != sizes[0]:
                raise InvalidCase(
                    param.name,
                    f"{where} ({dim}) is {sizes[0]} but another input gives {dim}={bound}",
                )
        origin.setdefault(dim, param.name)
        axis += span
    if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
        raise InvalidCase(param.name, "contains NaN or infinity")


def _sizes(shape: Sequence[str], dims: Dims) -> tuple[int, ...]:
    unbound = [d for d in shape if is_symbolic(d) and d not in dims]
    if unbound:
        raise InvalidCase("inputs", f"no input gives the size of {unbound}")
    sizes: list[int] = []
    for dim in shape:
        size = dims[dim] if is_symbolic(dim) else int(dim)
        sizes.extend(size if isinstance(size, tuple) else (size,))
    return tuple(sizes)


def broadcastable(field: str, shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    """For a problem's ``check_case``: raise ``InvalidCase`` on ``field`` unless an array of
    ``shape`` broadcasts to ``target`` without growing it (a mask to the scores' shape)."""
    ok = len(shape) <= len(target) and all(
        n in (1, m) for n, m in zip(shape[::-1], target[::-1], strict=False)
    )
    if not ok:
        raise InvalidCase(field, f"shape {shape} does not broadcast to {target}")


def output_shapes(spec: ProblemSpec, dims: Dims) -> list[tuple[int, ...]]:
    """The shape of every output, in the order of ``returns``."""
    return [_sizes(o.shape, dims) for o in spec.outputs]


def expected_shape(spec: ProblemSpec, dims: Dims) -> tuple[int, ...]:
    """The first (for most problems, the only) output's shape."""
    return output_shapes(spec, dims)[0]
