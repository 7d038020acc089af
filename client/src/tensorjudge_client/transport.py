"""HTTP to one server: timeouts on every request, retries of network failures, ``Retry-After``
honoured on 429 and 503, and every refusal turned into a ``JudgeError``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

import httpx

from tensorjudge_client.errors import JudgeError, from_response, unreachable
from tensorjudge_client.version import __version__

DEFAULT_URL = "http://127.0.0.1:8000"
# Above the server's 15 s keep-alive on event streams, so a quiet stream is not a timeout.
DEFAULT_TIMEOUT = 30.0
CONNECT_TIMEOUT = 10.0
DEFAULT_RETRIES = 4
# Longest total time spent obeying Retry-After for one request before giving up.
DEFAULT_MAX_RETRY_WAIT = 120.0
RETRY_AFTER_STATUSES = (429, 503)
BACKOFF_SECONDS = (0.25, 0.5, 1.0, 2.0, 4.0)


def retry_after_seconds(response: httpx.Response, default: float = 1.0) -> float:
    """``Retry-After`` as seconds: a number or an HTTP date (RFC 9110); ``default`` if absent."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    return max(0.0, when.timestamp() - time.time())


def server_url(url: str) -> str:
    """``url`` as a base URL: ``127.0.0.1:8000`` means ``http://127.0.0.1:8000`` (what people
    type after seeing the server's start-up line); anything else that is not an http(s) address
    with a host is refused with what is wrong with it, not reported later as an unreachable
    server."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- a port that is not a number raises here
    except ValueError as exc:
        raise JudgeError(
            f"{url!r} is not a server URL ({exc}); e.g. http://127.0.0.1:8000"
        ) from None
    if parts.scheme not in ("http", "https"):
        raise JudgeError(
            f"{url!r} is not a server URL: the scheme must be http:// or https://, "
            f"not {parts.scheme}://"
        )
    if not parts.hostname:
        raise JudgeError(
            f"{url!r} is not a server URL: it names no host; e.g. http://127.0.0.1:8000"
        )
    return text.rstrip("/")


def backoff(attempt: int) -> float:
    return BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS) - 1)]


class Transport:
    """One ``httpx.Client`` for one server. ``sleep`` is how waits happen (injectable so a
    notebook can be interrupted between them like anywhere else)."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self.sleep = sleep
        headers = {"User-Agent": f"tensorjudge-client/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.client = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
        )

    def close(self) -> None:
        self.client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        idempotent: bool | None = None,
        headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        """Sends until it gets an answer that is not 429/503, then returns it (2xx) or raises
        ``JudgeError``. A request is re-sent after a failure mid-exchange only when
        ``idempotent`` (default: GET/HEAD); one never sent (connection refused) always is."""
        if idempotent is None:
            idempotent = method.upper() in ("GET", "HEAD")
        failures = 0
        waited = 0.0
        while True:
            try:
                response = self.client.request(method, path, headers=headers, **kwargs)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                failures += 1
                if failures > self.retries:
                    raise unreachable(self.url, exc) from exc
                self.sleep(backoff(failures - 1))
                continue
            except httpx.TransportError as exc:
                # Sent, but the answer was lost: only a request safe to repeat is repeated.
                failures += 1
                if not idempotent or failures > self.retries:
                    raise unreachable(self.url, exc) from exc
                self.sleep(backoff(failures - 1))
                continue
            if response.status_code in RETRY_AFTER_STATUSES and "Retry-After" in response.headers:
                # Without the header (a proxy's 503 for a server that is down) nobody said
                # waiting helps: reported at once.
                delay = retry_after_seconds(response)
                if waited + delay > self.max_retry_wait:
                    raise from_response(response)
                self.sleep(delay)
                waited += delay
                continue
            if response.status_code >= 400:
                raise from_response(response)
            return response

    def json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError:
            raise JudgeError(
                f"{self.url}{path} did not answer JSON: is this a TensorJudge server?",
                status=response.status_code,
            ) from None

    @contextmanager
    def stream(self, path: str, headers: Mapping[str, str]) -> Iterator[httpx.Response]:
        """A GET whose body is read as it arrives (server-sent events). A refusal raises
        ``JudgeError``; network failures are left to the caller, which knows where to resume."""
        with self.client.stream("GET", path, headers=headers) as response:
            if response.status_code >= 400:
                response.read()
                raise from_response(response)
            yield response
