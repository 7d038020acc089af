"""Serves the pages ``/``, ``/problems/{id}``, ``/instructor``, ``/admin`` and the accounts
pages (``/login``, ``/account``, ``/reset/{secret}``, ``/setup/{secret}``) (``app.main``
mounts their built assets under ``/static``).

Each page is a small HTML shell; the bundled script in ``static/dist`` fetches the JSON API and
renders the page. Nothing is served from ``problems/``: statements reach the browser only through
the problems API, which exposes public material only.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from app.core.deps import SettingsDep
from app.problems.deps import ProblemsDep

STATIC_DIR = Path(__file__).resolve().parent / "static"
DIST_DIR = STATIC_DIR / "dist"
# Written last by frontend/build.mjs, so its presence means a complete build.
BUILD_MARKER = DIST_DIR / "BUILT"

# Scripts only from this origin; KaTeX and CodeMirror set inline styles, hence 'unsafe-inline'
# for styles alone. The pages talk to nothing but this server.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-cache",
}

router = APIRouter(include_in_schema=False)


def _asset_version() -> str | None:
    try:
        return str(int(BUILD_MARKER.stat().st_mtime))
    except FileNotFoundError:
        return None


def _missing_assets() -> str:
    return (
        '<div class="build-missing" role="alert"><h1>The web page is not built</h1>'
        "<p>The browser assets in <code>app/web/static/dist</code> are missing. Build them with "
        "<code>make frontend</code> (needs Node.js and npm), then reload this page.</p>"
        '<p>The JSON API works without them: <a href="/api/problems">/api/problems</a>, '
        'documented at <a href="/docs">/docs</a>.</p></div>'
    )


def page(
    title: str, script: str, data: dict[str, str] | None = None, status_code: int = 200
) -> HTMLResponse:
    version = _asset_version()
    attrs = "".join(f' data-{escape(k)}="{escape(v)}"' for k, v in (data or {}).items())
    if version is None:
        head = ""
        body = _missing_assets()
        status_code = 503
    else:
        head = (
            f'<link rel="stylesheet" href="/static/dist/app.css?v={version}">\n'
            f'<script type="module" src="/static/dist/{script}.js?v={version}"></script>\n'
            f'<script type="module" src="/static/dist/nav.js?v={version}"></script>'
        )
        body = '<p class="note">Loading…</p>'
    here = ' aria-current="page"'
    nav = "".join(
        f'<a href="{href}"{here if current else ""}>{label}</a>'
        for href, label, current in (
            ("/", "Problems", script == "index" and status_code == 200),
            ("/courses", "Courses", script.startswith("course")),
            ("/instructor", "Instructor", script == "instructor"),
        )
    )
    # Filled by the nav script with "Sign in" or the account's name and "Sign out"; the link
    # works before (and without) it.
    account = (
        f'<span class="nav-account" id="nav-account">'
        f'<a href="/login"{here if script == "login" else ""}>Sign in</a></span>'
    )
    html = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<title>{escape(title)} · TensorJudge</title>
{head}
</head>
<body data-page="{escape(script)}"{attrs}>
<a class="skip-link" href="#main">Skip to content</a>
<header class="site-header">
<a class="brand" href="/">TensorJudge</a>
<nav aria-label="Site">{nav}{account}</nav>
</header>
<main id="main" tabindex="-1">{body}</main>
<noscript><p>These pages need JavaScript; the JSON API is at <a href="/docs">/docs</a>.</p>
</noscript>
</body>
</html>
"""
    return HTMLResponse(html, status_code=status_code, headers=HEADERS)


@router.get("/", response_class=HTMLResponse)
def problem_list_page() -> HTMLResponse:
    return page("Problems", "index")


@router.get("/problems/{problem_id}", response_class=HTMLResponse)
def problem_page(problem_id: str, problems: ProblemsDep) -> HTMLResponse:
    problem = problems.get(problem_id)
    if problem is None:
        # The list page with a 404 status and a notice: a mistyped link still lands somewhere.
        return page("Not found", "index", {"missing-problem": problem_id}, status_code=404)
    return page(problem.spec.title, "problem", {"problem-id": problem.spec.id})


@router.get("/instructor", response_class=HTMLResponse)
def instructor_page() -> HTMLResponse:
    return page("Instructor", "instructor")


@router.get("/admin", response_class=HTMLResponse)
def admin_page() -> HTMLResponse:
    # A shell like the others: the admin API it reads answers administrators only.
    return page("Administration", "admin")


@router.get("/login", response_class=HTMLResponse)
def login_page(settings: SettingsDep) -> HTMLResponse:
    data = {"oidc-label": settings.oidc_label} if settings.oidc_enabled else {}
    if settings.signup_domains:
        data["signup"] = "1"
    return page("Sign in", "login", data)


@router.get("/account", response_class=HTMLResponse)
def account_page() -> HTMLResponse:
    return page("Your account", "account")


@router.get("/setup/{secret}", response_class=HTMLResponse)
def setup_page(secret: str) -> HTMLResponse:
    """The first administrator, from the link the server printed at its first start."""
    return page("Create the administrator", "setup")


@router.get("/reset/{secret}", response_class=HTMLResponse)
def reset_page(secret: str) -> HTMLResponse:
    # The secret stays in the path; the page reads it from there and the Referrer-Policy keeps
    # it from leaving this site.
    return page("Set your password", "reset")
