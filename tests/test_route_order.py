"""The order of ``app.main.ROUTERS`` decides only how fast a request is matched (the hot routes
come first), never which route answers: no route is shadowed by one matched before it."""

from __future__ import annotations

import re
from typing import Any

from fastapi import FastAPI
from starlette.routing import Match, Mount

from app.main import create_app
from tests.support.routes import FRAMEWORK_PATHS


def _in_match_order(app: FastAPI) -> list[Any]:
    routes: list[Any] = []
    for route in app.routes:
        if hasattr(route, "effective_route_contexts"):  # an included router
            routes.extend(route.effective_route_contexts())
        elif not isinstance(route, Mount):
            routes.append(route)
    return routes


def _concrete(path: str) -> str:
    """A path the template matches: every parameter an integer (which any convertor takes)."""
    return re.sub(r"\{[^}]+\}", "7", path)


def test_every_route_answers_its_own_paths() -> None:
    routes = _in_match_order(create_app())
    checked = 0
    for route in routes:
        if route.path in FRAMEWORK_PATHS:
            continue
        for method in sorted(route.methods or ()):
            scope = {
                "type": "http",
                "method": method,
                "path": _concrete(route.path),
                "root_path": "",
                "headers": [],
                "query_string": b"",
            }
            first = next(r for r in routes if r.matches(scope)[0] == Match.FULL)
            assert first is route, f"{method} {route.path} is answered by {first.path}"
            checked += 1
    assert checked > 50
