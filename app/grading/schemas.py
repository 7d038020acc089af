"""The result of grading one submission: what the API returns and the database stores."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.grading.verdicts import Verdict

RequirementStatus = Literal["passed", "failed", "not_checked"]
CaseStatus = Literal["passed", "failed", "error"]


class RequirementResult(BaseModel):
    id: str
    title: str
    status: RequirementStatus
    detail: str = ""


class Diagnosis(BaseModel):
    code: str  # e.g. "missing-wo", "input-mutated", "unrecognized"
    requirement: str | None  # the requirement id it breaks; None for contract checks
    title: str
    explanation: str
    hint: str
    evidence: str = ""
    # False when the code belongs to only some of the equally good explanations (see
    # GradeReport.alternatives): the student should check it, not take it as found.
    certain: bool = True


LoadFailureKind = Literal[
    "syntax_error", "import_error", "missing_function", "not_callable", "raised_on_import"
]


class LoadFailure(BaseModel):
    """Why the code failed before any case ran, for the student to read first. Built from the
    same text as ``GradeReport.error``: loading ends before any case's inputs exist."""

    kind: LoadFailureKind
    title: str = Field(description='A headline, e.g. "No function named softmax_backward".')
    message: str = Field(description="The error in one line, e.g. \"SyntaxError: expected ':'\".")
    line: int | None = Field(
        default=None, ge=1, description="The line of the submitted code the error points to."
    )


class _Compared(BaseModel):
    message: str = ""
    # Public cases only: where the answer is furthest from the reference.
    max_error: float | None = None
    max_error_index: list[int] | None = None
    # Public cases only: |actual - expected| over the last two axes (max over the leading ones),
    # at most GRID_CELLS x GRID_CELLS, for the page's heat map.
    error_grid: list[list[float]] | None = None
    expected_shape: list[int] | None = None
    # Public cases only: what the submission returned (a hidden case's could carry its inputs).
    actual_shape: list[int] | None = None


class OutputReport(_Compared):
    """One named output of a case, for a problem whose function returns several."""

    name: str
    status: Literal["passed", "failed"]


class CaseReport(_Compared):
    name: str
    visibility: Literal["public", "hidden"]
    status: CaseStatus
    # Public cases only, on the sandbox supervisor's clock: how long the call took. A hidden
    # case's time is the submission's to choose (it can sleep), so it is not shown per case.
    seconds: float | None = None
    # For a problem with several outputs: each one's result (the fields above then describe the
    # first output that failed, or the first output).
    outputs: list[OutputReport] = Field(default_factory=list)
    # Set when the case requires the function to raise this exception type.
    raises: str | None = None
    # Public cases only: the crash the grader names (``app/problems/crashes.py``), its fixed
    # hint at the end of ``message``.
    crash: str | None = None


class PublicView(BaseModel):
    """The report as a ``summary`` feedback policy shows it: what the public cases and the
    probes alone say. Computed by the grader from the same run, outside the sandbox; a student
    under that policy is shown these fields in place of the full report's and the count of
    hidden cases passed, never a hidden case's name, status or message."""

    requirements: list[RequirementResult]
    diagnoses: list[Diagnosis]
    alternatives: list[list[str]] = []
    error: str | None = None
    hidden_passed: int = 0
    hidden_total: int = 0


class GradeReport(BaseModel):
    verdict: Verdict
    score: float = Field(ge=0.0, le=1.0)
    # What the submission was graded as ("numpy" or "torch": its inputs and outputs' type).
    framework: str = "numpy"
    requirements: list[RequirementResult]
    diagnoses: list[Diagnosis]
    tests: list[CaseReport]
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    error: str | None = None  # compile error, crash reason or trimmed traceback, for the student
    # Set when the code failed while being loaded (syntax, import, no such function...).
    load_failure: LoadFailure | None = None
    # Seconds, rounded to RUN_SECONDS_STEP: "sandbox", "compare", "diagnose", "total".
    timings: dict[str, float] = {}
    # When several sets of fault codes explain the output equally well, each set, e.g.
    # [["scale-dmodel"], ["no-scale"]]; empty when the diagnosis is unique.
    alternatives: list[list[str]] = []
    # Stored with the report for the feedback policies; the submissions API never returns it as
    # such (see app.submissions.schemas.SubmissionOut).
    public_view: PublicView | None = None
