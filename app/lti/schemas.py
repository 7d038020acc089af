"""What the LTI API reads and answers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StringConstraints,
    WithJsonSchema,
)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
URL_LENGTH = 1000


def _not_too_long(value: object) -> object:
    # Counted as sent: parsing may add a character (a trailing "/"), which must not turn a URL
    # the schema allows into a refusal.
    if isinstance(value, str) and len(value) > URL_LENGTH:
        raise ValueError(f"at most {URL_LENGTH} characters")
    return value


Url = Annotated[
    AnyHttpUrl,
    BeforeValidator(_not_too_long),
    WithJsonSchema({"type": "string", "format": "uri", "minLength": 1, "maxLength": URL_LENGTH}),
]


class PlatformIn(BaseModel):
    """An LMS as its registration of TensorJudge shows it."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
    issuer: Annotated[AnyHttpUrl, Field(max_length=500)] = Field(
        description="The platform's issuer (iss): Canvas https://canvas.instructure.com, "
        "Moodle its site URL"
    )
    client_id: Text = Field(description="The client id the LMS gave TensorJudge")
    deployment_ids: list[Text] = Field(min_length=1, max_length=50)
    auth_login_url: Url = Field(description="The platform's OIDC authorization endpoint")
    auth_token_url: Url = Field(description="The platform's OAuth2 token endpoint")
    keyset_url: Url = Field(description="The platform's public key set (JWKS)")
    token_audience: Url | None = Field(
        default=None, description="The token request's audience, when not the token URL"
    )
    trust_email: StrictBool = Field(
        default=False,
        description="Match a launch's email to an existing account (only for a platform whose "
        "emails are verified: otherwise its admins could sign in as anyone here)",
    )


class PlatformPatch(BaseModel):
    """What an administrator changes on a registered platform."""

    model_config = ConfigDict(extra="forbid")

    trust_email: StrictBool


class PlatformOut(BaseModel):
    id: int
    name: str
    issuer: str
    client_id: str
    deployment_ids: list[str]
    auth_login_url: str
    auth_token_url: str
    keyset_url: str
    token_audience: str | None
    trust_email: bool
    created_at: datetime


class ToolConfig(BaseModel):
    """What an admin pastes into the LMS."""

    title: str
    login_initiation_url: str
    launch_url: str = Field(description="Also the redirect URI")
    redirect_uris: list[str]
    deep_linking_url: str
    jwks_url: str
    scopes: list[str]
    custom_parameters: dict[str, str]


class KeyOut(BaseModel):
    kid: str


class OutboxItem(BaseModel):
    id: int
    course_id: int
    assignment_id: int
    user_id: int
    status: Literal["pending", "held", "sent", "failed"]
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    score_given: float | None
    created_at: datetime
    sent_at: datetime | None


class OutboxOut(BaseModel):
    counts: dict[str, int]
    items: list[OutboxItem]


class RosterSyncOut(BaseModel):
    members: int
    added: int
    pending: int = Field(
        default=0,
        description="Members whose email is an existing member's here, on a platform not "
        "trusted for email: no account made, linked on their first launch",
    )


class LineItemLink(BaseModel):
    """Which LMS gradebook column an assignment's scores go to."""

    model_config = ConfigDict(extra="forbid")

    context_id: int | None = Field(
        default=None,
        ge=1,
        le=2**53,
        description="The linked LMS course (from the line items list); needed only when the "
        "course is linked to several",
    )
    line_item_url: Url | None = Field(
        default=None,
        description="An existing line item of that LMS course (its id, from the line items "
        "list); none: one is made for the assignment on its first score",
    )


class LineItemLinkOut(BaseModel):
    context_id: int
    assignment_id: int
    line_item_url: str | None
    queued: int = Field(description="Students whose current score is now on its way")


class LmsLineItem(BaseModel):
    context_id: int
    id: str = Field(description="The line item's URL")
    label: str
    score_maximum: float | None
    resource_id: str | None
    assignment_id: int | None = Field(description="The assignment linked to it here, if any")


class LmsCourse(BaseModel):
    """An LMS course linked to this course."""

    context_id: int
    platform: str = Field(description="The registered LMS's name")
    lms_context: str = Field(description="The LMS's own id of the course")
    ags: bool = Field(description="Whether it offers a gradebook service to send scores to")


class LineItemCurrent(BaseModel):
    context_id: int
    line_item_url: str | None = Field(
        description="The column the scores go to; none: one is made on the first score"
    )


class LineItemState(BaseModel):
    """Where an assignment's scores go: the LMS courses linked here and its current links."""

    lms_courses: list[LmsCourse]
    links: list[LineItemCurrent]


class PendingMemberOut(BaseModel):
    """A course member an LMS roster names, to be linked on their first launch."""

    user_id: int
    platform: str = Field(description="The registered LMS's name")
    since: datetime
