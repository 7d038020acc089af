"""Reading the catalog's test cases: ``GET /api/problems/{problem_id}/test-cases[/{case_id}]``.

The catalog's cases grade the problem in every course, so its hidden ones are shown to the
deployment's instructors only while no feedback policy restricts them on the problem: someone
who is also a student of a course whose assignment on it cuts their reports reads the catalog as
a student does (the strictest policy follows a student into every role). Adding and removing
cases stays in ``app.testcases.routes``; this module only decides who reads hidden ones.
"""

from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.assignments.feedback import report_cut
from app.auth.deps import OptionalPrincipal
from app.auth.tokens import Principal
from app.core.deps import SessionsDep
from app.core.errors import error_responses
from app.db.base import utcnow
from app.problems.deps import ProblemDep
from app.testcases.routes import (
    CaseId,
    ServiceDep,
    builtin_out,
    case_detail,
    case_not_found,
    stored_out,
)
from app.testcases.schemas import CaseDetail, CaseList

router = APIRouter(prefix="/api/problems/{problem_id}/test-cases", tags=["instructors"])


def reads_hidden(
    sessions: sessionmaker[Session], principal: Principal | None, problem_id: str
) -> bool:
    """Whether ``principal`` may read the catalog's hidden cases of ``problem_id``."""
    if principal is None or not principal.is_instructor:
        return False
    with sessions() as session:
        return report_cut(session, problem_id, principal, utcnow(), practice=False) is None


@router.get(
    "",
    response_model=CaseList,
    responses=error_responses({404: "Unknown problem"}),
)
async def list_cases(
    principal: OptionalPrincipal, problem: ProblemDep, service: ServiceDep, sessions: SessionsDep
) -> CaseList:
    """The current test set of the catalog: built-in and the catalog's stored cases (never a
    course's own). Without a token (a student), only the public ones; for an instructor, all of
    them unless a course's policy restricts them on the problem as a student."""
    staff = await run_in_threadpool(reads_hidden, sessions, principal, problem.id)
    version, rows = await run_in_threadpool(service.live, problem)
    builtin = [builtin_out(problem, c) for c in problem.examples + problem.hidden]
    stored = [stored_out(problem, r, staff) for r in rows]
    cases = [c for c in builtin + stored if staff or c.visibility == "public"]
    return CaseList(problem_id=problem.id, test_set_version=version, cases=cases)


@router.get(
    "/{case_id}",
    response_model=CaseDetail,
    responses=error_responses({404: "Unknown problem or case (or hidden, for a student)"}),
)
async def get_case(
    principal: OptionalPrincipal,
    problem: ProblemDep,
    case_id: CaseId,
    service: ServiceDep,
    sessions: SessionsDep,
) -> CaseDetail:
    """A stored case of the catalog with its arrays and the reference's output."""
    row = await run_in_threadpool(service.get, problem, case_id)
    staff = await run_in_threadpool(reads_hidden, sessions, principal, problem.id)
    if row is None or (not staff and row.visibility != "public"):
        raise case_not_found(case_id)
    return case_detail(problem, row, staff)
