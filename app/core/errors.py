"""One JSON error shape for every failure: ``{"error": {"code", "message", "field"?}}``."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match


class ErrorBody(BaseModel):
    code: str
    message: str
    field: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


def error_responses(
    codes: dict[int, str], retry_after: tuple[int, ...] = ()
) -> dict[int | str, dict[str, Any]]:
    """A route's OpenAPI ``responses`` for statuses answered with the JSON error shape; those in
    ``retry_after`` also carry a ``Retry-After`` header."""
    out: dict[int | str, dict[str, Any]] = {}
    for code, text in codes.items():
        out[code] = {"model": ErrorResponse, "description": text}
        if code in retry_after:
            out[code]["headers"] = {
                "Retry-After": {
                    "description": "Seconds to wait before retrying",
                    "schema": {"type": "integer"},
                }
            }
    return out


def first_error(exc: ValidationError) -> tuple[str | None, str]:
    """The dotted field (None for the whole model) and message of a validation error's first
    complaint: every error this service reports names one field."""
    first = exc.errors()[0]
    return ".".join(str(part) for part in first["loc"]) or None, first["msg"]


class ApiError(Exception):
    def __init__(
        self,
        status_code: int,
        code: str,
        message: str,
        field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.body = ErrorResponse(error=ErrorBody(code=code, message=message, field=field))
        self.headers = headers


def _json(status: int, body: ErrorResponse, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content=body.model_dump(), headers=headers)


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _json(exc.status_code, exc.body, exc.headers)


def allowed_methods(request: Request) -> str:
    """Every method of every route at the request's path. Starlette's 405 names only the first
    route that matched the path, while one path often has a route per method."""
    methods: set[str] = set()
    for route in iter_route_contexts(request.app.router.routes):
        route_methods = route.methods
        if route_methods and route.matches(request.scope)[0] != Match.NONE:
            methods |= route_methods
    return ", ".join(sorted(methods))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = ErrorResponse(error=ErrorBody(code=code, message=str(exc.detail)))
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405:
        # Kept for a 405 from outside the routes (the static files' mount sets its own).
        headers["Allow"] = allowed_methods(request) or headers.get("Allow", "")
        if not headers["Allow"]:
            del headers["Allow"]
    return _json(exc.status_code, body, headers or None)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors: list[Any] = list(exc.errors())
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    field = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path"))
    body = ErrorResponse(
        error=ErrorBody(code="invalid_request", message=str(first.get("msg")), field=field or None)
    )
    return _json(422, body)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
