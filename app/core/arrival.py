"""When a request arrived: the moment its whole body had reached the service, taken by the
outermost middleware before authentication or any database work.

A submission counts by this time (docs/deadlines.md), not by when the server got round to
inserting it, so a student is never graded by the server's load. For the routes named by
``eager`` (the submission routes) the middleware reads the body itself as soon as the request
starts, under ``cap`` bytes, and stamps the request when the last byte is in; the body is then
replayed to the application unchanged. Holding a request open and sending the body later buys
nothing: the stamp is the body's last byte. Any other request is stamped when it starts.

Behind a reverse proxy the proxy saw the request first: with ``GRADER_PROXY_REQUEST_START`` on,
a request from one of ``GRADER_TRUSTED_PROXIES`` may carry the proxy's ``X-Request-Start``
(``t=<epoch>`` in seconds, milliseconds or microseconds, as nginx's ``${msec}`` or Heroku's
router write it); it is taken when earlier than the service's own stamp and at most
``MAX_PROXY_LEAD`` earlier. From any other address the header is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from datetime import UTC, datetime, timedelta

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core.config import Settings
from app.core.proxies import is_trusted_proxy

STATE_KEY = "received_at"
# scope["state"] key: the submission's "being accepted" mark, opened at its arrival (``opens``)
# and closed by the route once the row is stored, or when the request ends.
ACCEPTING_KEY = "accepting"
PROXY_HEADER = "x-request-start"
# A proxy stamp further back than this is a clock or unit error, not a slow network.
MAX_PROXY_LEAD = timedelta(minutes=5)
_SECONDS_SINCE_EPOCH = (1e9, 1e10)  # 2001 to 2286: tells s, ms, us and ns apart


def now() -> datetime:
    return datetime.now(UTC)


def received_at(request: Request) -> datetime:
    """The request's arrival (see the module); now if no middleware stamped it (a test app)."""
    stamped = request.scope.get("state", {}).get(STATE_KEY)
    return stamped if isinstance(stamped, datetime) else now()


def close_accepting(request: Request) -> None:
    """The submission is stored (or refused): its "being accepted" mark ends here."""
    accepting = request.scope.get("state", {}).pop(ACCEPTING_KEY, None)
    if isinstance(accepting, ExitStack):
        accepting.close()


def proxy_start(value: str) -> datetime | None:
    """``X-Request-Start`` as a time, or None when it is not one."""
    text = value.strip()
    if text.startswith("t="):
        text = text[2:]
    try:
        number = float(text)
    except ValueError:
        return None
    for scale in (1.0, 1e3, 1e6, 1e9):
        seconds = number / scale
        if _SECONDS_SINCE_EPOCH[0] <= seconds < _SECONDS_SINCE_EPOCH[1]:
            return datetime.fromtimestamp(seconds, UTC)
    return None


class ArrivalMiddleware:
    """Stamps ``scope["state"]["received_at"]`` (see the module)."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        eager: re.Pattern[str],
        cap: int,
        opens: Callable[[], AbstractContextManager[object]] | None = None,
    ) -> None:
        """``opens``: entered when a request of ``eager`` arrives and left once the route
        closes it (``close_accepting``) or the request ends: graders step aside meanwhile."""
        self.app = app
        self.settings = settings
        self.eager = eager
        self.cap = cap
        self.opens = opens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        stamp = now()
        with ExitStack() as accepting:
            if (
                scope["method"] == "POST"
                and self.eager.fullmatch(scope["path"])
                and not self._declared_over_cap(scope)
            ):
                early, receive = await self._read_ahead(receive)
                stamp = now() if early else stamp
                if self.opens is not None:
                    accepting.enter_context(self.opens())
                    state[ACCEPTING_KEY] = accepting
            state[STATE_KEY] = self._from_proxy(scope, stamp)
            await self.app(scope, receive, send)

    def _declared_over_cap(self, scope: Scope) -> bool:
        """A body declared over the cap is refused from its headers by the body ceiling: waiting
        here for bytes the client may never send would hold the refusal back."""
        length = Headers(scope=scope).get("content-length", "")
        return length.isdigit() and int(length) > self.cap

    async def _read_ahead(self, receive: Receive) -> tuple[bool, Receive]:
        """Reads the body up to ``cap`` bytes; True when it was all read. The application
        receives the same messages, then the rest of the stream (a body over the cap is the
        route's own 413 to answer)."""
        held: list[Message] = []
        size = 0
        complete = False
        while size <= self.cap:
            message = await receive()
            held.append(message)
            if message["type"] != "http.request":
                break  # the client went away: the application sees it as it would have
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                complete = True
                break

        async def replay() -> Message:
            if held:
                return held.pop(0)
            return await receive()

        return complete, replay

    def _from_proxy(self, scope: Scope, own: datetime) -> datetime:
        if not self.settings.proxy_request_start:
            return own
        client = scope.get("client")
        if not client or not is_trusted_proxy(self.settings, client[0]):
            return own
        value = Headers(scope=scope).get(PROXY_HEADER)
        proxied = proxy_start(value) if value else None
        if proxied is None or proxied >= own or own - proxied > MAX_PROXY_LEAD:
            return own
        return proxied
