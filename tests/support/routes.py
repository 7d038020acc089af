"""Every route the application serves, read from the app itself (not from a list), so a route
added anywhere shows up in the tests that walk them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from starlette.routing import Mount

# FastAPI's own documentation routes: they serve no data of ours.
FRAMEWORK_PATHS = frozenset({"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})


def _contexts(app: FastAPI) -> Iterator[Any]:
    for route in app.routes:
        if hasattr(route, "effective_route_contexts"):  # an included router
            yield from route.effective_route_contexts()
        else:
            yield route


def app_routes(app: FastAPI) -> list[tuple[str, str]]:
    """(method, path template) of every route, HEAD left out (it answers as GET does)."""
    found: set[tuple[str, str]] = set()
    for route in _contexts(app):
        if isinstance(route, Mount):
            continue  # /static: the built assets, public by design
        # Without a convertor: "/api/courses/{course_id:int}" is "/api/courses/{course_id}".
        path: str = re.sub(r":\w+\}", "}", route.path)
        if path in FRAMEWORK_PATHS:
            continue
        for method in route.methods or ():
            if method != "HEAD":
                found.add((method, path))
    return sorted(found, key=lambda r: (r[1], r[0]))
