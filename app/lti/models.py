"""The LTI tables: registered platforms and their deployments, the tool's signing keys, the
logins under way, what an LMS course, link and person map to, line items and the score outbox."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.expression import false

from app.db.base import Base, UTCDateTime, utcnow

AutoId = BigInteger().with_variant(Integer(), "sqlite")


class LtiPlatform(Base):
    """An LMS registered by an admin: who it is (issuer, our client id there) and where its
    login, token and key-set endpoints are."""

    __tablename__ = "lti_platforms"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    issuer: Mapped[str] = mapped_column(String(500))
    client_id: Mapped[str] = mapped_column(String(255))
    auth_login_url: Mapped[str] = mapped_column(String(1000))
    auth_token_url: Mapped[str] = mapped_column(String(1000))
    keyset_url: Mapped[str] = mapped_column(String(1000))
    # Some platforms (Moodle) want the token request's audience to be something else.
    token_audience: Mapped[str | None] = mapped_column(String(1000), default=None)
    # An administrator's word that this platform's email claims are verified: only then does a
    # launch's email match an existing account (otherwise an LMS could sign anyone in).
    trust_email: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (UniqueConstraint("issuer", "client_id", name="uq_lti_platforms_client"),)


class LtiDeployment(Base):
    """A deployment id the platform may launch with; any other is refused."""

    __tablename__ = "lti_deployments"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))

    __table_args__ = (
        UniqueConstraint("platform_id", "deployment_id", name="uq_lti_deployments_platform_id"),
    )


class LtiKey(Base):
    """One of the tool's RSA signing keys. The newest unretired key signs; a retired one stays
    published at the JWKS URL until nothing it signed can still be checked."""

    __tablename__ = "lti_keys"

    kid: Mapped[str] = mapped_column(String(64), primary_key=True)
    private_pem: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LtiLogin(Base):
    """An OIDC login initiation under way. ``id`` is the SHA-256 of the ``state``; the browser
    cookie's SHA-256 binds it to the browser that started it; ``used_at`` makes it one use."""

    __tablename__ = "lti_logins"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    browser_sha256: Mapped[str] = mapped_column(String(64))
    nonce: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LtiContext(Base):
    """An LMS course and the TensorJudge course it maps to (made on its first launch), with
    the service endpoints the last launch named."""

    __tablename__ = "lti_contexts"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    context_id: Mapped[str] = mapped_column(String(255))
    course_id: Mapped[int] = mapped_column(ForeignKey("courses.id", ondelete="CASCADE"))
    deployment_id: Mapped[str] = mapped_column(String(255))
    lineitems_url: Mapped[str | None] = mapped_column(String(1000), default=None)
    memberships_url: Mapped[str | None] = mapped_column(String(1000), default=None)
    ags_scopes: Mapped[str] = mapped_column(Text, default="")
    roster_synced_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (
        UniqueConstraint("platform_id", "context_id", name="uq_lti_contexts_platform_context"),
    )


class LtiUser(Base):
    """A platform's person (its ``sub``) and their TensorJudge account."""

    __tablename__ = "lti_users"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    # When the person linked it to an account of theirs (signed in) or a trusted platform's
    # email matched one; NULL: the account the LMS's first launch made.
    linked_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (
        UniqueConstraint("platform_id", "subject", name="uq_lti_users_platform_subject"),
    )


class LtiPendingLink(Base):
    """An LMS course's first launch by its instructor, waiting for them to link it to a course
    they teach here (or make one): the launch's verified claims, replayed once they pick.
    ``id`` is the SHA-256 of the secret in the linking form."""

    __tablename__ = "lti_pending_links"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(255))
    claims: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LtiIdentityLink(Base):
    """A launch's offer to link the person's LMS identity to an existing account. ``id`` is
    the SHA-256 of a secret held only in the launching browser's cookie, so nobody can hand
    their LMS identity to someone else's signed-in browser."""

    __tablename__ = "lti_identity_links"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    lti_user_id: Mapped[int] = mapped_column(ForeignKey("lti_users.id", ondelete="CASCADE"))
    destination: Mapped[str] = mapped_column(String(1000))
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LtiLineItem(Base):
    """The one gradebook column of an assignment in an LMS course. The unique constraint is
    what keeps two launches or workers from making two; ``url`` is NULL until it exists."""

    __tablename__ = "lti_line_items"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"))
    assignment_id: Mapped[int] = mapped_column(ForeignKey("assignments.id", ondelete="CASCADE"))
    url: Mapped[str | None] = mapped_column(String(1000), default=None)
    # One sender at a time works on a line item (makes it, sends its scores).
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint("context_id", "assignment_id", name="uq_lti_line_items_assignment"),
        Index("ix_lti_line_items_assignment", "assignment_id"),
    )


class LtiDeepLink(Base):
    """A deep-linking request waiting for the instructor's pick: where to send the answer and
    the ``data`` to echo. ``id`` is the SHA-256 of the secret in the picking form."""

    __tablename__ = "lti_deep_links"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    return_url: Mapped[str] = mapped_column(String(1000))
    data: Mapped[str | None] = mapped_column(Text, default=None)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)


class LtiScoreSend(Base):
    """A score to send (the outbox): written in the grading's own transaction, so no graded
    attempt is lost; the sender reads the student's current assignment score when it sends.
    status: pending | held (scores hidden until published) | sent | failed."""

    __tablename__ = "lti_score_outbox"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    line_item_id: Mapped[int] = mapped_column(ForeignKey("lti_line_items.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    submission_id: Mapped[str | None] = mapped_column(String(64), default=None)
    status: Mapped[str] = mapped_column(String(16), default="pending")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    claimed_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    last_error: Mapped[str | None] = mapped_column(String(1000), default=None)
    score_given: Mapped[float | None] = mapped_column(Float, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    __table_args__ = (Index("ix_lti_score_outbox_status_next", "status", "next_attempt_at"),)


class LtiPendingMember(Base):
    """A member of a linked LMS course, on a platform not trusted for email, whose roster email
    is that of an existing member of the course: the roster sync makes no second account for
    them (the gradebook would list them twice); they are linked to their account when they
    launch and link it, signed in. Pending while their LMS identity is not linked."""

    __tablename__ = "lti_pending_members"

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    platform_id: Mapped[int] = mapped_column(ForeignKey("lti_platforms.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(255))
    context_id: Mapped[int] = mapped_column(ForeignKey("lti_contexts.id", ondelete="CASCADE"))
    # The course's member with that email: shown as "in the LMS" on the roster, nothing more.
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint("platform_id", "subject", name="uq_lti_pending_members_subject"),
    )
