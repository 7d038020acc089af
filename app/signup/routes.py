"""Sign-up API and pages: ``POST /api/signup`` (by join code, or self sign-up on an allowed
domain), ``POST /api/signup/verify`` (the mailed link), and the pages ``/signup`` and
``/verify/{secret}``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import HTMLResponse
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.auth.accounts import AccountError, normalize_email
from app.auth.http import check_same_site, read_json, set_session_cookie
from app.auth.passwords import PasswordError, check_new_password
from app.auth.routes import signed_in
from app.auth.sessions import COOKIE
from app.auth.signin import new_password_hash
from app.core.bodies import json_body_schema
from app.core.config import Settings
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import ApiError, error_responses
from app.core.proxies import client_address
from app.signup import service
from app.signup.schemas import SignupAccepted, SignupIn, SignupVerified, VerifyIn
from app.web.routes import page

router = APIRouter(tags=["accounts"])
pages = APIRouter(include_in_schema=False)

ACCEPTED = (
    "Check your mail: we sent a message to this address. It holds a link to confirm it (or, "
    "if the address already has an account, how to sign in)."
)


def _claim(
    sessions: sessionmaker[Session],
    settings: Settings,
    email: str,
    body: SignupIn,
    address: str,
) -> service.Claim:
    with sessions() as session:
        return service.claim(session, settings, email, body.name.strip(), body.code, address)


def _mail(
    sessions: sessionmaker[Session], base: str, claimed: service.Claim, password_hash: str
) -> None:
    with sessions() as session:
        service.mail(session, base, claimed, password_hash)


@router.post(
    "/api/signup",
    status_code=202,
    response_model=SignupAccepted,
    openapi_extra=json_body_schema(SignupIn),
    responses=error_responses(
        {
            400: "Body is not JSON",
            403: "Cross-site request; self sign-up off, or the email's domain not allowed",
            404: "No open course has this code",
            413: "Body too large",
            415: "Body is not application/json",
            422: "Invalid body, email or password",
            429: "Too many sign-up requests for this email or from this address",
            503: "Too many password hashes at once",
        },
        retry_after=(429, 503),
    ),
)
async def sign_up(request: Request, sessions: SessionsDep, settings: SettingsDep) -> SignupAccepted:
    """Ask for an account: with a course's ``code`` (joining without an account), or on an
    email domain of GRADER_SIGNUP_DOMAINS. Mails a link that makes the account once opened
    (and joins the course); an address that has an account gets a mail saying to sign in
    instead. The answer never says which. Anyone; same-site only; rate-limited per email and
    per client address."""
    check_same_site(request, settings)
    body = await read_json(request, SignupIn)
    try:
        email = normalize_email(body.email)
    except AccountError as exc:
        raise ApiError(422, "invalid_email", str(exc), "email") from None
    try:
        check_new_password(body.password, settings.password_min_length)
    except PasswordError as exc:
        raise ApiError(422, "invalid_password", str(exc), "password") from None
    if body.code is None:
        service.check_domain(settings, email)
    address = client_address(request, settings)
    claimed = await run_in_threadpool(_claim, sessions, settings, email, body, address)
    # Hashed whether or not the address has an account: the answer takes as long either way.
    password_hash = await new_password_hash(request, body.password)
    await run_in_threadpool(_mail, sessions, site_url(request, settings), claimed, password_hash)
    return SignupAccepted(message=ACCEPTED)


def _verify(
    sessions: sessionmaker[Session], settings: Settings, secret: str, old_secret: str | None
) -> tuple[SignupVerified, str]:
    with sessions() as session:
        try:
            done = service.verify(session, secret)
        except IntegrityError:  # the address got an account meanwhile, in another request
            session.rollback()
            raise service.invalid_link() from None
        me, cookie = signed_in(session, settings, done.user, old_secret)
        out = SignupVerified(
            user=me.user, csrf_token=me.csrf_token, course_id=done.course_id, missed=done.missed
        )
        return out, cookie


@router.post(
    "/api/signup/verify",
    response_model=SignupVerified,
    openapi_extra=json_body_schema(VerifyIn),
    responses=error_responses(
        {
            400: "Link unknown, used or expired",
            403: "Cross-site request",
            409: "The address has an account by now: sign in",
            413: "Body too large",
            415: "Body is not application/json",
            422: "Invalid body",
        }
    ),
)
async def verify(
    request: Request, response: Response, sessions: SessionsDep, settings: SettingsDep
) -> SignupVerified:
    """Open a sign-up's mailed link: the link is used up, the account is made (a student of
    the sign-up's course, when its code still takes people) and this browser signed in.
    Anyone holding the link; same-site only."""
    check_same_site(request, settings)
    body = await read_json(request, VerifyIn)
    out, cookie = await run_in_threadpool(
        _verify, sessions, settings, body.secret, request.cookies.get(COOKIE)
    )
    set_session_cookie(response, cookie, settings)
    return out


@pages.get("/signup", response_class=HTMLResponse)
def signup_page(settings: SettingsDep) -> HTMLResponse:
    return page("Sign up", "signup", {"domains": ",".join(settings.signup_domains)})


@pages.get("/verify/{secret}", response_class=HTMLResponse)
def verify_page(secret: Annotated[str, Path(max_length=200)]) -> HTMLResponse:
    # The page asks for a click before it uses the link: a mail scanner that fetches links
    # must not use it up.
    return page("Confirm your address", "verify")
