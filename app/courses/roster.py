"""Roster files: ``email,name[,section][,role]`` CSV, checked whole before anything changes.

All or nothing: every row is validated (and checked against the course as it is) first; any
error refuses the whole file with the list of failing rows, and a valid file is applied in one
transaction. Applying the same file twice changes nothing the second time.

Existing accounts keep their name (it is theirs, not the file's). A blocked or removed member
named in a file stays as they are and is counted as ``inactive``: bringing someone back is a
deliberate act on the roster page, not a side effect of re-uploading last month's file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.auth.accounts import AccountError, create_user, normalize_email
from app.auth.models import User
from app.core.errors import ApiError, ErrorBody
from app.courses.deps import CourseAccess
from app.courses.models import COURSE_ROLES, Membership
from app.courses.schemas import MAX_NAME, MAX_SECTION, RosterErrorResponse, RosterResult, RowError
from app.courses.service import lock_roster

REQUIRED = ("email", "name")
OPTIONAL = ("section", "role")
COLUMNS_TEXT = "email,name[,section][,role]"
# Enough to name what is wrong without an answer as long as the file.
MAX_REPORTED_ERRORS = 200
# Keeps each IN (...) well under every database's parameter limit.
LOOKUP_CHUNK = 500


# Mails the invitations of the people an import enrolled, in the import's transaction:
# (session, the instructor's access, the site's address, their user ids) -> how many it invited.
# app.main sets app.notify's on ``app.state.roster_invite`` (this package cannot import that
# one, which imports it).
RosterInvite = Callable[[Session, CourseAccess, str, list[int]], int]


@dataclass(frozen=True)
class Invitations:
    """What an import is to do about invitations: whose access sends them, from which site."""

    send: RosterInvite
    access: CourseAccess
    base: str


@dataclass(frozen=True)
class RosterRow:
    line: int
    email: str
    name: str
    section: str | None  # None: no section (or the file has no section column)
    role: str | None  # None: the file leaves the role (student for newcomers)


@dataclass(frozen=True)
class Roster:
    rows: list[RosterRow]
    has_section: bool


def invalid_file(message: str, field: str = "file") -> ApiError:
    return ApiError(422, "invalid_roster", message, field)


def rows_error(errors: list[RowError]) -> ApiError:
    shown = errors[:MAX_REPORTED_ERRORS]
    more = len(errors) - len(shown)
    lines = sorted({e.line for e in errors})
    message = f"{len(lines)} row(s) of the file are invalid; nothing was imported" + (
        f" ({more} more errors not listed)" if more else ""
    )
    exc = ApiError(422, "invalid_roster_rows", message, "file")
    exc.body = RosterErrorResponse(
        error=ErrorBody(code="invalid_roster_rows", message=message, field="file"), rows=shown
    )
    return exc


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise invalid_file(
            f"the file is not UTF-8 (line {line}); save it as 'CSV UTF-8' and upload it again"
        ) from None


def _header(cells: list[str]) -> dict[str, int]:
    names = [c.strip().lower() for c in cells]
    unknown = [n for n in names if n not in (*REQUIRED, *OPTIONAL)]
    if any("@" in n for n in unknown):
        raise invalid_file(
            f"the first line must be a header naming the columns {COLUMNS_TEXT}; "
            "it looks like a row"
        )
    if unknown:
        raise invalid_file(
            f"unexpected column {unknown[0]!r} in the header; the columns are {COLUMNS_TEXT}"
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise invalid_file(f"the column {repeated[0]!r} appears twice in the header")
    missing = [n for n in REQUIRED if n not in names]
    if missing:
        raise invalid_file(
            f"the header has no {missing[0]!r} column; the first line must name the columns "
            f"{COLUMNS_TEXT}"
        )
    return {n: i for i, n in enumerate(names)}


def parse(text: str, max_rows: int) -> Roster:
    """Every row checked on its own and against the others; ``ApiError`` (422) otherwise."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    columns: dict[str, int] | None = None
    rows: list[RosterRow] = []
    errors: list[RowError] = []
    seen: dict[str, int] = {}
    try:
        for cells in reader:
            line = reader.line_num
            if not any(c.strip() for c in cells):
                continue  # blank lines (a trailing one is common) are not rows
            if columns is None:
                columns = _header(cells)
                continue
            if len(rows) + len({e.line for e in errors}) >= max_rows:
                raise invalid_file(f"the file has more than {max_rows} rows; split it")
            if len(cells) != len(columns):
                errors.append(
                    RowError(
                        line=line,
                        column=None,
                        message=f"{len(cells)} cells where the header has {len(columns)}",
                    )
                )
                continue
            row = _row(line, cells, columns, errors)
            if row is None:
                continue
            if row.email in seen:
                errors.append(
                    RowError(
                        line=line,
                        column="email",
                        message=f"{row.email} is also on line {seen[row.email]}",
                    )
                )
                continue
            seen[row.email] = line
            rows.append(row)
    except csv.Error as exc:
        raise invalid_file(f"line {reader.line_num} is not valid CSV: {exc}") from None
    if columns is None:
        raise invalid_file(
            f"the file is empty; the first line must name the columns {COLUMNS_TEXT}"
        )
    if errors:
        raise rows_error(errors)
    if not rows:
        raise invalid_file("the file has a header but no rows")
    return Roster(rows=rows, has_section="section" in columns)


def _row(
    line: int, cells: list[str], columns: dict[str, int], errors: list[RowError]
) -> RosterRow | None:
    def cell(name: str) -> str:
        return cells[columns[name]].strip() if name in columns else ""

    before = len(errors)
    email = cell("email")
    try:
        email = normalize_email(email)
    except AccountError:
        errors.append(RowError(line=line, column="email", message=f"{email!r} is not an email"))
    name = cell("name")
    if not name:
        errors.append(RowError(line=line, column="name", message="the name is empty"))
    elif len(name) > MAX_NAME:
        errors.append(
            RowError(line=line, column="name", message=f"longer than {MAX_NAME} characters")
        )
    section = cell("section") or None
    if section is not None and len(section) > MAX_SECTION:
        errors.append(
            RowError(line=line, column="section", message=f"longer than {MAX_SECTION} characters")
        )
    role = cell("role").lower() or None
    if role is not None and role not in COURSE_ROLES:
        errors.append(
            RowError(
                line=line,
                column="role",
                message=f"{role!r} is not a role; use one of {', '.join(COURSE_ROLES)}",
            )
        )
    if len(errors) > before:
        return None
    return RosterRow(line=line, email=email, name=name, section=section, role=role)


# -- applying ----------------------------------------------------------------------------------


def _existing(
    session: Session, course_id: int, emails: list[str]
) -> tuple[dict[str, User], dict[int, Membership]]:
    users: dict[str, User] = {}
    for start in range(0, len(emails), LOOKUP_CHUNK):
        chunk = emails[start : start + LOOKUP_CHUNK]
        for user in session.scalars(select(User).where(User.email.in_(chunk))):
            assert user.email is not None
            users[user.email] = user
    members: dict[int, Membership] = {}
    ids = [u.id for u in users.values()]
    for start in range(0, len(ids), LOOKUP_CHUNK):
        chunk_ids = ids[start : start + LOOKUP_CHUNK]
        for member in session.scalars(
            select(Membership).where(
                Membership.course_id == course_id, Membership.user_id.in_(chunk_ids)
            )
        ):
            members[member.user_id] = member
    return users, members


def _check_instructors(
    session: Session,
    course_id: int,
    roster: Roster,
    users: dict[str, User],
    members: dict[int, Membership],
) -> None:
    """A file may not leave a course without an active instructor."""
    before = set(
        session.scalars(
            select(Membership.user_id).where(
                Membership.course_id == course_id,
                Membership.role == "instructor",
                Membership.status == "active",
            )
        ).all()
    )
    after = set(before)
    demoting: list[RosterRow] = []
    for row in roster.rows:
        if row.role is None:
            continue
        user = users.get(row.email)
        member = members.get(user.id) if user is not None else None
        if member is None:
            if row.role == "instructor":
                return  # a new instructor arrives with the file
            continue
        if member.status != "active":
            continue  # inactive members are left as they are
        if row.role == "instructor":
            after.add(member.user_id)
        elif member.user_id in after:
            after.discard(member.user_id)
            demoting.append(row)
    if before and not after:
        raise rows_error(
            [
                RowError(
                    line=r.line,
                    column="role",
                    message="this would leave the course without an active instructor",
                )
                for r in demoting
            ]
        )


def apply(
    session: Session, course_id: int, roster: Roster, invitations: Invitations | None = None
) -> RosterResult:
    """Enrol, update or leave each row's person, in one transaction; with ``invitations``, the
    people enrolled are invited in the same transaction."""
    lock_roster(session, course_id)
    emails = [r.email for r in roster.rows]
    users, members = _existing(session, course_id, emails)
    _check_instructors(session, course_id, roster, users, members)
    counts = {"created": 0, "enrolled": 0, "updated": 0, "unchanged": 0, "inactive": 0}
    newcomers: list[Membership] = []
    try:
        for row in roster.rows:
            user = users.get(row.email)
            if user is None:
                # Memberships wait until the end: each pending one would otherwise be flushed
                # by the next account's lookup, a round trip per row.
                with session.no_autoflush:
                    user = create_user(session, row.email, row.name, created_by_course=course_id)
                counts["created"] += 1
            member = members.get(user.id)
            if member is None:
                newcomers.append(
                    Membership(
                        course_id=course_id,
                        user_id=user.id,
                        role=row.role or "student",
                        section=row.section,
                    )
                )
                counts["enrolled"] += 1
                continue
            if member.status != "active":
                counts["inactive"] += 1
                continue
            role = row.role or member.role
            section = row.section if roster.has_section else member.section
            if (role, section) == (member.role, member.section):
                counts["unchanged"] += 1
                continue
            member.role, member.section = role, section
            counts["updated"] += 1
        session.add_all(newcomers)
        invited = 0
        if invitations is not None and newcomers:
            session.flush()
            invited = invitations.send(
                session, invitations.access, invitations.base, [m.user_id for m in newcomers]
            )
        session.commit()
    except (AccountError, IntegrityError):
        # Someone else enrolled or registered one of these people meanwhile: nothing was kept.
        session.rollback()
        raise ApiError(
            409, "roster_conflict", "the roster changed while importing; upload the file again"
        ) from None
    return RosterResult(**counts, invited=invited)
