"""Test cases: named inputs for a problem's entry point, checked against its signature."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from app.problems.spec import ArrayParam, ProblemSpec, is_symbolic

Visibility = Literal["public", "hidden"]
InputValue = np.ndarray | int
Inputs = dict[str, InputValue]


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
    expected: np.ndarray | None = field(default=None, compare=False)


def bind_dims(spec: ProblemSpec, inputs: Inputs) -> dict[str, int]:
    """Check ``inputs`` against the signature and return the size of every symbolic dimension.

    Raises ``CaseError`` naming the first input that is missing, mistyped or inconsistent.
    """
    expected_names = [p.name for p in spec.params]
    for name in inputs:
        if name not in expected_names:
            raise CaseError(name, f"unexpected input; the signature takes {expected_names}")
    dims: dict[str, int] = {}
    for param in spec.params:
        if param.name not in inputs:
            raise CaseError(param.name, "missing")
        value = inputs[param.name]
        if isinstance(param, ArrayParam):
            if not isinstance(value, np.ndarray):
                raise CaseError(param.name, "must be an array")
            if value.dtype != np.float64:
                raise CaseError(param.name, f"must be float64, got {value.dtype}")
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
            if not np.all(np.isfinite(value)):
                raise CaseError(param.name, "contains NaN or infinity")
        else:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise CaseError(param.name, "must be an integer")
            if not param.minimum <= int(value) <= param.maximum:
                raise CaseError(param.name, f"must be between {param.minimum} and {param.maximum}")
            dims[param.name] = int(value)
    return dims


def expected_shape(spec: ProblemSpec, dims: dict[str, int]) -> tuple[int, ...]:
    return tuple(dims[d] if is_symbolic(d) else int(d) for d in spec.returns.shape)
