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


class CaseFields(BaseModel):
    """The fields of a case besides its arrays (JSON body, or the form fields of an upload)."""

    model_config = ConfigDict(extra="forbid")

    name: CaseName = Field(description="Letters, digits, '_', '.', '-'; unique per problem.")
    visibility: VisibilityIn = "hidden"
    weight: Weight = Field(default=1.0, description="Share of the score, relative to others.")


class CaseCreate(CaseFields):
    inputs: dict[str, Any] = Field(
        description="One entry per parameter: nested lists of numbers for arrays, an integer "
        "for integer parameters (e.g. num_heads)."
    )
    expected: list[Any] | None = Field(
        default=None,
        description="Optional: checked against the reference's output, never used instead of it.",
    )


class CaseOut(BaseModel):
    id: int | None = Field(description="Null for the problem folder's built-in cases.")
    name: str
    source: Literal["builtin", "stored"]
    visibility: VisibilityIn
    weight: float
    shapes: dict[str, list[int]] = Field(description="Shape of every array input.")
    scalars: dict[str, int] = Field(description="Value of every integer input.")
    output_shape: list[int]
    warnings: list[CaseWarning]
    added_in_version: int
    created_by: str | None = None
    created_at: datetime | None = None


class CaseCreated(CaseOut):
    test_set_version: int = Field(description="The problem's test-set version after the change.")


class CaseDetail(CaseOut):
    inputs: dict[str, Any]
    expected: Any


class CaseList(BaseModel):
    problem_id: str
    test_set_version: int
    cases: list[CaseOut]


class CaseDeleted(BaseModel):
    id: int
    name: str
    test_set_version: int
