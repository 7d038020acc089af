"""What the test-case API accepts and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.testcases.warnings import CaseWarning

CaseName = Annotated[
    str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$", max_length=64)
]
Weight = Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)]
VisibilityIn = Literal["hidden", "public"]
# An exception type as the sandbox reports it: "ValueError", or "module.Name" for others.
ExceptionName = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$", max_length=200
    ),
]


class CaseFields(BaseModel):
    """The fields of a case besides its arrays (JSON body, or the form fields of an upload)."""

    model_config = ConfigDict(extra="forbid")

    name: CaseName = Field(description="Letters, digits, '_', '.', '-'; unique per problem.")
    visibility: VisibilityIn = "hidden"
    weight: Weight = Field(default=1.0, description="Share of the score, relative to others.")
    raises: ExceptionName | None = Field(
        default=None,
        description="The exception type the function must raise on these inputs (e.g. "
        "ValueError); the reference must raise exactly it. Such a case has no expected output.",
    )


class CaseCreate(CaseFields):
    inputs: dict[str, Any] = Field(
        description="One entry per parameter: nested lists of numbers for float arrays, of "
        "true/false for boolean arrays, an integer for integer parameters, null (or nothing) "
        "for an optional parameter without a value."
    )
    expected: list[Any] | dict[str, Any] | None = Field(
        default=None,
        description="Optional: checked against the reference's output, never used instead of "
        "it. Nested lists; for a problem with several outputs, an object with one per name.",
    )


class CaseOut(BaseModel):
    id: int | None = Field(description="Null for the problem folder's built-in cases.")
    name: str
    source: Literal["builtin", "stored"]
    visibility: VisibilityIn
    weight: float
    shapes: dict[str, list[int]] = Field(description="Shape of every array input.")
    scalars: dict[str, int | float] = Field(
        description="Value of every integer and float (scalar) input."
    )
    output_shape: list[int] = Field(description="The (first) output's shape; [] for raises.")
    output_shapes: dict[str, list[int]] = Field(
        default={}, description="Every output's shape, by name."
    )
    nulls: list[str] = Field(default=[], description="Optional parameters given no value.")
    raises: str | None = Field(default=None, description="The exception the case requires.")
    warnings: list[CaseWarning]
    added_in_version: int
    course_id: int | None = Field(
        default=None,
        description="The course that owns the case (it grades only that course's "
        "assignments); null for the catalog's cases and the built-in ones.",
    )
    created_by: str | None = None
    created_at: datetime | None = None


class CaseCreated(CaseOut):
    test_set_version: int = Field(description="The problem's test-set version after the change.")


class CaseDetail(CaseOut):
    inputs: dict[str, Any]
    expected: Any


class CaseList(BaseModel):
    problem_id: str
    course_id: int | None = Field(
        default=None, description="The course whose own cases these are; null: the catalog."
    )
    test_set_version: int
    cases: list[CaseOut]


class CaseDeleted(BaseModel):
    id: int
    name: str
    test_set_version: int
