"""What the similarity API returns. Every sentence is evidence for a person to weigh, not a
finding: two students may write alike for good reasons (a shared study group, the lecture's
example), which only a conversation can tell."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

ReportStatus = Literal["none", "queued", "running", "done", "failed"]


class Evidence(BaseModel):
    kind: Literal["code", "diagnoses", "failures"]
    strength: float = Field(ge=0, le=1, description="0..1: how unusual this is in the class.")
    text: str


class PairOut(BaseModel):
    rank: int
    score: float = Field(
        description="What the pairs are ordered by: code share plus rare behaviours."
    )
    code_share: float = Field(ge=0, le=1)
    flagged: bool = Field(description="The code share is high enough to be worth a look.")
    a: str = Field(description="Submission id of the first student's latest graded attempt.")
    b: str
    a_user_id: int
    b_user_id: int
    a_name: str
    b_name: str
    a_lines: list[tuple[int, int]] = Field(description="Line ranges of a shared with b.")
    b_lines: list[tuple[int, int]]
    evidence: list[Evidence]


class ReportOut(BaseModel):
    assignment_id: int
    problem_id: str
    status: ReportStatus
    requested_at: datetime | None = None
    finished_at: datetime | None = None
    students: int = 0
    error: str | None = None
    pairs: list[PairOut] = []
    note: str = Field(
        default="Evidence for a person to weigh, not a verdict: independent students can write "
        "alike, and copies can differ."
    )


class PairDetail(BaseModel):
    """The side-by-side view of one ranked pair: both codes and their shared lines."""

    pair: PairOut
    a_code: str
    b_code: str
