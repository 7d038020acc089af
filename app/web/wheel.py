"""Serves the client's built wheel, so a student installs ``tj`` with one
``pip install <server>/client/<wheel>``: ``GET /api/client`` says which wheel there is,
``GET /client/`` lists it (a page pip's ``--find-links`` reads too), ``GET /client/<wheel>``
is the file. Only files in ``GRADER_CLIENT_WHEEL_DIR`` named like the client's wheels are served.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse
from pydantic import BaseModel, Field

from app.core.deps import SettingsDep
from app.core.errors import ApiError, error_responses

router = APIRouter(tags=["client"])

WHEEL_NAME = re.compile(r"^tensorjudge_client-(?P<version>[A-Za-z0-9_.+!]+)-[A-Za-z0-9_.-]+\.whl$")


class ClientWheel(BaseModel):
    filename: str
    version: str
    path: str = Field(description="Where to download it: `pip install <server URL><path>`.")
    size: int = Field(description="Bytes.")


def wheels(directory: Path) -> list[Path]:
    """The client's wheels in ``directory``, newest first."""
    try:
        found = [p for p in directory.iterdir() if WHEEL_NAME.match(p.name) and p.is_file()]
    except OSError:
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def not_built() -> ApiError:
    return ApiError(
        404,
        "client_not_built",
        "the client wheel is not built on this server; build it with `make client-wheel` "
        "(`make run` does) or set GRADER_CLIENT_WHEEL_DIR",
    )


def describe(path: Path) -> ClientWheel:
    match = WHEEL_NAME.match(path.name)
    assert match is not None
    return ClientWheel(
        filename=path.name,
        version=match["version"],
        path=f"/client/{path.name}",
        size=path.stat().st_size,
    )


@router.get(
    "/api/client",
    response_model=ClientWheel,
    responses=error_responses({404: "No client wheel is built on this server"}),
)
def client_wheel(settings: SettingsDep) -> ClientWheel:
    """The client wheel this server offers (the newest, when there are several)."""
    found = wheels(settings.client_wheel_dir)
    if not found:
        raise not_built()
    return describe(found[0])


@router.get("/client/", response_class=HTMLResponse, include_in_schema=False)
def client_index(settings: SettingsDep) -> HTMLResponse:
    found = wheels(settings.client_wheel_dir)
    if not found:
        raise not_built()
    links = "\n".join(f'<a href="{escape(p.name)}">{escape(p.name)}</a><br>' for p in found)
    return HTMLResponse(
        "<!doctype html>\n<html><head><title>TensorJudge client</title></head><body>\n"
        "<h1>TensorJudge client</h1>\n"
        f"<p>Install: <code>pip install &lt;this server&gt;/client/{escape(found[0].name)}"
        "</code></p>\n"
        f"{links}\n</body></html>\n"
    )


@router.get("/client/{filename}", include_in_schema=False)
def client_file(filename: str, settings: SettingsDep) -> FileResponse:
    # Looked up among the listed wheels, never joined to the path as given.
    for path in wheels(settings.client_wheel_dir):
        if path.name == filename:
            return FileResponse(path, media_type="application/octet-stream", filename=path.name)
    raise ApiError(404, "client_wheel_not_found", f"no client wheel named {filename!r}", "filename")
