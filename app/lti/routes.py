"""The LTI 1.3 endpoints the LMS and the browser reach: the tool's key set, OIDC login
initiation, the launch (resource link or deep linking), the deep-linking pick, and linking an
LMS course to a course here or an LMS account to an existing one.

Refusals are HTML pages (the person is in the LMS's frame or window, not a script), so these
routes are pages, left out of the OpenAPI document like every page router; the key set is the
one JSON resource, documented. Database and key work runs in the thread pool; the platform's
key set is fetched without blocking."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode

from fastapi import APIRouter, BackgroundTasks, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.assignments.models import Assignment
from app.auth.http import set_session_cookie
from app.auth.models import User
from app.auth.sessions import COOKIE, end_session, session_principal, start_session
from app.core.bodies import BodyCap, read_capped
from app.core.config import Settings
from app.core.deps import SessionsDep, SettingsDep, site_url
from app.core.errors import ApiError
from app.courses.models import Course
from app.lti import claims as c
from app.lti import deeplink, linking, logins
from app.lti.keys import ensure_key, public_jwks
from app.lti.launch import Expected, LaunchError, header_kid, platform_keys, verify
from app.lti.models import LtiContext, LtiPlatform, LtiUser
from app.lti.pending_members import pending_of
from app.lti.provisioning import (
    account_of,
    context_key,
    context_of,
    enroll,
    first_problem,
    line_item_from_launch,
    link_context,
    target_of,
)
from app.lti.registry import deployments_of, find_platform, get_platform, tool_config
from app.lti.roster import sync_context
from app.lti.services import PlatformError
from app.lti.views import (
    auto_post,
    error_page,
    identity_page,
    link_page,
    linked_page,
    pick_page,
)
from app.problems.deps import ProblemsDep

log = logging.getLogger(__name__)

router = APIRouter(tags=["lti"])

FORM_CAP = BodyCap(64 * 1024)


async def read_form(request: Request) -> dict[str, str]:
    """The urlencoded form under its cap (an LMS posts small forms: a JWT and a state)."""
    try:
        raw = await read_capped(request, FORM_CAP)
    except ApiError as exc:
        raise LaunchError(413, "too_large", exc.body.error.message) from None
    try:
        return dict(parse_qsl(raw.decode("utf-8"), max_num_fields=50))
    except (UnicodeDecodeError, ValueError):
        raise LaunchError(400, "bad_form", "the form is not readable") from None


@router.get(
    "/lti/jwks",
    summary="The tool's public signing keys (JWKS)",
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
def jwks(sessions: SessionsDep) -> JSONResponse:
    """Anyone: the LMS checks the tool's signatures (client assertions, deep links) with it."""
    with sessions() as session:
        ensure_key(session)  # an LMS may be set up before any platform is registered here
        session.commit()
        keys = public_jwks(session)
    return JSONResponse(keys, headers={"Cache-Control": "max-age=300"})


def _begin_login(
    sessions: sessionmaker[Session], iss: str, client_id: str | None
) -> tuple[LtiPlatform, str, str, str]:
    with sessions() as session:
        platform = find_platform(session, iss, client_id)
        if platform is None:
            raise LaunchError(400, "unknown_platform", "this LMS is not registered here")
        state, nonce, browser = logins.begin(session, platform.id)
        session.commit()
        session.expunge(platform)
        return platform, state, nonce, browser


async def _login(request: Request, params: dict[str, str], settings: Settings) -> Response:
    iss, hint = params.get("iss"), params.get("login_hint")
    if not iss or not hint:
        raise LaunchError(400, "bad_login", "the login initiation lacks iss or login_hint")
    platform, state, nonce, browser = await run_in_threadpool(
        _begin_login, request.app.state.sessions, iss, params.get("client_id")
    )
    query = {
        "scope": "openid",
        "response_type": "id_token",
        "response_mode": "form_post",
        "prompt": "none",
        "client_id": platform.client_id,
        "redirect_uri": tool_config(site_url(request, settings)).launch_url,
        "login_hint": hint,
        "state": state,
        "nonce": nonce,
    }
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    separator = "&" if "?" in platform.auth_login_url else "?"
    response = RedirectResponse(
        f"{platform.auth_login_url}{separator}{urlencode(query)}", status_code=302
    )
    response.set_cookie(
        logins.BROWSER_COOKIE,
        browser,
        max_age=int(logins.LOGIN_LIFETIME.total_seconds()),
        path="/lti/",
        httponly=True,
        # The launch is a cross-site POST from the LMS: only SameSite=None (which needs
        # Secure) comes back with it; without HTTPS the state alone is checked.
        samesite="none" if settings.secure_cookies else "lax",
        secure=settings.secure_cookies,
    )
    return response


@router.get("/lti/login", status_code=302, include_in_schema=False)
async def lti_login_get(
    request: Request,
    settings: SettingsDep,
    iss: Annotated[str | None, Query(max_length=500)] = None,
    login_hint: Annotated[str | None, Query(max_length=2000)] = None,
    target_link_uri: Annotated[str | None, Query(max_length=2000)] = None,
    lti_message_hint: Annotated[str | None, Query(max_length=4000)] = None,
    client_id: Annotated[str | None, Query(max_length=255)] = None,
    lti_deployment_id: Annotated[str | None, Query(max_length=255)] = None,
) -> Response:
    """Anyone (the LMS sends the browser): starts the launch at the LMS's auth endpoint."""
    params = {
        k: v
        for k, v in {
            "iss": iss,
            "login_hint": login_hint,
            "target_link_uri": target_link_uri,
            "lti_message_hint": lti_message_hint,
            "client_id": client_id,
            "lti_deployment_id": lti_deployment_id,
        }.items()
        if v is not None
    }
    try:
        return await _login(request, params, settings)
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)


@router.post(
    "/lti/login",
    status_code=302,
    include_in_schema=False,
)
async def lti_login_post(request: Request, settings: SettingsDep) -> Response:
    """Anyone (the LMS posts the browser here): as the GET."""
    try:
        return await _login(request, await read_form(request), settings)
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)


def _claim_login(
    sessions: sessionmaker[Session], state: str, browser: str | None, require_browser: bool
) -> tuple[LtiPlatform, Expected]:
    with sessions() as session:
        row = logins.claim(session, state, browser, require_browser)
        platform = get_platform(session, row.platform_id)
        expected = Expected(
            issuer=platform.issuer,
            client_id=platform.client_id,
            nonce=row.nonce,
            deployments=frozenset(deployments_of(session, platform.id)),
        )
        session.expunge(platform)
        return platform, expected


@dataclass(frozen=True)
class Landing:
    """Where a launch puts the person: their new session, where to go (or the page to show
    instead), the LMS course to sync the roster of, and the offer to link their account."""

    secret: str | None  # None: the browser's session stays as it is
    destination: str
    page: Response | None
    sync: int | None
    identity: str | None


def _apply(
    sessions: sessionmaker[Session],
    settings: Settings,
    platform_id: int,
    claims: dict[str, Any],
    titles: dict[str, str],
    old_session: str | None,
) -> Landing:
    """Provisions what the launch says and signs the person in."""
    role = c.course_role(claims.get(c.ROLES))
    if role is None:
        raise LaunchError(403, "no_role", "your LMS role in this course is not one this tool knows")
    kind = claims[c.MESSAGE_TYPE]
    if kind == c.DEEP_LINKING_REQUEST and role != "instructor":
        raise LaunchError(403, "not_instructor", "only the course's instructors add links")
    subject = str(claims["sub"])[:255]
    with sessions() as session:
        platform = get_platform(session, platform_id)
        context = context_of(session, platform, claims)
        if context is None and role != "instructor":
            raise LaunchError(
                409,
                "not_linked",
                "this LMS course is not set up on TensorJudge yet: its instructor opens "
                "TensorJudge from it once first",
            )
        user_id = account_of(
            session,
            platform,
            subject,
            claims.get("email"),
            claims.get("name"),
            role,
            None if context is None else context.course_id,
        )
        identity = linking.identity_of(session, platform.id, subject)
        assert identity is not None
        held = None if context is None else pending_of(session, platform.id, subject)
        page: Response | None = None
        sync: int | None = None
        destination = ""
        if context is not None and held is not None:
            return _hold(
                session, context, identity, held.user_id, role, claims, titles, old_session
            )
        if context is None:
            secret = linking.begin_pending(session, platform.id, subject, claims)
            offer = linking.offer_identity(session, identity, "")
            page = link_page(
                secret,
                context_key(claims)[1],
                linking.courses_taught(session, user_id),
                offer is not None,
            )
        else:
            enroll(session, context.course_id, user_id, role)
            page, destination = _land(session, context, user_id, role, claims, titles)
            offer = linking.offer_identity(session, identity, destination)
            sync = context.id if context.memberships_url else None
        if old_session:
            end_session(session, old_session)
        secret_cookie, _ = start_session(session, user_id, timedelta(hours=settings.session_hours))
        session.commit()
        return Landing(secret_cookie, destination, page, sync, offer)


def _hold(
    session: Session,
    context: LtiContext,
    identity: LtiUser,
    member_id: int,
    role: str,
    claims: dict[str, Any],
    titles: dict[str, str],
    old_session: str | None,
) -> Landing:
    """A pending member's launch (``app.lti.pending_members``): the LMS-made account gets no
    membership and no session; the browser goes to link its LMS identity to the account it
    signs in to, at once when it is signed in as the course's member with that email."""
    destination = ""
    if claims[c.MESSAGE_TYPE] != c.DEEP_LINKING_REQUEST:
        _, destination = _land(session, context, identity.user_id, role, claims, titles)
    offer = linking.offer_identity(session, identity, destination)
    found = session_principal(session, old_session) if old_session else None
    if old_session and (found is None or found[0].user_id != member_id):
        end_session(session, old_session)
    session.commit()
    return Landing(None, "/lti/link-account", None, None, offer)


def _land(
    session: Session,
    context: LtiContext,
    user_id: int,
    role: str,
    claims: dict[str, Any],
    titles: dict[str, str],
) -> tuple[Response | None, str]:
    """The deep-linking pick, or where a resource link goes."""
    course = context.course_id
    if claims[c.MESSAGE_TYPE] == c.DEEP_LINKING_REQUEST:
        secret = deeplink.begin(session, context, user_id, claims)
        course_row = session.get(Course, course)
        assignments = [
            (a.id, a.title)
            for a in session.scalars(
                select(Assignment).where(Assignment.course_id == course).order_by(Assignment.id)
            )
        ]
        page = pick_page(
            secret,
            course_row.title if course_row else "",
            assignments,
            sorted(titles.items(), key=lambda kv: kv[1]),
        )
        return page, ""
    target = target_of(session, context, claims)
    if target is None:
        return None, f"/courses/{course}"
    line_item_from_launch(session, context, target, claims)
    base = f"/courses/{course}/assignments/{target.assignment_id}"
    problem = target.problem_id or first_problem(session, target.assignment_id)
    if role in c.STAFF_ROLES:
        return None, f"{base}/gradebook"
    if problem is not None:
        return None, f"{base}/problems/{problem}"
    return None, base


def _landing_response(landing: Landing, settings: Settings) -> Response:
    response = (
        landing.page
        if landing.page is not None
        else RedirectResponse(landing.destination, status_code=303)
    )
    if landing.secret is not None:
        set_session_cookie(response, landing.secret, settings)
    if landing.identity is not None:
        response.set_cookie(
            linking.IDENTITY_COOKIE,
            landing.identity,
            max_age=int(linking.IDENTITY_LIFETIME.total_seconds()),
            path="/lti/",
            httponly=True,
            # Lax: a cross-site form cannot link someone's identity (the POST lacks it).
            samesite="lax",
            secure=settings.secure_cookies,
        )
    return response


def _sync_quietly(sessions: sessionmaker[Session], context_id: int) -> None:
    try:
        sync_context(sessions, context_id)
    except PlatformError as exc:
        log.warning("roster sync on launch failed: %s", exc)


@router.post(
    "/lti/launch",
    status_code=303,
    include_in_schema=False,
)
async def lti_launch(
    request: Request,
    background: BackgroundTasks,
    sessions: SessionsDep,
    settings: SettingsDep,
    problems: ProblemsDep,
) -> Response:
    """Anyone (the LMS posts the browser here with its signed id_token): checks it, maps the
    LMS course, person and link, signs in, and goes to the problem (a student), the gradebook
    (staff) or the deep-linking pick (an instructor adding a link)."""
    try:
        form = await read_form(request)
        state, id_token = form.get("state"), form.get("id_token")
        if not state or not id_token:
            raise LaunchError(400, "bad_launch", "the launch lacks its state or id_token")
        platform, expected = await run_in_threadpool(
            _claim_login,
            sessions,
            state,
            request.cookies.get(logins.BROWSER_COOKIE),
            settings.secure_cookies,
        )
        kid = header_kid(id_token)
        keys = await platform_keys(platform.keyset_url, kid)
        claims = verify(id_token, keys, expected)
        titles = {pid: p.spec.title for pid, p in problems.items()}
        landing = await run_in_threadpool(
            _apply, sessions, settings, platform.id, claims, titles, request.cookies.get(COOKIE)
        )
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)
    response = _landing_response(landing, settings)
    response.delete_cookie(logins.BROWSER_COOKIE, path="/lti/")
    if landing.sync is not None:
        background.add_task(run_in_threadpool, _sync_quietly, sessions, landing.sync)
    return response


def _answer(
    sessions: sessionmaker[Session],
    secret: str,
    cookie: str | None,
    choice: str,
    titles: dict[str, str],
    launch_url: str,
) -> deeplink.Answer:
    with sessions() as session:
        found = session_principal(session, cookie) if cookie else None
        row = deeplink.claim(session, secret, found[0].user_id if found else None)
        out = deeplink.answer(session, row, choice, titles, launch_url)
        session.commit()
        return out


@router.post(
    "/lti/deep-link",
    status_code=200,
    response_class=HTMLResponse,
    include_in_schema=False,
)
async def lti_deep_link(
    request: Request, sessions: SessionsDep, settings: SettingsDep, problems: ProblemsDep
) -> Response:
    """The instructor who launched the pick (their session and the form's one-use secret):
    a page that posts the signed deep-linking response to the LMS."""
    try:
        form = await read_form(request)
        titles = {pid: p.spec.title for pid, p in problems.items()}
        out = await run_in_threadpool(
            _answer,
            sessions,
            form.get("secret", ""),
            request.cookies.get(COOKIE),
            form.get("choice", ""),
            titles,
            tool_config(site_url(request, settings)).launch_url,
        )
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)
    return auto_post(out.return_url, {"JWT": out.jwt}, "Adding the link to your course")


def _link_course(
    sessions: sessionmaker[Session],
    settings: Settings,
    secret: str,
    cookie: str | None,
    choice: str,
    titles: dict[str, str],
) -> Landing:
    with sessions() as session:
        found = session_principal(session, cookie) if cookie else None
        user_id = found[0].user_id if found else None
        row, claims = linking.claim_pending(session, secret, user_id)
        assert user_id is not None
        kind, _, value = choice.partition(":")
        course_id: int | None
        if choice == "new":
            course_id = None
        elif kind == "course" and value.isdigit() and len(value) < 16:
            course_id = int(value)
            linking.check_teaches(session, user_id, course_id)
        else:
            raise LaunchError(400, "invalid_choice", "pick a course you teach, or a new one")
        link_context(session, get_platform(session, row.platform_id), claims, course_id)
        platform_id = row.platform_id
        session.commit()
    return _apply(sessions, settings, platform_id, claims, titles, cookie)


@router.post("/lti/link-course", status_code=303, include_in_schema=False)
async def lti_link_course(
    request: Request,
    background: BackgroundTasks,
    sessions: SessionsDep,
    settings: SettingsDep,
    problems: ProblemsDep,
) -> Response:
    """The instructor whose launch found the LMS course unlinked (their session and the
    form's one-use secret): links it to a course they teach here, or a new one, then goes on
    with that launch."""
    try:
        form = await read_form(request)
        titles = {pid: p.spec.title for pid, p in problems.items()}
        landing = await run_in_threadpool(
            _link_course,
            sessions,
            settings,
            form.get("secret", ""),
            request.cookies.get(COOKIE),
            form.get("choice", ""),
            titles,
        )
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)
    if landing.sync is not None:
        background.add_task(run_in_threadpool, _sync_quietly, sessions, landing.sync)
    return _landing_response(landing, settings)


def _identity_page(
    sessions: sessionmaker[Session], offer: str | None, cookie: str | None
) -> Response:
    with sessions() as session:
        _, identity = linking.identity_offer(session, offer)
        found = session_principal(session, cookie) if cookie else None
        made = session.get(User, identity.user_id)
        lms_name = made.name if made is not None else "your LMS account"
        if found is None or found[0].user_id == identity.user_id:
            return identity_page(lms_name, None)
        me = session.get(User, found[0].user_id)
        assert me is not None
        return identity_page(lms_name, me.email or me.name)


@router.get("/lti/link-account", include_in_schema=False)
async def lti_link_account_page(request: Request, sessions: SessionsDep) -> Response:
    """The browser a launch offered it to (its cookie): sign in to an existing account, then
    confirm linking the LMS account to it."""
    try:
        return await run_in_threadpool(
            _identity_page,
            sessions,
            request.cookies.get(linking.IDENTITY_COOKIE),
            request.cookies.get(COOKIE),
        )
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)


def _link_account(sessions: sessionmaker[Session], offer: str | None, cookie: str | None) -> str:
    with sessions() as session:
        found = session_principal(session, cookie) if cookie else None
        destination = linking.link_identity(session, offer, found[0].user_id if found else None)
        session.commit()
        return destination


@router.post("/lti/link-account", status_code=303, include_in_schema=False)
async def lti_link_account(request: Request, sessions: SessionsDep) -> Response:
    """The browser a launch offered it to, signed in to the account to link: later launches
    sign in as that account."""
    try:
        destination = await run_in_threadpool(
            _link_account,
            sessions,
            request.cookies.get(linking.IDENTITY_COOKIE),
            request.cookies.get(COOKIE),
        )
    except LaunchError as exc:
        return error_page(exc.status, exc.code, exc.message)
    response = RedirectResponse(destination, status_code=303) if destination else linked_page()
    response.delete_cookie(linking.IDENTITY_COOKIE, path="/lti/")
    return response
