"""Start-up shared by the API and the worker processes: database, migrations, grading context."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.core.config import Settings
from app.db.engine import make_engine, make_sessionmaker
from app.db.migrate import upgrade
from app.grading.faulttable import fault_table
from app.problems.loader import Problem
from app.submissions.models import Submission
from app.submissions.notices import announce_event_commits
from app.submissions.pressure import PRESSURE
from app.worker.ceilings import CappedSandbox
from app.worker.grader import GradingContext
from sandbox.protocol import Sandbox


def open_database(settings: Settings) -> tuple[Engine, sessionmaker[Session]]:
    """An engine on a schema migrated to the newest revision."""
    engine = make_engine(settings)
    upgrade(engine)
    sessions = make_sessionmaker(engine)
    publish = None
    if settings.queue == "celery":  # streams and waiters may be in another process
        from app.submissions.broadcast import Broadcaster

        publish = Broadcaster(settings.redis_url)
    announce_event_commits(sessions, publish)
    return engine, sessions


def grading_context(
    settings: Settings,
    sessions: sessionmaker[Session],
    problems: dict[str, Problem],
    after_grading: tuple[Callable[[Session, Submission], None], ...] = (),
) -> GradingContext:
    def make_sandbox(settings: Settings) -> Sandbox:
        from sandbox.backends import residency
        from sandbox.factory import make_sandbox

        # The keepers' rounds step aside for submissions being accepted, as graders do.
        residency.pause_rounds_with(PRESSURE.yield_to_acceptance)
        return CappedSandbox(make_sandbox(settings), settings)

    # Built now rather than on the first submission, which would otherwise wait for it.
    for problem in problems.values():
        if problem.diagnostics is not None:
            fault_table(problem)
    return GradingContext(
        settings=settings,
        sessions=sessions,
        problems=problems,
        make_sandbox=make_sandbox,
        after_grading=after_grading,
    )
