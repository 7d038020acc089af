"""Adds the instructor routes: test cases, regrade, and the two reports."""

from __future__ import annotations

from fastapi import FastAPI

from app.reports.routes import router as reports_router
from app.testcases.regrade import router as regrade_router
from app.testcases.routes import router as cases_router


def install_instructors(app: FastAPI) -> None:
    app.include_router(cases_router)
    app.include_router(regrade_router)
    app.include_router(reports_router)
