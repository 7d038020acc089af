"""What can go wrong talking to a server, each with a message a person can act on."""

from __future__ import annotations

from typing import Any

import httpx


class JudgeError(Exception):
    """A request the server refused, or a server that could not be reached. ``status`` is the
    HTTP status (None when there was no answer), ``code`` the server's error code."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code


class ServerUnreachable(JudgeError):
    """No answer: the server is down, the address is wrong, or the network failed every try."""


# What to tell the person, by status; the server's own message follows.
_ADVICE = {
    401: "this needs an account: sign in with `tj login --url URL`, or set TJ_TOKEN (an "
    "instructor's: `python -m app tokens create --role instructor --name ...` on the server)",
    403: "refused: the token is unknown or revoked (check TJ_TOKEN, or `tj logout` then "
    "`tj login`), or this account may not do this",
    404: "not found",
    409: "conflict",
    411: "the server wants a Content-Length",
    413: "too large for this server",
    415: "unsupported content type",
    422: "the server refused the request as invalid",
    429: "rate limited: too many submissions, retry later",
    503: "the server is busy (queue full), retry later",
}


def error_body(response: httpx.Response) -> dict[str, Any]:
    """The server's ``{"error": {code, message, field}}``, or {} for any other body."""
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def from_response(response: httpx.Response) -> JudgeError:
    error = error_body(response)
    status = response.status_code
    advice = _ADVICE.get(status, f"HTTP {status}")
    detail = str(error.get("message") or "").strip()
    if not error:
        # Not the grader's error shape: a proxy's page or another service on that port.
        detail = " ".join(response.text.split())[:200]
    field = error.get("field")
    parts = [advice]
    if detail:
        parts.append(detail)
    message = ": ".join(parts)
    if field:
        message += f" (field: {field})"
    code = error.get("code")
    if code == "problem_not_found":
        message += "; `tj problems` lists the problem ids"
    return JudgeError(message, status=status, code=str(code) if code else None)


def unreachable(url: str, exc: Exception) -> ServerUnreachable:
    reason = str(exc) or type(exc).__name__
    return ServerUnreachable(
        f"cannot reach the TensorJudge server at {url} ({reason}). Is it running? "
        "Set the address with --url or TJ_URL."
    )
