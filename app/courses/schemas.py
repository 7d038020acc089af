"""What the courses API accepts and returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat

from app.auth.accounts import EMAIL_PATTERN
from app.core.errors import ErrorResponse

CourseRole = Literal["student", "ta", "instructor"]
MemberStatus = Literal["active", "blocked", "removed"]

MAX_TITLE = 200
MAX_SECTION = 64
MAX_NAME = 200


class CourseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=MAX_TITLE, pattern=r"\S")


class CourseUpdate(BaseModel):
    """Every field optional; only those sent change."""

    model_config = ConfigDict(extra="forbid")

    title: str | None = Field(default=None, min_length=1, max_length=MAX_TITLE, pattern=r"\S")
    joining_open: StrictBool | None = Field(
        default=None, description="false: the join code stops working; true: a code is made."
    )
    rotate_code: StrictBool = Field(
        default=False, description="A new join code; the old one stops working at once."
    )
    archived: StrictBool | None = Field(
        default=None, description="false restores an archived course (DELETE archives it)."
    )
    default_points: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=1e6,
        allow_inf_nan=False,
        description="What a problem is worth when added without points (deep-linked, or an "
        "assignment's entry with none).",
    )


class CourseOut(BaseModel):
    id: int
    title: str
    role: CourseRole = Field(description="The caller's role in the course (admins: instructor).")
    section: str | None = None
    join_code: str | None = Field(
        default=None, description="Staff only; null when joining is closed."
    )
    archived_at: datetime | None = None
    created_at: datetime
    members: int | None = Field(default=None, description="Active members (staff only).")
    default_points: float | None = Field(
        default=None, description="Staff only: points of a problem added without any."
    )


class CoursePage(BaseModel):
    items: list[CourseOut]
    total: int
    limit: int
    offset: int


class JoinRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(min_length=1, max_length=64)


class JoinResult(BaseModel):
    course: CourseOut
    joined: bool = Field(description="false: the caller was already a member (nothing changed).")


class MemberCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(min_length=3, max_length=254, pattern=EMAIL_PATTERN)
    name: str = Field(default="", max_length=MAX_NAME)
    role: CourseRole = "student"
    section: str | None = Field(default=None, max_length=MAX_SECTION)


class MemberUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: CourseRole | None = None
    section: str | None = Field(
        default=None, max_length=MAX_SECTION, description='"" clears the section.'
    )
    status: MemberStatus | None = None


class MemberOut(BaseModel):
    user_id: int
    email: str | None
    name: str
    role: CourseRole
    section: str | None
    status: MemberStatus
    has_password: bool = Field(description="false: the person cannot sign in with a password yet.")
    joined_at: datetime
    invitation: Literal["none", "pending", "sent", "failed"] = Field(
        default="none",
        description="This course's latest invitation mail to the person: none, on its way "
        "(pending), taken by the mail server (sent), or refused/given up (failed).",
    )
    invited_at: datetime | None = None


class MemberPage(BaseModel):
    items: list[MemberOut]
    total: int
    limit: int
    offset: int


class ResetLink(BaseModel):
    path: str = Field(description="/reset/<secret>: one use; give it to the student.")
    url: str
    expires_at: datetime


class SectionCount(BaseModel):
    name: str | None = Field(description="null: members with no section.")
    students: int = Field(description="Active students in it.")
    members: int = Field(description="Active members of every role in it.")


class SectionList(BaseModel):
    sections: list[SectionCount]


class RosterResult(BaseModel):
    created: int = Field(description="Accounts made for people who had none.")
    enrolled: int = Field(description="People who were not in the course and now are.")
    updated: int = Field(description="Members whose role or section changed.")
    unchanged: int
    inactive: int = Field(
        description="Rows naming a blocked or removed member: left as they are (reactivate them "
        "one by one)."
    )
    invited: int = Field(
        default=0,
        description="People enrolled now who were mailed an invitation (with ``invite``): a "
        "link to choose a password when the course made their account, else a pointer to sign "
        "in.",
    )


class RowError(BaseModel):
    line: int = Field(description="The line of the file (the header is line 1).")
    column: str | None = Field(description="The column at fault; null for the whole row.")
    message: str


class RosterErrorResponse(ErrorResponse):
    """The one error shape, plus every failing row of a roster file."""

    rows: list[RowError] = Field(default_factory=list)
