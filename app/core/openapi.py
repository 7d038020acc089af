"""The OpenAPI document, completed from what each route's dependencies can answer.

FastAPI documents a route's own ``responses`` and marks any security scheme in its dependency
tree as required. Two things it cannot know are filled in here, once for every route:

- the errors a dependency answers (an auth check's 401/403, say): a dependency declares them
  with ``@documented(...)`` and every route whose dependency tree reaches it documents them,
  in the one error shape;
- whether credentials are optional: when every documented dependency of a route accepts a
  request without credentials, ``{}`` joins the route's ``security`` (OpenAPI's "no
  credentials is fine too").

FastAPI's own 422 (``HTTPValidationError``) is replaced by the error shape the service answers
with (see ``app.core.errors``), and the models nested in request bodies a route documents itself
join the components, so every reference resolves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, iter_route_contexts

from app.core.errors import ErrorResponse

F = TypeVar("F", bound=Callable[..., Any])

SCHEMAS = "#/components/schemas/"
ERROR_REF = {"$ref": f"{SCHEMAS}{ErrorResponse.__name__}"}
_FASTAPI_422 = f"{SCHEMAS}HTTPValidationError"


@dataclass(frozen=True)
class DependencyDoc:
    """What a dependency adds to every route that depends on it, directly or not."""

    errors: Mapping[int, str]
    # Without credentials the dependency lets the request through (a student, say).
    optional: bool
    # Response headers per status: name -> description.
    headers: Mapping[int, Mapping[str, str]] = field(default_factory=dict)


_DOCS: dict[Callable[..., Any], DependencyDoc] = {}


def documented(
    errors: Mapping[int, str],
    *,
    optional: bool,
    headers: Mapping[int, Mapping[str, str]] | None = None,
) -> Callable[[F], F]:
    """Declare the error statuses a dependency answers (with ``ApiError``) and whether it lets
    a request without credentials through."""

    def mark(dependency: F) -> F:
        _DOCS[dependency] = DependencyDoc(dict(errors), optional, dict(headers or {}))
        return dependency

    return mark


def doc_of(dependency: Callable[..., Any] | None) -> DependencyDoc | None:
    return None if dependency is None else _DOCS.get(dependency)


def walk(dependant: Dependant) -> Iterator[Dependant]:
    """Every dependency in the tree, the route itself first."""
    stack = [dependant]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(node.dependencies)


def api_routes(routes: list[Any]) -> Iterator[Any]:
    """Every API route as served: with its router's prefix and dependencies (a FastAPI route
    context, which reads like an ``APIRoute``)."""
    for context in iter_route_contexts(routes):
        if isinstance(context.original_route, APIRoute):
            yield context


def route_docs(route: Any) -> list[DependencyDoc]:
    return [doc for node in walk(route.dependant) if (doc := doc_of(node.call)) is not None]


def _error_response(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_REF}}}


def _complete_operation(operation: dict[str, Any], docs: list[DependencyDoc]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    if docs:
        security = operation.get("security")
        if security and all(doc.optional for doc in docs) and {} not in security:
            security.append({})
        descriptions: dict[int, list[str]] = {}
        for doc in docs:
            for status, text in doc.errors.items():
                if text not in descriptions.setdefault(status, []):
                    descriptions[status].append(text)
        for status, texts in sorted(descriptions.items()):
            response = responses.setdefault(str(status), _error_response("; ".join(texts)))
            for doc in docs:
                for name, text in doc.headers.get(status, {}).items():
                    response.setdefault("headers", {}).setdefault(
                        name, {"description": text, "schema": {"type": "string"}}
                    )
    invalid = responses.get("422")
    if invalid is not None:
        schema = invalid.get("content", {}).get("application/json", {}).get("schema", {})
        if schema.get("$ref") == _FASTAPI_422:
            invalid["content"] = _error_response("")["content"]


def _hoist_definitions(document: dict[str, Any], schemas: dict[str, Any]) -> None:
    """Move the nested models' definitions of the request bodies a route documents itself
    (``app.core.bodies.json_body_schema``) into the components their references name. One name
    is one model: a name defined two different ways is an error, not a silent pick."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for name, definition in media.get("schema", {}).pop("$defs", {}).items():
                    if schemas.setdefault(name, definition) != definition:
                        raise ValueError(f"two different schemas are named {name!r}")


def complete(document: dict[str, Any], routes: list[Any]) -> None:
    """Add every route's dependency-declared errors and optional security to ``document``."""
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    _hoist_definitions(document, schemas)
    error_schema = ErrorResponse.model_json_schema(ref_template=SCHEMAS + "{model}")
    for name, definition in error_schema.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    schemas.setdefault(ErrorResponse.__name__, error_schema)
    for route in api_routes(routes):
        if not route.include_in_schema:
            continue
        docs = route_docs(route)
        for method in route.methods:
            operation = document["paths"].get(route.path_format, {}).get(method.lower())
            if operation is not None:
                _complete_operation(operation, docs)
    # FastAPI's validation-error models are unused once every 422 is the service's error shape.
    text = repr(document["paths"])
    for name in ("HTTPValidationError", "ValidationError"):
        if f"{SCHEMAS}{name}'" not in text:
            schemas.pop(name, None)


def install_openapi(app: FastAPI) -> None:
    """Serve the completed document. FastAPI rebuilds its document when routes are added;
    each new one is completed once."""
    generate = app.openapi
    completed: list[int] = []

    def openapi() -> dict[str, Any]:
        document = generate()
        if completed != [id(document)]:
            complete(document, app.routes)
            completed[:] = [id(document)]
        return document

    app.openapi = openapi  # type: ignore[method-assign]
