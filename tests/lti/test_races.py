"""Two first launches, or two senders, at the same moment (threads on one database, SQLite and
PostgreSQL): one line item row per assignment and LMS course, one context and course per LMS
course, one sender per line item."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import func, select

from app.auth.models import User
from app.courses.models import Course
from app.db.base import utcnow
from app.db.engine import write_turn
from app.lti.launch import LaunchError
from app.lti.models import LtiContext, LtiLineItem, LtiPlatform, LtiUser
from app.lti.outbox import _claim
from app.lti.provisioning import account_of, find_context, line_item_of, link_context
from tests.lti.conftest import Tool
from tests.lti.test_journey import PROBLEM, deep_link
from tests.support.lti_platform import CONTEXT, DEPLOYMENT, LTI


def together(work: Callable[[], object], n: int = 4) -> list[BaseException]:
    start = threading.Barrier(n)
    errors: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            work()
        except BaseException as exc:  # collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


def test_simultaneous_first_links_make_one_course_and_one_line_item(tool: Tool) -> None:
    link_id = deep_link(tool, f"problem:{PROBLEM}")
    assignment_id = int(tool.platform.links[link_id].custom["tj_assignment_id"])
    claims = {
        LTI + "context": {"id": f"{CONTEXT}-other", "title": "Another LMS course"},
        LTI + "deployment_id": DEPLOYMENT,
    }

    def first_launch() -> None:
        with tool.sessions() as session:
            platform = session.scalars(select(LtiPlatform)).one()
            try:
                context = link_context(session, platform, claims, None)
            except LaunchError as exc:  # a later thread: linked already, and refused
                assert exc.code == "already_linked"
                session.rollback()
                context = find_context(session, platform.id, f"{CONTEXT}-other")
                assert context is not None
            session.commit()
            line_item_of(session, context.id, assignment_id)
            session.commit()

    assert together(first_launch) == []
    with tool.sessions() as session:
        contexts = session.scalars(
            select(LtiContext).where(LtiContext.context_id == f"{CONTEXT}-other")
        ).all()
        assert len(contexts) == 1
        titled = (
            select(func.count()).select_from(Course).where(Course.title == "Another LMS course")
        )
        assert session.scalar(titled) == 1
        items = session.scalars(
            select(LtiLineItem).where(LtiLineItem.context_id == contexts[0].id)
        ).all()
        assert len(items) == 1


def test_one_sender_at_a_time_holds_a_line_item(tool: Tool) -> None:
    deep_link(tool, f"problem:{PROBLEM}")
    with tool.sessions() as session:
        line_item_id = session.scalars(select(LtiLineItem.id)).one()
    won: list[bool] = []

    def claim() -> None:
        with tool.sessions() as session:
            won.append(_claim(session, line_item_id, utcnow(), timedelta(minutes=2)))

    assert together(claim) == []
    assert sorted(won) == [False, False, False, True]


def test_simultaneous_roster_syncs_make_one_account_per_member(tool: Tool) -> None:
    """A link's background roster sync and the instructor's "Sync roster" at once (seen in CI: a
    500, "an account with carol@... already exists"): each new LMS member gets one account, one
    link to it, and neither sync fails."""
    made: list[int] = []

    def sync_one_member() -> None:
        # As app.lti.roster does for each member: inside the write turn (SQLite's writers take
        # turns; on PostgreSQL the two transactions race for real).
        with tool.sessions() as session, write_turn(session.get_bind()):
            platform = session.scalars(select(LtiPlatform)).one()
            made.append(
                account_of(
                    session,
                    platform,
                    "sub-carol",
                    "carol@lms.example.edu",
                    "Carol",
                    "student",
                    None,
                )
            )
            session.commit()

    assert together(sync_one_member) == []
    with tool.sessions() as session:
        users = session.scalars(select(User).where(User.email == "carol@lms.example.edu")).all()
        links = session.scalars(select(LtiUser).where(LtiUser.subject == "sub-carol")).all()
        assert len(users) == 1 and len(links) == 1
        assert set(made) == {users[0].id}
