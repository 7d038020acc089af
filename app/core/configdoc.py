"""The configuration reference (docs/configuration.md), generated from ``Settings`` so the page
and the code cannot drift apart: ``python -m app config-docs`` rewrites it, ``--check`` fails
when the committed page is stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from app.core.config import REPO_ROOT, Settings

DOC_PATH = REPO_ROOT / "docs" / "configuration.md"

INTRO = """\
# Configuration

Everything is read from environment variables prefixed `GRADER_` by one settings class,
`app/core/config.py` (a `.env` file is not read; see `.env.example` for the Docker Compose stack).
This page is generated from that class by `python -m app config-docs`; a test fails when it is
stale.

| variable | default | meaning |
|---|---|---|
"""


def _default(field: FieldInfo) -> str:
    extra = field.json_schema_extra
    if isinstance(extra, dict) and "doc_default" in extra:
        return str(extra["doc_default"])
    value: Any = field.default
    if value is PydanticUndefined or value is None:
        return "unset"
    if isinstance(value, Path):
        # Defaults under the checkout are shown relative to it: the same on every machine.
        try:
            return f"`./{value.relative_to(REPO_ROOT)}`"
        except ValueError:
            return f"`{value}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def render() -> str:
    rows = []
    for name, field in Settings.model_fields.items():
        if not field.description:
            raise ValueError(f"Settings.{name} has no description")
        meaning = " ".join(field.description.split()).replace("|", "\\|")
        rows.append(f"| `GRADER_{name.upper()}` | {_default(field)} | {meaning} |")
    return INTRO + "\n".join(rows) + "\n"


def write(path: Path = DOC_PATH) -> None:
    path.write_text(render(), encoding="utf-8")


def is_current(path: Path = DOC_PATH) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == render()
