"""The shape of ``problem.toml``: validated on load so a bad folder fails start-up loudly."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    model_validator,
)

Slug = Annotated[str, StringConstraints(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=64)]
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
# A symbolic dimension name ("batch", "d_model"), a fixed size, or a variadic group ("*lead"):
# any number of axes (0 or more), the same sizes wherever the same group appears.
Dim = Annotated[str, StringConstraints(pattern=r"^(\*?[A-Za-z_][A-Za-z0-9_]*|[0-9]+)$")]


class StrictModel(BaseModel):
    """A section of a problem file: unknown keys are errors, values are read-only."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def _one_group(shape: list[str]) -> list[str]:
    groups = [d for d in shape if is_variadic(d)]
    if len(groups) > 1:
        raise ValueError(f"at most one variadic group (*name) per shape, got {groups}")
    return shape


Shape = Annotated[list[Dim], Field(min_length=1, max_length=8), AfterValidator(_one_group)]


class ArrayParam(StrictModel):
    name: Identifier
    kind: Literal["array"]
    shape: Shape
    # A boolean array (a mask) stays boolean end to end: in cases, on the wire, in the call.
    dtype: Literal["float64", "bool"] = "float64"
    # An optional parameter may be None (``mask=None``); its dimensions then bind nothing.
    optional: bool = False


class IntParam(StrictModel):
    name: Identifier
    kind: Literal["int"]
    minimum: int = 1
    maximum: int = 1024
    optional: bool = False
    # The default the student's function declares (``axis=-1``), shown in the signature; cases
    # still give every value.
    default: int | None = None

    @model_validator(mode="after")
    def _default_in_bounds(self) -> IntParam:
        if self.default is not None and not self.minimum <= self.default <= self.maximum:
            raise ValueError(f"default {self.default} is outside [{self.minimum}, {self.maximum}]")
        return self


class FloatParam(StrictModel):
    """A real number (``eps``, a temperature, a dropout rate), finite, within the bounds; the
    function receives a Python ``float``. With a ``default``, a case may leave it out (the
    default is then stored with the case and passed explicitly)."""

    name: Identifier
    kind: Literal["float"]
    minimum: float = Field(allow_inf_nan=False)
    maximum: float = Field(allow_inf_nan=False)
    default: float | None = Field(default=None, allow_inf_nan=False)
    optional: bool = False

    @model_validator(mode="after")
    def _bounds(self) -> FloatParam:
        if self.minimum > self.maximum:
            raise ValueError(f"minimum {self.minimum} is above maximum {self.maximum}")
        if self.default is not None and self.optional:
            raise ValueError("a parameter is optional (None) or has a default, not both")
        if self.default is not None and not self.minimum <= self.default <= self.maximum:
            raise ValueError(f"default {self.default} is outside [{self.minimum}, {self.maximum}]")
        return self


Param = Annotated[ArrayParam | IntParam | FloatParam, Field(discriminator="kind")]
AnyParam = ArrayParam | IntParam | FloatParam


class Requirement(StrictModel):
    id: Slug
    title: str = Field(min_length=1, max_length=120)
    text: str = Field(min_length=1, max_length=1000)


class ProblemLimits(StrictModel):
    cpu_seconds: float = Field(default=5.0, gt=0, le=120)
    wall_seconds: float = Field(default=10.0, gt=0, le=300)
    memory_mb: int = Field(default=512, ge=64, le=16384)


class Tolerance(StrictModel):
    """Passed to ``np.allclose(actual, expected, rtol, atol)``: the reference is the second side."""

    rtol: float = Field(default=1e-7, gt=0, lt=1)
    atol: float = Field(default=1e-9, ge=0, lt=1)


# The "tolerance" of a bool or int output: equality. Built without validation, as a problem's
# own tolerance must be positive.
EXACT = Tolerance.model_construct(rtol=0.0, atol=0.0)


class Returns(StrictModel):
    """One output of the function. A problem returns one array (``returns = {shape = [...]}``)
    or a tuple of named ones (``returns = [{name = "output", ...}, {name = "weights", ...}]``),
    each with its own shape and, if it needs one, its own tolerance."""

    name: Identifier = "output"
    shape: Shape
    # A bool or int64 output (a mask, a count, an index) is compared exactly: no tolerance.
    dtype: Literal["float64", "bool", "int64"] = "float64"
    tolerance: Tolerance | None = None

    @model_validator(mode="after")
    def _exact_has_no_tolerance(self) -> Returns:
        if self.exact and self.tolerance is not None:
            raise ValueError(f"{self.name}: a {self.dtype} output is compared exactly")
        return self

    @property
    def exact(self) -> bool:
        return self.dtype != "float64"


Framework = Literal["numpy", "torch"]
DottedName = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
]


class Forbidden(StrictModel):
    """APIs a submission may not call, per framework, as dotted names
    (``torch.nn.functional.scaled_dot_product_attention``): each would be the whole answer.
    Enforced inside the sandbox at run time (``sandbox/inside/frameworks.forbid``)."""

    numpy: list[DottedName] = []
    torch: list[DottedName] = []


class ProblemSpec(StrictModel):
    id: Slug
    title: str = Field(min_length=1, max_length=120)
    difficulty: Literal["easy", "medium", "hard"]
    summary: str = Field(min_length=1, max_length=300)
    function_name: Identifier
    params: list[Param] = Field(min_length=1, max_length=32)
    returns: Returns | list[Returns]
    limits: ProblemLimits = ProblemLimits()
    tolerance: Tolerance = Tolerance()
    requirements: list[Requirement] = Field(min_length=1)
    # What a submission may be written in: NumPy always; "torch" with a ``starter_torch.py``.
    frameworks: list[Framework] = ["numpy"]
    forbidden: Forbidden = Forbidden()
    seed: int = 0
    # Symbolic dimensions that may be 1 without the instructor being warned (e.g. "batch").
    unit_dims_ok: list[Identifier] = []

    @model_validator(mode="after")
    def _numpy_always(self) -> ProblemSpec:
        if "numpy" not in self.frameworks or len(set(self.frameworks)) != len(self.frameworks):
            raise ValueError("frameworks: lists numpy (always offered), each framework once")
        return self

    @model_validator(mode="after")
    def _unique_names(self) -> ProblemSpec:
        for label, names in (
            ("params", [p.name for p in self.params]),
            ("requirements", [r.id for r in self.requirements]),
            ("returns", [o.name for o in self.outputs]),
        ):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f"{label}: duplicate names {dupes}")
        if isinstance(self.returns, list) and not 2 <= len(self.returns) <= 16:
            raise ValueError("returns: a list names 2 to 16 outputs; one output is a table")
        optional = [p.name for p in self.params if p.optional]
        if optional and any(
            not p.optional for p in self.params[len(self.params) - len(optional) :]
        ):
            raise ValueError(f"params: optional parameters {optional} must come last")
        # Python's own rule: once a parameter has a default (or is optional), all that follow do.
        defaulted = [_has_default(p) for p in self.params]
        if True in defaulted and not all(defaulted[defaulted.index(True) :]):
            first = self.params[defaulted.index(True)].name
            raise ValueError(f"params: every parameter after {first!r} needs a default")
        self._check_dim_names()
        return self

    def _check_dim_names(self) -> None:
        arrays = [p for p in self.params if isinstance(p, ArrayParam)]
        bound = {d for p in arrays for d in p.shape} | {p.name for p in self.params}
        for name in sorted({d[1:] for d in bound if is_variadic(d)} & bound):
            raise ValueError(f"params: {name!r} is used both as a dimension and as *{name}")
        for output in self.outputs:
            unbound = [d for d in output.shape if is_symbolic(d) and d not in bound]
            if unbound:
                raise ValueError(
                    f"returns: {output.name} uses {unbound}, which no parameter's shape gives"
                )

    @property
    def outputs(self) -> list[Returns]:
        """Every output in the order the function returns them."""
        return list(self.returns) if isinstance(self.returns, list) else [self.returns]

    @property
    def multiple_outputs(self) -> bool:
        """True when the function returns a tuple of arrays rather than one array."""
        return isinstance(self.returns, list)

    def tolerance_of(self, output: Returns) -> Tolerance:
        if output.exact:
            return EXACT
        return output.tolerance or self.tolerance

    @property
    def signature(self) -> str:
        args = ", ".join(_argument(p) for p in self.params)
        if self.multiple_outputs:
            result = f"tuple[{', '.join('np.ndarray' for _ in self.outputs)}]"
            names = ", ".join(o.name for o in self.outputs)
            return f"{self.function_name}({args}) -> {result}  # ({names})"
        return f"{self.function_name}({args}) -> np.ndarray"

    def param(self, name: str) -> AnyParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)


def _has_default(param: AnyParam) -> bool:
    return param.optional or getattr(param, "default", None) is not None


def _argument(param: AnyParam) -> str:
    """A parameter as the signature writes it: ``mask=None``, ``eps=1e-05``."""
    if param.optional:
        return f"{param.name}=None"
    default = getattr(param, "default", None)
    return param.name if default is None else f"{param.name}={default!r}"


def is_symbolic(dim: str) -> bool:
    """A name (``n_q``) or a variadic group (``*lead``), not a fixed size."""
    return re.fullmatch(r"[0-9]+", dim) is None


def is_variadic(dim: str) -> bool:
    """A variadic group (``*lead``): it binds a tuple of 0 or more sizes."""
    return dim.startswith("*")


def shape_text(shape: list[str]) -> str:
    """A declared shape as the statement writes it: ``(*lead, n_q, d)``."""
    return f"({', '.join(shape)}{',' if len(shape) == 1 else ''})"
