"""A submission body over the cap is refused before it is read: a 1 GiB request, declared or
chunked, costs the real server no more memory than the cap, and the 413 comes while the client
is still sending."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import Request
from fastapi.testclient import TestClient

from app.core.config import Settings
from app.main import create_app
from tests.support.bodies import GIB, MIB, bytes_read, peak_rss, reset_peak_rss, send_body
from tests.support.services import AppProcess, serve

SUBMIT = "/api/problems/multi-head-attention/submissions"
# What the server may grow by while refusing one body: the cap (64 KiB for a submission) and
# the working memory of one request: half the app-wide ceiling (33 MiB), which a route that held
# the body before checking its size would reach.
RSS_BOUND = 16 * MIB
# Bytes the client may have written before the answer: the kernel's socket buffers.
SENT_BOUND = 64 * MIB
# Bytes the server itself may read meanwhile (from the socket, and its database's files): the
# route's cap of 64 KiB, the HTTP server's read-ahead (64 KiB reads, paused past its high-water
# mark) and the worker's polls; a route that read the body before checking its size would read
# up to the app-wide ceiling (33 MiB).
READ_BOUND = 8 * MIB


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppProcess, str]]:
    root: Path = tmp_path_factory.mktemp("bodies")
    env = {"GRADER_DATA_DIR": str(root / "data"), "GRADER_WORKERS": "1"}
    process, base = serve(env, root / "server.log")
    try:
        yield process, base
    finally:
        process.stop()


# Declared over the app-wide ceiling: refused before any route runs. Chunked: the route cuts it
# at its own cap.
CEILING_BYTES = 33 * MIB  # GRADER_CASE_MAX_UPLOAD_BYTES, the largest route cap, + 1 MiB
CEILING = {
    "code": "body_too_large",
    "message": f"the body is over {CEILING_BYTES} bytes",
    "field": "body",
}
ROUTE = {"code": "code_too_large", "message": "the limit is 65536 bytes", "field": "code"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("chunked", "error"), [(False, CEILING), (True, ROUTE)], ids=["content-length", "chunked"]
)
def test_a_1_gib_submission_is_refused_before_it_is_read(
    server: tuple[AppProcess, str], chunked: bool, error: dict[str, str]
) -> None:
    process, base = server
    idle = reset_peak_rss(process.pid)
    read_before = bytes_read(process.pid)
    answer = send_body(base, SUBMIT, total=GIB, chunked=chunked)
    grown = peak_rss(process.pid) - idle
    read = bytes_read(process.pid) - read_before
    assert read < READ_BOUND, f"the server read {read / MIB:.1f} MiB of the body"
    assert answer.status == 413, answer
    assert answer.body is not None
    assert answer.body["error"] == error
    assert grown < RSS_BOUND, f"the server grew by {grown / MIB:.0f} MiB"
    assert answer.sent < SENT_BOUND, f"{answer.sent / MIB:.0f} MiB sent before the 413"


@pytest.mark.timeout(120)
def test_a_declared_length_over_the_submission_cap_is_refused_unread(
    server: tuple[AppProcess, str],
) -> None:
    """Under the app-wide ceiling but over the route's cap: the route's own 413, unread."""
    _, base = server
    answer = send_body(base, SUBMIT, total=8 * MIB)
    assert answer.status == 413, answer
    assert answer.body is not None and answer.body["error"] == ROUTE
    assert answer.sent < 8 * MIB


def _uncapped_route(settings: Settings) -> TestClient:
    """The app with one more route that reads its whole body with no cap of its own."""
    app = create_app(settings)

    async def size(request: Request) -> dict[str, int]:
        return {"size": len(await request.body())}

    app.add_api_route("/uncapped", size, methods=["POST"])
    return TestClient(app)


def test_the_app_wide_ceiling_bounds_a_route_without_a_cap(settings: Settings) -> None:
    ceiling = CEILING_BYTES
    with _uncapped_route(settings) as api:
        assert api.post("/uncapped", content=b"a" * 1000).json() == {"size": 1000}

        declared = api.post("/uncapped", content=b"a" * (ceiling + 1))
        assert declared.status_code == 413
        assert declared.json()["error"] == CEILING

        def stream() -> Iterator[bytes]:  # no Content-Length: the stream itself is counted
            for _ in range(ceiling // MIB + 1):
                yield b"a" * MIB

        streamed = api.post("/uncapped", content=stream())
        assert streamed.status_code == 413
        assert streamed.json()["error"] == CEILING
        assert api.post("/uncapped", content=b"a" * ceiling).json() == {"size": ceiling}
