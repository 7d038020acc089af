"""The OpenAPI document says what every route answers: the errors its dependencies raise (an auth
check's 401/403), whether credentials are optional, the one error shape on every 4xx it lists,
and which methods a path takes (the ``Allow`` of a 405). The mechanism is ``app.core.openapi``;
these tests make a route that escapes it fail."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from typing import Annotated, Any

import jsonschema
import pytest
from fastapi import Depends, FastAPI
from fastapi.security import HTTPBearer
from fastapi.security.base import SecurityBase
from fastapi.testclient import TestClient
from pydantic import ValidationError, create_model

from app.assignments.schemas import OverrideCreate
from app.auth.accounts import AccountError, normalize_email
from app.auth.deps import Instructor, OptionalPrincipal
from app.auth.schemas import UserCreate
from app.core.bodies import json_body_schema
from app.core.config import REPO_ROOT
from app.core.errors import install_error_handlers
from app.core.openapi import ERROR_REF, api_routes, doc_of, install_openapi, route_docs
from app.main import create_app
from tests.submissions.conftest import grader_settings

ERROR_CONTENT = {"application/json": {"schema": ERROR_REF}}
# At module level: the routes below are read with postponed annotations.
OWN_SCHEME = HTTPBearer(auto_error=False)


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    return create_app(grader_settings(tmp_path_factory.mktemp("openapi") / "data", None))


@pytest.fixture(scope="module")
def document(app: FastAPI) -> dict[str, Any]:
    body: dict[str, Any] = TestClient(app).get("/openapi.json").json()
    return body


def undeclared_auth(routes: list[Any]) -> Iterator[str]:
    """Dependencies that authenticate but do not say what they answer: those of ``app.auth``,
    and whatever reads a security scheme (a bearer token, a session cookie...) itself."""
    for route in api_routes(routes):
        stack = [route.dependant]
        while stack:
            node = stack.pop()
            for child in node.dependencies:
                reads_credentials = isinstance(child.call, SecurityBase)
                if reads_credentials and node is not route.dependant and doc_of(node.call):
                    continue
                if reads_credentials or getattr(child.call, "__module__", "").startswith(
                    "app.auth"
                ):
                    owner = node.call if reads_credentials else child.call
                    if doc_of(owner) is None:
                        yield f"{sorted(route.methods)} {route.path_format}: {owner!r}"
                stack.append(child)


def test_every_auth_dependency_says_what_it_answers(app: FastAPI) -> None:
    assert list(undeclared_auth(app.routes)) == []


def test_a_route_reading_credentials_without_the_mechanism_is_caught() -> None:
    bare = FastAPI()

    @bare.get("/own-check")
    def own_check(credentials: Annotated[Any, Depends(OWN_SCHEME)]) -> None: ...

    @bare.get("/fine")
    def fine(principal: Instructor) -> None: ...

    found = list(undeclared_auth(bare.routes))
    assert len(found) == 1 and "/own-check" in found[0], found


def test_every_route_documents_what_its_dependencies_answer(
    app: FastAPI, document: dict[str, Any]
) -> None:
    checked = 0
    for route in api_routes(app.routes):
        if not route.include_in_schema:
            continue
        docs = route_docs(route)
        for method in route.methods:
            operation = document["paths"][route.path_format][method.lower()]
            for doc in docs:
                for status in doc.errors:
                    response = operation["responses"][str(status)]
                    assert response["content"] == ERROR_CONTENT, (route.path_format, status)
                    checked += 1
            if docs:
                optional = all(doc.optional for doc in docs)
                assert ({} in operation["security"]) == optional, route.path_format
    # Instructor routes (401 and 403), and student routes that take an optional token.
    assert checked >= 2 * 8


def test_instructor_and_optional_token_routes_read_as_such(document: dict[str, Any]) -> None:
    paths = document["paths"]
    listing = paths["/api/problems/{problem_id}/test-cases"]
    assert listing["get"]["security"] == [{"HTTPBearer": []}, {}]
    assert listing["post"]["security"] == [{"HTTPBearer": []}]
    for operation in (listing["get"], listing["post"]):
        assert {"401", "403"} <= set(operation["responses"])
        assert "WWW-Authenticate" in operation["responses"]["401"]["headers"]
    submit = paths["/api/problems/{problem_id}/submissions"]["post"]
    assert submit["security"] == [{"HTTPBearer": []}, {}] and "403" in submit["responses"]
    assert "security" not in paths["/api/problems"]["get"]


def test_a_new_route_is_documented_by_its_dependencies_alone() -> None:
    bare = FastAPI()
    install_error_handlers(bare)

    @bare.get("/staff")
    def staff(principal: Instructor) -> None: ...

    @bare.get("/anyone")
    def anyone(principal: OptionalPrincipal) -> None: ...

    install_openapi(bare)
    paths = bare.openapi()["paths"]
    assert paths["/staff"]["get"]["security"] == [{"HTTPBearer": []}]
    assert paths["/anyone"]["get"]["security"] == [{"HTTPBearer": []}, {}]
    for path in ("/staff", "/anyone"):
        for status in ("401", "403"):
            assert paths[path]["get"]["responses"][status]["content"] == ERROR_CONTENT


def _is_error_shape(document: dict[str, Any], content: dict[str, Any]) -> bool:
    """The error shape itself, or one that extends it with more fields (a roster's row
    errors): its ``error`` is the same object, and required."""
    if content == ERROR_CONTENT:
        return True
    ref = content.get("application/json", {}).get("schema", {}).get("$ref", "")
    schemas = document["components"]["schemas"]
    schema = schemas.get(ref.rsplit("/", 1)[-1], {})
    base = schemas["ErrorResponse"]
    return bool(
        schema.get("properties", {}).get("error") == base["properties"]["error"]
        and "error" in schema.get("required", [])
    )


def test_every_error_listed_has_the_one_error_shape(document: dict[str, Any]) -> None:
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith("4"):
                    assert _is_error_shape(document, response["content"]), (method, path, status)


def _template_pattern(path: str, operations: dict[str, Any]) -> str:
    """A regex of the URLs a path template serves: integer path parameters match digits only
    (the routes say ``{course_id:int}``), others any segment."""
    integers = {
        p["name"]
        for operation in operations.values()
        for p in operation.get("parameters", [])
        if p["in"] == "path" and p.get("schema", {}).get("type") == "integer"
    }

    def segment(match: re.Match[str]) -> str:
        return "[0-9]+" if match.group(1) in integers else "[^/]+"

    return "^" + re.sub(r"\{([^}]+)\}", segment, path) + "$"


def _methods_serving(document: dict[str, Any], url: str) -> set[str]:
    """Every method some path template serves this URL with."""
    found: set[str] = set()
    for path, operations in document["paths"].items():
        if re.match(_template_pattern(path, operations), url):
            found |= {method.upper() for method in operations}
    return found


def test_a_405_lists_every_method_of_its_path(app: FastAPI, document: dict[str, Any]) -> None:
    client = TestClient(app)
    for path in document["paths"]:
        url = re.sub(r"\{[^}]+\}", "1", path)  # any value routes alike; "1" fits an integer
        served = _methods_serving(document, url)
        for method in sorted({"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} - served):
            response = client.request(method, url)
            assert response.status_code == 405, (method, url)
            allowed = {m.strip() for m in response.headers["allow"].split(",")}
            assert allowed == served, (method, url)
            assert response.json()["error"]["code"] == "method_not_allowed"


def test_each_fuzz_exception_names_one_operation(document: dict[str, Any]) -> None:
    """schemathesis.toml may relax a check for an operation whose answer depends on data the
    document cannot describe; never for the whole document."""
    config = tomllib.loads((REPO_ROOT / "schemathesis.toml").read_text())
    for exception in config.get("operations", []):
        # One key naming one operation: schemathesis matches separate include-* keys with "or".
        assert set(exception) - {"checks"} == {"include-name"}, exception
        method, path = exception["include-name"].split(" ", 1)
        assert method.lower() in document["paths"][path], exception


def _refs(node: Any, where: str = "#") -> Iterator[tuple[str, str]]:
    """(reference, where it is) for every ``$ref`` in ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value, where
            else:
                yield from _refs(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _refs(value, f"{where}/{index}")


def _resolve(document: dict[str, Any], ref: str) -> Any:
    """The JSON pointer ``ref`` read from the document's root (RFC 6901)."""
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        key = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and key in node, ref
        node = node[key]
    return node


def test_every_reference_resolves(document: dict[str, Any]) -> None:
    found = list(_refs(document))
    unresolved = []
    for ref, where in found:
        try:
            assert isinstance(_resolve(document, ref), dict)
        except AssertionError:
            unresolved.append((ref, where))
    assert unresolved == []
    # The models nested in the assignment routes' bodies are among them.
    refs = {ref for ref, _ in found}
    assert {f"#/components/schemas/{m}" for m in ("ProblemEntry", "LateDeadline")} <= refs
    assert "$defs" not in repr(document["paths"])


def test_two_body_models_of_one_name_are_refused() -> None:
    bare = FastAPI()
    for path, fields in (("/a", {"x": (int, ...)}), ("/b", {"y": (str, ...)})):
        nested = create_model("Entry", **fields)  # type: ignore[call-overload]
        body = create_model("Body", entry=(nested, ...))

        @bare.post(path, openapi_extra=json_body_schema(body))
        def post() -> None: ...

    install_openapi(bare)
    with pytest.raises(ValueError, match="'Entry'"):
        bare.openapi()


def _body_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    schema: dict[str, Any] = document["paths"][path][method]["requestBody"]["content"][
        "application/json"
    ]["schema"]
    return schema


OVERRIDES = "/api/courses/{course_id}/assignments/{assignment_id}/overrides"
# Bodies the server refuses by their shape alone, which the document says it refuses: (method,
# path, body, accepted). Each is checked against the document and against the server's model.
SHAPES: list[tuple[str, str, dict[str, Any], bool]] = [
    ("post", "/api/admin/users", {"email": "000", "name": "n"}, False),
    ("post", "/api/admin/users", {"email": "a@b", "name": "n"}, False),
    ("post", "/api/admin/users", {"email": "a b@c.d", "name": "n"}, False),
    ("post", "/api/admin/users", {"email": " Ann@Example.edu ", "name": "n"}, True),
    ("post", OVERRIDES, {"user_id": 3, "section": "A", "extra_attempts": 1}, False),
    ("post", OVERRIDES, {"user_id": 3, "user_ids": [4], "extra_attempts": 1}, False),
    ("post", OVERRIDES, {"user_id": None, "extra_attempts": 1}, False),
    ("post", OVERRIDES, {"user_id": 3}, False),
    ("post", OVERRIDES, {"user_id": 3, "extra_attempts": 0, "until": None}, False),
    ("post", OVERRIDES, {"user_id": 3, "section": None, "extra_attempts": 1}, True),
    ("post", OVERRIDES, {"section": "A", "until": "2030-01-01T00:00:00Z"}, True),
    ("post", OVERRIDES, {"user_ids": [3, 4], "extra_attempts": 2}, True),
]


@pytest.mark.parametrize(("method", "path", "body", "accepted"), SHAPES)
def test_the_document_refuses_what_the_server_refuses_by_shape(
    app: FastAPI, document: dict[str, Any], method: str, path: str, body: Any, accepted: bool
) -> None:
    schema = _body_schema(document, method, path)
    assert jsonschema.Draft202012Validator(schema).is_valid(body) is accepted, body
    model = {"/api/admin/users": UserCreate, OVERRIDES: OverrideCreate}[path]
    try:
        valid = model.model_validate(body)
    except ValidationError:
        valid = None
    if model is UserCreate and valid is not None:  # the address is checked by the service
        try:
            normalize_email(valid.email)  # type: ignore[attr-defined]
        except AccountError:
            valid = None
    assert (valid is not None) is accepted, body
