"""What the submissions API accepts and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from pydantic.json_schema import SkipJsonSchema

from app.grading.schemas import CaseReport, Diagnosis, GradeReport, PublicView, RequirementResult
from app.grading.verdicts import Verdict
from app.submissions.models import Submission

Status = Literal["queued", "running", "done"]
Mode = Literal["submit", "examples"]

# What ``service.check_code`` accepts, as a pattern every regex dialect reads alike: no NUL, and
# one character that ``str.strip()`` keeps (Python's whitespace, spelled out as \uXXXX).
_SPACE = "".join(f"\\u{c:04x}" for c in range(0x10000) if chr(c).isspace())
CODE_PATTERN = f"^[^\\u0000]*[^\\u0000{_SPACE}][^\\u0000]*$"


class SubmissionCreate(BaseModel):
    """``mode="examples"`` grades against the public examples only (the page's "Run examples")."""

    model_config = ConfigDict(extra="forbid")

    code: str = Field(
        description="Python source defining the problem's entry point.",
        json_schema_extra={"pattern": CODE_PATTERN},
    )
    mode: Mode = "submit"
    force: StrictBool = Field(
        default=False,
        description="In an assignment: spend a graded attempt on code identical to an earlier "
        "graded attempt of the problem (without it: 409 identical_resubmission, nothing spent).",
    )


class QueuePlace(BaseModel):
    """Where a queued submission stands: "41 ahead of you, about 1 min"."""

    ahead: int = Field(description="Queued submissions that will be graded before it.")
    estimate_seconds: float | None = Field(
        description="About how long until it is graded, at the recent grading pace; null "
        "before there is one."
    )


class SubmissionOut(GradeReport):
    """A submission and, once ``status`` is ``done``, every field of its grade report (a
    subclass, so fields the grader adds to ``GradeReport`` appear here too)."""

    id: str
    problem_id: str
    mode: Mode
    status: Status
    verdict: Verdict | None = None  # type: ignore[assignment]
    score: float | None = Field(default=None, ge=0.0, le=1.0)  # type: ignore[assignment]
    requirements: list[RequirementResult] = Field(default_factory=list)
    diagnoses: list[Diagnosis] = Field(default_factory=list)
    tests: list[CaseReport] = Field(default_factory=list)
    test_set_version: int | None = Field(
        default=None,
        description='The test-set version it was graded on; for "Run examples", the '
        "version whose public cases it ran.",
    )
    attempts: int = Field(description="How many times a worker started grading it.")
    received_at: datetime | None = Field(
        default=None,
        description="When the request arrived (its body's last byte): the time an "
        "assignment's dates and rate limits judge it by.",
    )
    created_at: datetime = Field(description="When it was stored (at or after received_at).")
    started_at: datetime | None = None
    finished_at: datetime | None = None
    queue: QueuePlace | None = Field(
        default=None, description="While queued: where it stands in the queue."
    )
    view: Literal["visible", "summary", "verdict"] = Field(
        default="visible",
        description="How much of the report the caller is shown under the assignment's "
        'feedback policy: everything, the public part ("summary": hidden cases only as '
        "`hidden_passed` of `hidden_total`), or the verdict alone.",
    )
    hidden_passed: int | None = None
    hidden_total: int | None = None
    score_hidden: bool = Field(
        default=False, description="True while the assignment hides scores from students."
    )
    # The summary the feedback policies show instead: kept out of every response.
    public_view: SkipJsonSchema[PublicView | None] = Field(default=None, exclude=True)


def submission_out(row: Submission, report: GradeReport | None = None) -> SubmissionOut:
    """``report``: the row's report already parsed (the grader that just stored it has it)."""
    fields: dict[str, object] = {
        "id": row.id,
        "problem_id": row.problem_id,
        "mode": row.mode,
        "status": row.status,
        "test_set_version": row.test_set_version,
        "attempts": row.attempts,
        "received_at": row.received_at,
        "created_at": row.created_at,
        "started_at": row.started_at,
        "finished_at": row.finished_at,
    }
    if report is None and row.report is not None:
        report = GradeReport.model_validate_json(row.report)
    if report is not None:
        # Its validated field values as they are: no dump to plain data and back.
        fields |= report.__dict__
    return SubmissionOut.model_validate(fields)


class RegradeAccepted(BaseModel):
    id: str
    status: str
    run: int
