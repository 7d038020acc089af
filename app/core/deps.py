"""Typed dependencies on what the lifespan opened: the settings and the database sessions.

Every service reaches the database through ``SessionsDep``; domain packages build their
services from these in their own dependencies (``app/<package>/deps.py``).

A dependency that only reads ``app.state`` is ``async def``: FastAPI runs a plain ``def`` one
in the thread pool, a thread hop per dependency per request for a few attribute reads.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings


async def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_sessions(request: Request) -> sessionmaker[Session]:
    """The database sessions the lifespan opened (migrated at start-up)."""
    sessions: sessionmaker[Session] = request.app.state.sessions
    return sessions


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]


def site_url(request: Request, settings: Settings) -> str:
    """The service's address as people reach it, for links in mails: GRADER_PUBLIC_URL, else
    this request's."""
    return (settings.public_url or str(request.base_url)).rstrip("/")
