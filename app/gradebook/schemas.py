"""What the gradebook API accepts and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.grading.schemas import GradeReport

# A comment or note, in markdown; more is refused (422) rather than cut.
FEEDBACK_MAX_CHARS = 8000


class FeedbackIn(BaseModel):
    """A comment (the student reads it) or a note (only the course's staff read it) on a
    student's problem, or on one of their submissions of it. It replaces the one in force;
    an empty ``body`` clears it."""

    model_config = ConfigDict(extra="forbid")

    user_id: int = Field(ge=1, le=2**53)
    problem_id: str = Field(min_length=1, max_length=128)
    submission_id: str | None = Field(
        default=None, max_length=36, description="One submission's; null: the problem's."
    )
    kind: Literal["comment", "note"] = Field(
        description='"comment": shown to the student; "note": staff only, never the student.'
    )
    body: str = Field(
        max_length=FEEDBACK_MAX_CHARS,
        description="Markdown (raw HTML is shown as text; only this site's images); empty: clear.",
    )


class FeedbackOut(BaseModel):
    id: int
    user_id: int
    problem_id: str
    submission_id: str | None
    kind: Literal["comment", "note"]
    body: str = Field(description="The markdown as written.")
    html: str = Field(description="The markdown rendered and sanitized: safe to insert.")
    created_by: int | None
    created_by_name: str | None = Field(description="The author.")
    created_at: datetime


class HintIn(BaseModel):
    """The course's text for one diagnosis of one problem; empty ``body``: withdraw it."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str = Field(min_length=1, max_length=128)
    code: str = Field(min_length=1, max_length=128, description="The diagnosis's code.")
    body: str = Field(max_length=FEEDBACK_MAX_CHARS, description="Markdown, as a comment.")


class HintOut(BaseModel):
    problem_id: str
    code: str
    body: str
    html: str
    updated_by_name: str | None
    updated_at: datetime
    reaches: int | None = Field(
        default=None,
        description="Staff only: students of the course whose latest graded attempt on the "
        "problem has the diagnosis now (who read it).",
    )


class HintList(BaseModel):
    hints: list[HintOut]


class MyProblemScore(BaseModel):
    problem_id: str
    title: str
    points: float | None = Field(description="Null while scores are hidden from students.")
    max_points: float
    rule: str | None = Field(description="What decided the score; null while scores are hidden.")
    attempts_used: int
    attempts_allowed: int | None = Field(description="Null: no maximum.")
    last_verdict: str | None
    comment: FeedbackOut | None = Field(default=None, description="Staff's comment to you.")
    hints: list[HintOut] = Field(
        default_factory=list,
        description="The course's texts for the diagnoses of your latest graded attempt.",
    )


class MyGrades(BaseModel):
    problems: list[MyProblemScore]
    submission_comments: list[FeedbackOut] = Field(
        default_factory=list, description="Staff's comments on your submissions."
    )
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
    comment: FeedbackOut | None = Field(default=None, description="To the student.")
    note: FeedbackOut | None = Field(default=None, description="Staff only.")


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
        description='Why: staff only, kept in the audit log (the student reads "adjusted by '
        'staff"; a comment to the student is a feedback comment); not blank.',
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
    comment: FeedbackOut | None = Field(default=None, description="To the student.")
    note: FeedbackOut | None = Field(default=None, description="Staff only.")


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
    stuck: int = Field(description="Of those, how many are stuck (as ``ProblemInsight``).")


class ProblemInsight(BaseModel):
    problem_id: str
    title: str
    attempted: int = Field(description="Students with a graded attempt.")
    accepted: int = Field(description="Students whose latest graded attempt is accepted.")
    stuck: int = Field(
        description="Students with no accepted attempt whose last two or more graded attempts "
        "are wrong."
    )
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


class CaseRate(BaseModel):
    index: int = Field(description="0-based, in the report's order.")
    hidden: bool
    name: str | None = Field(description="Null for a hidden case: it is known by its index only.")
    passed: int
    total: int


class PairCount(BaseModel):
    codes: list[str]
    students: int = Field(description="Students whose latest graded attempt has all of them.")


class DiagnosisTrend(BaseModel):
    code: str
    last_7_days: int = Field(description="Graded attempts with it in the last seven days.")
    previous_7_days: int = Field(description="In the seven days before.")


class ProblemStatistics(BaseModel):
    problem_id: str
    title: str
    max_points: float
    students: int
    graded: int = Field(description="Students with a graded attempt (or a score set by hand).")
    histogram: list[int] = Field(
        description="Of those, how many scored 0-10 %, 10-20 %... 90-100 % of the points "
        "(full marks in the last bin)."
    )
    accepted: int = Field(description="Students with an accepted attempt.")
    attempts_until_accepted: dict[int, int] = Field(
        description="Attempt number of the first accepted attempt -> students."
    )
    median_attempts_until_accepted: float | None
    median_hours_to_first_accepted: float | None = Field(
        description="From the release (or the assignment's creation) to the first accepted attempt."
    )
    stuck: int = Field(description="No accepted attempt and the last two or more wrong.")
    cases: list[CaseRate] = Field(description="Pass rate per test case, latest attempts.")
    requirements: list[CaseRate] = Field(description="Pass rate per checked requirement.")
    diagnoses: list[PairCount] = Field(description="Most common first.")
    pairs: list[PairCount] = Field(description="Most common pairs first.")
    week: list[DiagnosisTrend]


class StatisticsOut(BaseModel):
    assignment_id: int
    generated_at: datetime
    problems: list[ProblemStatistics]
