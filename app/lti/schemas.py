"""What the LTI API reads and answers."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, StringConstraints

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
Url = Annotated[AnyHttpUrl, Field(max_length=1000)]


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
