"""What the assignments API accepts and returns.

Dates are timezone-aware (a naive time is refused: "Friday 17:00" means nothing without its
zone). The order of the dates is checked on the whole assignment by ``check_order``, so a PATCH
that moves one date is judged with the others as they will be.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StrictBool, model_validator

from app.assignments.policy import AfterClose, Feedback, FeedbackLevel, Scoring
from app.core.errors import ApiError

Title = Field(min_length=1, max_length=200)


class ProblemEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=128)
    points: float | None = Field(
        default=None, ge=0, le=1e6, description="Null: the course's default points."
    )
    # This problem's own feedback policy; None: the assignment's.
    feedback: Feedback | None = None


class LateDeadline(BaseModel):
    """Until ``until``, a submission earns ``credit`` (0.8: 80 %)."""

    model_config = ConfigDict(extra="forbid")

    until: AwareDatetime
    credit: float = Field(gt=0, le=1)


class AssignmentFields(BaseModel):
    """Every setting of an assignment; a create body, and what a PATCH is merged into."""

    model_config = ConfigDict(extra="forbid")

    title: str = Title
    problems: list[ProblemEntry] = Field(min_length=1, max_length=200)
    release_at: AwareDatetime | None = None
    due_at: AwareDatetime
    late_deadlines: list[LateDeadline] = Field(default_factory=list, max_length=20)
    after_close: AfterClose = "closed"
    scoring: Scoring = "best"
    feedback: Feedback = "summary"
    hide_scores: StrictBool = False
    max_attempts: int | None = Field(default=None, ge=1, le=10_000)
    attempt_penalties: list[float] = Field(default_factory=list, max_length=100)
    rate_limit: int | None = Field(default=None, ge=1, le=10_000)
    rate_window_seconds: int = Field(default=3600, ge=1, le=7 * 24 * 3600)
    per_student_cases: StrictBool = False

    @model_validator(mode="after")
    def _penalties_in_range(self) -> AssignmentFields:
        for n, penalty in enumerate(self.attempt_penalties):
            if not 0 <= penalty <= 1:
                raise ValueError(f"attempt_penalties[{n}] must be a fraction in [0, 1]")
        return self


def check_order(fields: AssignmentFields) -> None:
    """Dates strictly increasing (release, due, each later deadline), later credits
    non-increasing, penalties non-decreasing, problems listed once: 422 naming the field."""
    if fields.release_at is not None and fields.release_at >= fields.due_at:
        raise ApiError(422, "dates_out_of_order", "release_at must be before due_at", "release_at")
    previous, previous_name = fields.due_at, "due_at"
    previous_credit = 1.0
    for n, late in enumerate(fields.late_deadlines):
        name = f"late_deadlines[{n}]"
        if late.until <= previous:
            raise ApiError(
                422, "dates_out_of_order", f"{name}.until must be after {previous_name}", name
            )
        if late.credit > previous_credit:
            raise ApiError(
                422,
                "credit_increases",
                f"{name}.credit must not be above the credit before it ({previous_credit:g})",
                name,
            )
        previous, previous_name, previous_credit = late.until, f"{name}.until", late.credit
    for n in range(1, len(fields.attempt_penalties)):
        if fields.attempt_penalties[n] < fields.attempt_penalties[n - 1]:
            raise ApiError(
                422,
                "penalties_decrease",
                f"attempt_penalties[{n}] must not be below the one before it",
                f"attempt_penalties[{n}]",
            )
    seen: set[str] = set()
    for n, entry in enumerate(fields.problems):
        if entry.problem_id in seen:
            raise ApiError(
                422,
                "duplicate_problem",
                f"problem {entry.problem_id!r} is listed twice",
                f"problems[{n}].problem_id",
            )
        seen.add(entry.problem_id)


class AssignmentPatch(BaseModel):
    """Only the fields sent change (``null`` clears an optional one)."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(default=None, min_length=1, max_length=200)
    problems: list[ProblemEntry] | None = Field(default=None, min_length=1, max_length=200)
    release_at: AwareDatetime | None = None
    due_at: AwareDatetime | None = None
    late_deadlines: list[LateDeadline] | None = Field(default=None, max_length=20)
    after_close: AfterClose | None = None
    scoring: Scoring | None = None
    feedback: Feedback | None = None
    hide_scores: StrictBool | None = None
    max_attempts: int | None = Field(default=None, ge=1, le=10_000)
    attempt_penalties: list[float] | None = Field(default=None, max_length=100)
    rate_limit: int | None = Field(default=None, ge=1, le=10_000)
    rate_window_seconds: int | None = Field(default=None, ge=1, le=7 * 24 * 3600)
    per_student_cases: StrictBool | None = None


class ProblemOut(ProblemEntry):
    title: str


class MyDates(BaseModel):
    """The caller's own dates (a student's, with their overrides)."""

    due_at: datetime
    last_deadline: datetime
    open: bool
    credit: float
    rule: str
    attempts_allowed: int | None


class AssignmentOut(BaseModel):
    id: int
    course_id: int
    title: str
    problems: list[ProblemOut]
    release_at: datetime | None
    due_at: datetime
    late_deadlines: list[LateDeadline]
    after_close: AfterClose
    scoring: Scoring
    feedback: Feedback
    feedback_published_at: datetime | None
    hide_scores: bool
    scores_published_at: datetime | None
    max_attempts: int | None
    attempt_penalties: list[float]
    rate_limit: int | None
    rate_window_seconds: int
    per_student_cases: bool
    created_at: datetime
    released: bool
    mine: MyDates | None = Field(
        default=None, description="For a student: their own due date, credit now and attempts."
    )


def _given(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """JSON Schema: ``name`` is present and is ``schema`` (not null)."""
    return {"required": [name], "properties": {name: schema}}


class OverrideCreate(BaseModel):
    """For one student (``user_id``), several (``user_ids``: extensions at scale, one override
    each) or a section; at least one of ``until`` and ``extra_attempts``."""

    # What ``_one_target`` checks, in the document too.
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                _given("user_id", {"type": "integer"}),
                _given("user_ids", {"type": "array"}),
                _given("section", {"type": "string"}),
            ],
            "anyOf": [
                _given("until", {"type": "string"}),
                _given("extra_attempts", {"minimum": 1}),
            ],
        },
    )

    user_id: int | None = Field(default=None, ge=1, le=2**53)
    user_ids: list[int] | None = Field(default=None, min_length=1, max_length=2000)
    section: str | None = Field(default=None, min_length=1, max_length=64)
    until: AwareDatetime | None = None
    credit: float = Field(default=1.0, gt=0, le=1)
    extra_attempts: int = Field(default=0, ge=0, le=10_000)
    note: str = Field(default="", max_length=500)

    @model_validator(mode="after")
    def _one_target(self) -> OverrideCreate:
        targets = [x for x in (self.user_id, self.user_ids, self.section) if x is not None]
        if len(targets) != 1:
            raise ValueError("give exactly one of user_id, user_ids and section")
        if self.until is None and self.extra_attempts == 0:
            raise ValueError("an override needs until or extra_attempts")
        return self


class OverrideOut(BaseModel):
    id: int
    assignment_id: int
    user_id: int | None
    section: str | None
    until: datetime | None
    credit: float
    extra_attempts: int
    note: str
    created_by: int | None
    created_at: datetime


class PublishBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    feedback: StrictBool = False
    scores: StrictBool = False


class Attempts(BaseModel):
    """Shown beside the assignment's problem page: attempts used and left."""

    problem_id: str
    attempts_used: int
    attempts_allowed: int | None
    feedback: FeedbackLevel
    due_at: datetime
    credit_now: float
    rule: str
    open: bool


SubmissionKind = Literal["graded", "practice", "examples"]
