"""Everyone the course tests need, made directly in the database: two courses and a person of
every kind, each with a personal access token.

``course``: ``instructor`` (also a deployment instructor, who may create courses), ``ta``,
``student`` (section "A") and ``student_b`` (section "B"). ``other_course``: ``other_student``
and its own ``other_instructor``. ``outsider`` is in no course; ``admin`` runs the deployment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from app.auth.accounts import create_user
from app.auth.tokens import AccountRole, issue_token
from app.courses.models import Course, Membership

# (key, deployment role, course key or None, course role, section)
PEOPLE: tuple[tuple[str, AccountRole, str | None, str, str | None], ...] = (
    ("admin", "admin", None, "", None),
    ("instructor", "instructor", "course", "instructor", None),
    ("ta", "member", "course", "ta", None),
    ("student", "member", "course", "student", "A"),
    ("student_b", "member", "course", "student", "B"),
    ("other_instructor", "instructor", "other_course", "instructor", None),
    ("other_student", "member", "other_course", "student", None),
    ("outsider", "member", None, "", None),
)


@dataclass
class People:
    courses: dict[str, int] = field(default_factory=dict)
    users: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)

    def headers(self, who: str) -> dict[str, str]:
        """The request headers of ``who``; "anonymous" sends none."""
        if who == "anonymous":
            return {}
        return {"Authorization": f"Bearer {self.tokens[who]}"}


def add_student(
    sessions: sessionmaker[Session],
    people: People,
    key: str,
    section: str | None = None,
    course_key: str = "course",
) -> int:
    """One more student of ``course_key`` (by default in no section), with a token, as
    ``people.users[key]``: what a suite adds when its rules depend on sections."""
    with sessions() as session:
        user = create_user(session, f"{key}@example.edu", key.replace("_", " ").title(), "member")
        people.users[key] = user.id
        _, people.tokens[key] = issue_token(session, user.id, "tests")
        session.add(
            Membership(
                course_id=people.courses[course_key], user_id=user.id, role="student",
                section=section,
            )
        )  # fmt: skip
        session.commit()
        return user.id


def seed_people(sessions: sessionmaker[Session]) -> People:
    people = People()
    with sessions() as session:
        for key in ("course", "other_course"):
            course = Course(title=f"Test {key}", join_code=f"JOIN-{key.upper()}")
            session.add(course)
            session.flush()
            people.courses[key] = course.id
        for key, role, course_key, course_role, section in PEOPLE:
            user = create_user(session, f"{key}@example.edu", key.replace("_", " ").title(), role)
            people.users[key] = user.id
            _, people.tokens[key] = issue_token(session, user.id, "tests")
            if course_key is not None:
                session.add(
                    Membership(
                        course_id=people.courses[course_key],
                        user_id=user.id,
                        role=course_role,
                        section=section,
                    )
                )
        session.commit()
    return people
