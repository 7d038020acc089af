"""The configuration in force, for administrators: every ``GRADER_`` setting as this process
read it, with secrets redacted (only whether one is set is shown) and the password of any URL
with credentials masked, so the page can be shown on a screen or pasted into a bug report."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from fastapi import APIRouter
from pydantic import BaseModel, Field, SecretStr

from app.auth.deps import Admin
from app.core.config import Settings
from app.core.deps import SettingsDep
from app.core.errors import error_responses

router = APIRouter(tags=["admin"])

REDACTED = "(set, hidden)"
# A field whose name says it holds a credential is redacted whatever its type.
SECRET_WORDS = ("secret", "password", "token", "private_key")


class SettingOut(BaseModel):
    name: str
    value: str | None
    default: bool = Field(description="Not set by the environment: the built-in default.")
    redacted: bool


def _masked_url(text: str) -> tuple[str, bool]:
    """``scheme://user:***@host/...``; anything else unchanged."""
    try:
        parts = urlsplit(text)
    except ValueError:
        return text, False
    if parts.password is None:
        return text, False
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit(parts._replace(netloc=netloc)), True


def _shown(name: str, value: Any) -> tuple[str | None, bool]:
    if value is None:
        return None, False
    if isinstance(value, SecretStr) or any(word in name for word in SECRET_WORDS):
        return REDACTED, True
    if isinstance(value, bool):
        return "true" if value else "false", False
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value), False
    text = str(value)
    return _masked_url(text) if "://" in text else (text, False)


def settings_in_force(settings: Settings) -> list[SettingOut]:
    """One row per setting, in the order ``Settings`` declares them."""
    rows = []
    for name in Settings.model_fields:
        value = getattr(settings, name)
        shown, redacted = _shown(name, value)
        rows.append(
            SettingOut(
                name=f"GRADER_{name.upper()}",
                value=shown,
                default=name not in settings.model_fields_set,
                redacted=redacted,
            )
        )
    return rows


@router.get("/api/admin/config", response_model=list[SettingOut], responses=error_responses({}))
async def configuration(admin: Admin, settings: SettingsDep) -> list[SettingOut]:
    """The configuration in force, secrets redacted. Administrators only."""
    return settings_in_force(settings)
