"""Sign-up by a course's join code or on an allowed email domain, held until the address is
verified (see app.signup.models).

Never says whether an address has an account: every accepted request gets the same answer
("check your mail") after the same work (the password is hashed either way; the mail goes
through the outbox). The mailbox learns which case it is: a link that makes the account, or a
pointer to sign in (and join) with the account it has. Rate limits per email and per client
address count every accepted request, so neither case can be told apart by them either.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from app.auth.accounts import create_user, find_by_email
from app.auth.models import User
from app.auth.throttle import lock_keys, wait_seconds
from app.auth.tokens import digest
from app.core.config import Settings
from app.core.errors import ApiError
from app.courses.models import Course, Membership
from app.courses.service import join_code_not_found, normalize_code
from app.db.base import utcnow
from app.mail.messages import SIGNUP, has_account_message, verify_message
from app.mail.outbox import enqueue
from app.signup.models import Signup

VERIFY_LINK_LIFETIME = timedelta(days=2)


@dataclass(frozen=True)
class Claim:
    """A request within the limits, recorded; what the second step needs."""

    signup_id: int
    course_title: str | None


def _open_course(session: Session, code: str) -> Course | None:
    return session.scalars(
        select(Course).where(Course.join_code == code, Course.archived_at.is_(None))
    ).first()


def check_domain(settings: Settings, email: str) -> None:
    """Self sign-up (no join code) only on ``GRADER_SIGNUP_DOMAINS``: 403 otherwise."""
    if not settings.signup_domains:
        raise ApiError(
            403,
            "signup_closed",
            "this server has no self sign-up; join with your course's code or link, or ask "
            "your instructor for an invitation",
            "email",
        )
    domain = email.rpartition("@")[2]
    if domain not in settings.signup_domains:
        allowed = ", ".join(f"@{d}" for d in settings.signup_domains)
        raise ApiError(
            403,
            "domain_not_allowed",
            f"sign-up here takes addresses ending in {allowed}; use one of those, or your "
            "course's join link",
            "email",
        )


def too_many(seconds: int) -> ApiError:
    return ApiError(
        429,
        "too_many_signups",
        f"too many sign-up requests; try again in {seconds} s",
        None,
        headers={"Retry-After": str(seconds)},
    )


def claim(
    session: Session,
    settings: Settings,
    email: str,
    name: str,
    code: str | None,
    address: str,
) -> Claim:
    """Records one request within the limits and commits; 404 for a code no open course takes,
    429 (nothing recorded) when the email or the address has reached its limit."""
    title = None
    if code is not None:
        course = _open_course(session, normalize_code(code))
        if course is None:
            raise join_code_not_found()
        title = course.title
        code = course.join_code
    now = utcnow()
    window = timedelta(seconds=settings.signup_window_seconds)
    lock_keys(session, ("signup-email", email), ("signup-address", address))
    # On SQLite the insert takes the write lock first: the counts below see every request
    # committed before, and none commits until this one ends (as app.auth.throttle).
    row = Signup(
        email=email,
        address=address[:100],
        name=name,
        join_code=code,
        created_at=now,
        expires_at=now + VERIFY_LINK_LIFETIME,
    )
    session.add(row)
    session.flush()
    waits = []
    for column, value, limit in (
        (Signup.email, email, settings.signup_max_per_email),
        (Signup.address, row.address, settings.signup_max_per_address),
    ):
        times = list(
            session.scalars(
                select(Signup.created_at)
                .where(column == value, Signup.created_at > now - window, Signup.id != row.id)
                .order_by(Signup.created_at)
            )
        )
        wait = wait_seconds(times, limit, window, now)
        if wait is not None:
            waits.append(wait)
    if waits:
        session.rollback()
        raise too_many(int(max(waits)) + 1)
    signup_id = row.id
    session.commit()
    return Claim(signup_id, title)


def mail(session: Session, base: str, claimed: Claim, password_hash: str) -> None:
    """The mail of a recorded request: the link that makes the account, or, for an address
    that has one, the pointer to sign in (and join). Commits."""
    row = session.get(Signup, claimed.signup_id)
    assert row is not None
    user = find_by_email(session, row.email)
    if user is not None:
        target = f"{base}/join/{row.join_code}" if row.join_code else f"{base}/login"
        message = has_account_message(user.name, target, claimed.course_title)
        enqueue(session, SIGNUP, row.email, message, user_id=user.id)
    else:
        secret = secrets.token_urlsafe(32)
        row.password_hash = password_hash
        row.token_sha256 = digest(secret)
        message = verify_message(row.name, f"{base}/verify/{secret}", claimed.course_title)
        enqueue(session, SIGNUP, row.email, message)
    session.commit()


def invalid_link() -> ApiError:
    return ApiError(
        400,
        "invalid_signup_link",
        "this link is unknown, already used or expired; sign up again",
        "secret",
    )


def live_link(session: Session, secret: str) -> Signup:
    """The request this link belongs to while it may be used; 400 otherwise."""
    row = session.scalars(select(Signup).where(Signup.token_sha256 == digest(secret))).first()
    if row is None or row.used_at is not None or row.expires_at <= utcnow():
        raise invalid_link()
    return row


@dataclass(frozen=True)
class Verified:
    user: User
    course_id: int | None
    # The course of the join code, when the code no longer takes anyone (rotated or closed).
    missed: bool


def verify(session: Session, secret: str) -> Verified:
    """Uses the link up and makes the account, a student of the code's course when that still
    takes people; the caller signs it in and commits. 400 for a link unknown, used or expired;
    409 when the address has an account by now (the link is used up; no second account)."""
    row = live_link(session, secret)
    used = session.execute(
        update(Signup)
        .where(Signup.id == row.id, Signup.used_at.is_(None))
        .values(used_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not used.rowcount:  # type: ignore[attr-defined]
        raise invalid_link()  # opened twice at once: the other request has it
    if find_by_email(session, row.email) is not None:
        session.commit()
        raise ApiError(
            409,
            "has_account",
            "this address has an account by now: sign in with it (or ask for a reset link)",
            "secret",
        )
    assert row.password_hash is not None
    user = create_user(session, row.email, row.name, password_hash=row.password_hash)
    course = _open_course(session, row.join_code) if row.join_code else None
    if course is not None:
        session.add(Membership(course_id=course.id, user_id=user.id, role="student"))
    session.flush()
    return Verified(user, course.id if course else None, missed=bool(row.join_code) and not course)
