"""The one place configuration is read from: environment variables prefixed ``GRADER_``."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]

SandboxKind = Literal["bwrap", "docker", "process"]


class Settings(BaseSettings):
    """Every knob of the service. The README's configuration table mirrors this class."""

    model_config = SettingsConfigDict(env_prefix="GRADER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)

    data_dir: Path = Field(
        default=REPO_ROOT / "data",
        description="Where the SQLite database and other state live.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL; unset means a SQLite file in data_dir.",
    )
    problems_dir: Path = Field(default=REPO_ROOT / "problems")

    sandbox: SandboxKind = "bwrap"
    allow_unsafe_sandbox: bool = Field(
        default=False,
        description="Must be true to use the 'process' sandbox, which does not isolate.",
    )

    # Deployment-wide ceilings; a problem may ask for less, never more.
    cpu_seconds: float = Field(default=5.0, gt=0, le=120)
    wall_seconds: float = Field(default=10.0, gt=0, le=300)
    memory_mb: int = Field(default=512, ge=64, le=16384)
    max_processes: int = Field(default=64, ge=1, le=4096)
    output_bytes: int = Field(default=64 * 1024, ge=1024, le=16 * 1024 * 1024)
    max_code_bytes: int = Field(default=64 * 1024, ge=256, le=1024 * 1024)

    workers: int = Field(default_factory=lambda: os.cpu_count() or 1, ge=1, le=256)

    @model_validator(mode="after")
    def _unsafe_sandbox_needs_opt_in(self) -> Settings:
        if self.sandbox == "process" and not self.allow_unsafe_sandbox:
            raise ValueError(
                "GRADER_SANDBOX=process runs submissions without isolation; "
                "set GRADER_ALLOW_UNSAFE_SANDBOX=1 to accept that (development only)"
            )
        return self

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'grader.sqlite3'}"


@lru_cache
def get_settings() -> Settings:
    return Settings()
