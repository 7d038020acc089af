"""Request bodies read under a cap: refused by their declared length before any byte is read,
and cut as soon as the bytes streamed in pass the cap (a chunked request declares none).

``read_capped`` is what a route that reads its body calls, with the route's own cap and error;
``read_model`` reads a JSON body under a cap into a pydantic model, and ``json_body_schema``
documents such a body in the OpenAPI document.
``BodyLimitMiddleware`` applies one ceiling to every request, so a route added later is
bounded even if it reads its body some other way.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core import metrics
from app.core.errors import ApiError, first_error
from app.core.openapi import SCHEMAS

SCHEMA_REF = SCHEMAS + "{model}"

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class BodyCap:
    """A limit and the error that reports it (a 413 in the project's error shape)."""

    limit: int
    code: str = "body_too_large"
    message: str | None = None
    field: str | None = "body"

    def error(self) -> ApiError:
        return ApiError(
            413, self.code, self.message or f"the body is over {self.limit} bytes", self.field
        )


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The request's ``Content-Length``, or None when it sends none (or an unreadable one)."""
    value = headers.get("content-length", "")
    return int(value) if value.isdigit() else None


async def read_capped(request: Request, cap: BodyCap) -> bytes:
    """The whole body, never holding more than ``cap.limit`` bytes of it."""
    declared = declared_length(request.headers)
    if declared is not None and declared > cap.limit:
        raise cap.error()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap.limit:
            raise cap.error()
        chunks.append(chunk)
    return b"".join(chunks)


async def read_model(request: Request, cap: BodyCap, model: type[Model]) -> Model:
    """The JSON body as ``model``: 413 over the cap, 400 when it is not UTF-8 JSON, 422 naming
    the first invalid field."""
    raw = await read_capped(request, cap)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ApiError(400, "invalid_json", "the body is not UTF-8 JSON") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        field, message = first_error(exc)
        raise ApiError(422, "invalid_request", message, field) from None


def json_body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The ``openapi_extra`` of a route that reads its body itself with ``read_model``. The
    models it nests are referred to among the document's components, where
    ``app.core.openapi`` moves their definitions (a ``#/$defs/...`` reference would be read
    from the document's root, where nothing is)."""
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": model.model_json_schema(ref_template=SCHEMA_REF)}
            },
        }
    }


class BodyLimitMiddleware:
    """Every HTTP request's body under ``limit`` bytes: a larger declared length is answered
    with 413 before the application runs; a body that streams past it makes the application's
    next read raise the 413 (``ApiError``, turned into the JSON error by its handler)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.cap = BodyCap(limit)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = declared_length(Headers(scope=scope))
        if declared is not None and declared > self.cap.limit:
            error = self.cap.error()
            # Counted here: the route (a submission's, say) never runs to count its refusal.
            metrics.refused(error.body.error.code)
            # The unread body stays in the client's socket: close rather than drain it.
            refusal = JSONResponse(
                error.body.model_dump(), status_code=413, headers={"Connection": "close"}
            )
            await refusal(scope, receive, send)
            return
        received = 0

        async def capped_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.cap.limit:
                    raise self.cap.error()
            return message

        await self.app(scope, capped_receive, send)
