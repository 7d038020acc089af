"""What the sign-up API accepts and returns."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.auth.accounts import EMAIL_PATTERN
from app.auth.passwords import MAX_PASSWORD_BYTES
from app.auth.schemas import Me, Strict


class SignupIn(Strict):
    email: str = Field(min_length=3, max_length=254, pattern=EMAIL_PATTERN)
    name: str = Field(min_length=1, max_length=200, pattern=r"\S")
    password: str = Field(min_length=1, max_length=MAX_PASSWORD_BYTES)
    code: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        description="A course's join code: the account joins it as a student once verified "
        "(open whether or not self sign-up is). Without it: self sign-up, on "
        "GRADER_SIGNUP_DOMAINS only.",
    )


class SignupAccepted(BaseModel):
    status: Literal["check_your_mail"] = "check_your_mail"
    message: str = Field(
        description="The same for every accepted request, whether or not the address has an "
        "account: the mail says which."
    )


class VerifyIn(Strict):
    secret: str = Field(min_length=1, max_length=200)


class SignupVerified(Me):
    course_id: int | None = Field(
        description="The course joined with the sign-up's code; null for none, or when the "
        "code no longer takes anyone (``missed``)."
    )
    missed: bool = Field(
        description="true: the sign-up came with a join code that was rotated or closed "
        "since; the account is made, but joins nothing."
    )
