"""What the gradebook API accepts and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.grading.schemas import GradeReport


class MyProblemScore(BaseModel):
    problem_id: str
    title: str
    points: float | None = Field(description="Null while scores are hidden from students.")
    max_points: float
    rule: str | None = Field(description="What decided the score; null while scores are hidden.")
    attempts_used: int
    attempts_allowed: int | None = Field(description="Null: no maximum.")
    last_verdict: str | None


class MyGrades(BaseModel):
    problems: list[MyProblemScore]
    total: float | None
    max_total: float
    scores_hidden: bool


class DiagnosisRef(BaseModel):
    code: str
    title: str


class GradeCell(BaseModel):
    problem_id: str
    points: float
    max_points: float
    computed_points: float = Field(description="The score under the policy, before adjustment.")
    rule: str
    decided_by_attempt: int | None
    adjusted: bool
    attempts_used: int
    attempts_allowed: int | None
    pending: int = Field(description="Graded attempts still being graded.")
    last_verdict: str | None
    last_submitted_at: datetime | None
    diagnosis: DiagnosisRef | None = Field(description="The latest graded attempt's first one.")


class StudentRef(BaseModel):
    user_id: int
    name: str
    email: str | None
    section: str | None
    status: str


class GradebookRow(StudentRef):
    due_at: datetime = Field(description="The student's own due date (extensions included).")
    cells: list[GradeCell]
    total: float


class ProblemColumn(BaseModel):
    problem_id: str
    title: str
    points: float


class GradebookOut(BaseModel):
    assignment_id: int
    title: str
    scoring: str
    problems: list[ProblemColumn]
    sections: list[str] = Field(description="Every section of the course's students.")
    students: list[GradebookRow]
    max_total: float


class AdjustmentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: int = Field(ge=1, le=2**53)
    problem_id: str = Field(min_length=1, max_length=128)
    score: float | None = Field(
        ge=0,
        description="Points, 0 to the problem's points (above them: 409); null clears the "
        "adjustment.",
        allow_inf_nan=False,
    )
    comment: str = Field(
        min_length=1,
        max_length=1000,
        pattern=r"\S",
        description="Why (kept in the audit log); not blank.",
    )


class AdjustmentOut(BaseModel):
    id: int
    user_id: int
    student_name: str | None
    problem_id: str
    old_score: float | None
    score: float | None
    comment: str
    created_by: int | None
    created_by_name: str | None
    created_at: datetime


class AdjustmentLog(BaseModel):
    adjustments: list[AdjustmentOut]


class AttemptOut(BaseModel):
    """One graded (or examples) submission of the student, with its code and full report."""

    id: str
    problem_id: str
    mode: str
    attempt: int | None = Field(description="The graded attempt's number; null: not graded.")
    status: str
    verdict: str | None
    score: float | None = Field(description="The grader's score, 0 to 1.")
    credit_points: float | None = Field(description="What it is worth under the policy.")
    credit_rule: str | None
    code: str
    report: GradeReport | None
    received_at: datetime | None = Field(
        default=None, description="When its request arrived: what the dates judge."
    )
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    view: Literal["visible", "summary", "verdict"] = Field(
        default="visible",
        description="How much of the report the reader is shown: everything, or cut (with no "
        "time of the run) by a feedback policy that follows them from a course where they "
        "are a student of the same problem.",
    )
    hidden_passed: int | None = Field(default=None, description='In the "summary" view.')
    hidden_total: int | None = Field(default=None, description='In the "summary" view.')


class StudentDetail(BaseModel):
    student: StudentRef
    due_at: datetime
    cells: list[GradeCell]
    total: float
    max_total: float
    submissions: list[AttemptOut]
    adjustments: list[AdjustmentOut]


class CodeCount(BaseModel):
    code: str
    title: str
    students: int = Field(description="Students whose latest graded attempt has it.")
    stuck: int = Field(description="Of those, how many have not had it accepted.")


class ProblemInsight(BaseModel):
    problem_id: str
    title: str
    attempted: int = Field(description="Students with a graded attempt.")
    accepted: int = Field(description="Students whose latest graded attempt is accepted.")
    stuck: int = Field(description="Students whose latest graded attempt is not accepted.")
    verdicts: dict[str, int] = Field(description="Latest graded attempts by verdict.")
    diagnoses: list[CodeCount] = Field(description="Most common first.")


class RushMinute(BaseModel):
    minute: datetime = Field(description="The minute's start (UTC), by the requests' arrival.")
    submissions: int


class RushOut(BaseModel):
    """The graded attempts around the due date: how many arrived each minute, how long their
    students waited from arrival to verdict, and the queue now."""

    due_at: datetime
    per_minute: list[RushMinute] = Field(
        description="Minutes from RUSH_BEFORE before the due date to RUSH_AFTER after it."
    )
    wait_p50_seconds: float | None = Field(description="Arrival to verdict, median.")
    wait_p95_seconds: float | None
    queued_now: int = Field(description="Submissions queued in the whole service now.")


class InsightOut(BaseModel):
    assignment_id: int
    students: int
    problems: list[ProblemInsight]
    rush: RushOut | None = None


class RegradeOut(BaseModel):
    queued: int = Field(description="Submissions queued for grading again.")
    skipped: int = Field(description="Still being graded, or refused by a full queue.")
    queue_full: bool
