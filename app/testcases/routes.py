"""Test-case API of the catalog: ``/api/problems/{problem_id}/test-cases``.

The catalog's stored cases grade every submission of the problem, in every course: only
administrators add or remove them. A course's own cases have routes of their own
(``course_routes``), which share this module's reading, validation and output; who reads
the catalog's hidden cases is decided in ``app.assignments.catalog_cases``.

POST takes either JSON (``CaseCreate``) or a multipart upload (``file``: an .npz with one array
per parameter, optionally ``expected``; ``name``, ``visibility``, ``weight`` as form fields).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from app.auth.deps import Admin
from app.core.bodies import BodyCap, declared_length, read_capped
from app.core.deps import SessionsDep, SettingsDep
from app.core.errors import ApiError, error_responses, first_error
from app.problems.cases import (
    Inputs,
    InvalidCase,
    Result,
    TestCase,
    bind_dims,
    output_shapes,
    parts_of,
)
from app.problems.deps import ProblemDep
from app.problems.loader import Problem
from app.problems.schemas import result_to_json, to_json_value
from app.testcases.codec import expected_from_bytes, from_npz, read_upload
from app.testcases.models import StoredCase
from app.testcases.repository import BUILTIN_TEST_SET_VERSION
from app.testcases.schemas import (
    CaseCreate,
    CaseCreated,
    CaseDeleted,
    CaseDetail,
    CaseFields,
    CaseOut,
)
from app.testcases.service import CaseConflict, CaseMeta, CaseService
from app.testcases.validation import expected_from_json, inputs_from_json, inputs_from_npz
from app.testcases.warnings import CaseWarning, case_warnings

router = APIRouter(prefix="/api/problems/{problem_id}/test-cases", tags=["instructors"])


def get_case_service(settings: SettingsDep, sessions: SessionsDep) -> CaseService:
    return CaseService(settings, sessions)


ServiceDep = Annotated[CaseService, Depends(get_case_service)]
CaseId = Annotated[int, Path(ge=1, le=2**62)]


def invalid(exc: InvalidCase) -> ApiError:
    return ApiError(422, "invalid_case", exc.message, exc.field)


# -- output ------------------------------------------------------------------------------------


def _describe(problem: Problem, inputs: Inputs) -> dict[str, Any]:
    """The fields of ``CaseOut`` that describe a case's inputs."""
    return {
        "shapes": {k: list(v.shape) for k, v in inputs.items() if isinstance(v, np.ndarray)},
        "scalars": {
            k: v.item() if isinstance(v, np.generic) else v
            for k, v in inputs.items()
            if isinstance(v, int | float | np.integer) and not isinstance(v, bool)
        },
        "nulls": [p.name for p in problem.spec.params if inputs.get(p.name) is None],
    }


def _outputs(problem: Problem, shapes: list[tuple[int, ...]], raises: str | None) -> dict[str, Any]:
    """The fields of ``CaseOut`` that describe a case's expected result."""
    if raises is not None:
        return {"output_shape": [], "output_shapes": {}, "raises": raises}
    return {
        "output_shape": list(shapes[0]),
        "output_shapes": {
            o.name: list(shape) for o, shape in zip(problem.spec.outputs, shapes, strict=True)
        },
    }


def stored_out(problem: Problem, row: StoredCase, instructor: bool) -> CaseOut:
    """``instructor``: the caller may see who added the case."""
    inputs = from_npz(row.inputs_npz)
    expected, raises = expected_from_bytes(row.expected_npy)
    shapes = [] if expected is None else [p.shape for p in parts_of(expected)]
    return CaseOut(
        id=row.id,
        name=row.name,
        source="stored",
        visibility="public" if row.visibility == "public" else "hidden",
        weight=row.weight,
        **_describe(problem, inputs),
        **_outputs(problem, shapes, raises),
        warnings=[CaseWarning.model_validate(w) for w in json.loads(row.warnings)],
        added_in_version=row.added_in_version,
        course_id=row.course_id,
        created_by=row.created_by if instructor else None,
        created_at=row.created_at,
    )


_builtin_cache: dict[tuple[int, str], tuple[Problem, tuple[CaseWarning, ...]]] = {}


def _builtin_warnings(problem: Problem, case: TestCase) -> tuple[CaseWarning, ...]:
    """Built-in cases never change while the process runs: warn about them once."""
    key = (id(problem), case.name)
    cached = _builtin_cache.get(key)
    if cached is None or cached[0] is not problem:
        dims = bind_dims(problem.spec, case.inputs)
        found = tuple(case_warnings(problem, case.inputs, dims, case.expected, case.raises))
        cached = _builtin_cache[key] = (problem, found)
    return cached[1]


def builtin_out(problem: Problem, case: TestCase) -> CaseOut:
    dims = bind_dims(problem.spec, case.inputs)
    return CaseOut(
        id=None,
        name=case.name,
        source="builtin",
        visibility=case.visibility,
        weight=case.weight,
        **_describe(problem, case.inputs),
        **_outputs(problem, output_shapes(problem.spec, dims), case.raises),
        warnings=list(_builtin_warnings(problem, case)),
        added_in_version=BUILTIN_TEST_SET_VERSION,
    )


# -- input -------------------------------------------------------------------------------------


def body_cap(max_bytes: int) -> BodyCap:
    return BodyCap(max_bytes, "case_too_large")


def _validation_error(exc: ValidationError) -> ApiError:
    field, message = first_error(exc)
    return ApiError(422, "invalid_case", message, field)


async def _parse_json(
    request: Request, problem: Problem, max_bytes: int, max_elements: int
) -> tuple[CaseMeta, Inputs, Result | None]:
    raw = await read_capped(request, body_cap(max_bytes))
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise ApiError(400, "invalid_json", "the body is not JSON") from None
    try:
        body = CaseCreate.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(exc) from None
    inputs = inputs_from_json(problem, body.inputs, max_elements)
    expected = None
    if body.expected is not None:
        expected = expected_from_json(problem, body.expected, max_elements)
    return CaseMeta(body.name, body.visibility, body.weight, body.raises), inputs, expected


async def _parse_upload(
    request: Request, problem: Problem, max_bytes: int, max_elements: int
) -> tuple[CaseMeta, Inputs, Result | None]:
    declared = declared_length(request.headers)
    if declared is None:
        # The multipart parser spools files to disk as they stream in: only a declared length
        # lets the cap apply before anything is read.
        raise ApiError(411, "length_required", "send a Content-Length with uploads", "body")
    if declared > max_bytes:
        raise body_cap(max_bytes).error()
    try:
        form = await request.form(max_files=1, max_fields=8, max_part_size=64 * 1024)
    except ApiError:
        raise
    except Exception as exc:  # malformed multipart: the client's fault, never a 500
        raise ApiError(400, "invalid_upload", f"unreadable multipart body: {exc}") from None
    fields: dict[str, Any] = {}
    for key in _FORM_FIELDS:
        value = form.get(key)
        if isinstance(value, str) and value != "":
            fields[key] = value
    extra = sorted(set(form.keys()) - {*_FORM_FIELDS, "file"})
    if extra:
        raise ApiError(422, "invalid_case", f"unexpected form fields {extra}", extra[0])
    try:
        meta = CaseFields.model_validate(fields)
    except ValidationError as exc:
        raise _validation_error(exc) from None
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise ApiError(422, "invalid_case", "attach the .npz as the form field 'file'", "file")
    data = await upload.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ApiError(413, "case_too_large", f"the file is over {max_bytes} bytes", "file")
    arrays = await run_in_threadpool(read_upload, data, max_elements, max_bytes)
    inputs, expected = inputs_from_npz(problem, {k: v for k, v in arrays.items()})
    return CaseMeta(meta.name, meta.visibility, meta.weight, meta.raises), inputs, expected


_FORM_FIELDS = ("name", "visibility", "weight", "raises")
_UPLOAD_FIELDS = CaseFields.model_json_schema()
REQUEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": CaseCreate.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["name", "file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        **_UPLOAD_FIELDS["properties"],
                    },
                    # Any other field is refused (422).
                    "additionalProperties": False,
                }
            },
        },
    }
}


def add_errors(taken_by: str) -> dict[int | str, dict[str, Any]]:
    """The errors of adding a case; ``taken_by`` says whose names a new one must not take."""
    return error_responses(
        {
            400: "Body is not JSON / not multipart",
            404: "Unknown problem",
            409: f"Name taken ({taken_by})",
            411: "Upload without Content-Length",
            413: "Body over GRADER_CASE_MAX_UPLOAD_BYTES",
            415: "Neither JSON nor multipart",
            422: "Invalid case; `field` names the input",
        }
    )


# -- routes ------------------------------------------------------------------------------------


@router.post(
    "",
    status_code=201,
    response_model=CaseCreated,
    openapi_extra=REQUEST_BODY,
    responses=add_errors("the catalog's, a course's, built-in or probe"),
)
async def add_case(
    admin: Admin,
    problem: ProblemDep,
    request: Request,
    response: Response,
    service: ServiceDep,
) -> CaseCreated:
    """Validate a case against the signature and the reference, then store it in the catalog
    (bumps the problem's test-set version). Administrators only: every course is graded on it."""
    created = await create_case(request, problem, service, admin.name, None)
    response.headers["Location"] = f"/api/problems/{problem.id}/test-cases/{created.id}"
    return created


async def create_case(
    request: Request,
    problem: Problem,
    service: CaseService,
    created_by: str,
    course_id: int | None,
) -> CaseCreated:
    """Read, validate and store a case in a scope (the catalog, or ``course_id``'s own)."""
    settings = service.settings
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    limits = (settings.case_max_upload_bytes, settings.case_max_elements)
    try:
        if content_type == "application/json":
            meta, inputs, expected = await _parse_json(request, problem, *limits)
        elif content_type == "multipart/form-data":
            meta, inputs, expected = await _parse_upload(request, problem, *limits)
        else:
            raise ApiError(
                415,
                "unsupported_media_type",
                "send application/json or multipart/form-data (an .npz as 'file')",
                "Content-Type",
            )
        row, version = await run_in_threadpool(
            service.add, problem, meta, inputs, expected, created_by, course_id
        )
    except InvalidCase as exc:
        raise invalid(exc) from None
    except CaseConflict as exc:
        raise ApiError(409, "case_conflict", exc.message, exc.field) from None
    out = stored_out(problem, row, instructor=True)
    return CaseCreated(**out.model_dump(), test_set_version=version)


def case_not_found(case_id: int, field: str = "case_id") -> ApiError:
    return ApiError(404, "case_not_found", f"no test case {case_id}", field)


def case_detail(problem: Problem, row: StoredCase, staff: bool) -> CaseDetail:
    out = stored_out(problem, row, staff)
    inputs = from_npz(row.inputs_npz)
    expected, _ = expected_from_bytes(row.expected_npy)
    return CaseDetail(
        **out.model_dump(),
        inputs={
            p.name: to_json_value(inputs.get(p.name))
            for p in problem.spec.params
            if p.name in inputs or p.optional
        },
        expected=result_to_json(problem, expected),
    )


@router.delete(
    "/{case_id}",
    response_model=CaseDeleted,
    responses=error_responses({404: "Unknown problem or case"}),
)
async def delete_case(
    admin: Admin, problem: ProblemDep, case_id: CaseId, service: ServiceDep
) -> CaseDeleted:
    """Remove a stored case of the catalog (bumps the test-set version); administrators only.
    Built-in cases live in the problem folder and are changed there."""
    return await remove_case(problem, case_id, service, None, "case_id")


async def remove_case(
    problem: Problem, case_id: int, service: CaseService, course_id: int | None, field: str
) -> CaseDeleted:
    """Remove a live case of a scope; 404 (naming ``field``) if the scope has no such case."""
    row = await run_in_threadpool(service.get, problem, case_id, course_id)
    version = None
    if row is not None:
        version = await run_in_threadpool(service.remove, problem, case_id, course_id)
    if row is None or version is None:
        raise case_not_found(case_id, field)
    return CaseDeleted(id=row.id, name=row.name, test_set_version=version)
