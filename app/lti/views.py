"""The LTI pages: a refused launch, the instructor's deep-linking pick, and the form that
carries a signed message back to the LMS. Server-rendered: they run inside the LMS's frame or
window, before any of TensorJudge's own pages."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from fastapi.responses import HTMLResponse

STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:42rem;margin:2rem auto;padding:0 1rem}"
    "fieldset{border:1px solid #ccc;margin:1rem 0}label{display:block;margin:.25rem 0}"
    "button{font:inherit;padding:.4rem 1rem}"
)


def _page(title: str, body: str, status: int = 200) -> HTMLResponse:
    html = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · TensorJudge</title><style>{STYLE}</style></head>"
        f'<body><main id="main">{body}</main></body></html>'
    )
    return HTMLResponse(
        html,
        status_code=status,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


def error_page(status: int, code: str, message: str) -> HTMLResponse:
    return _page(
        "Launch refused",
        f'<h1>This launch did not work</h1><p role="alert" data-code="{escape(code)}">'
        f"{escape(message)}</p><p>Go back to your course in the LMS and open the link again. "
        "If it keeps happening, tell your instructor this code: "
        f"<code>{escape(code)}</code>.</p>",
        status,
    )


def auto_post(url: str, fields: dict[str, str], title: str) -> HTMLResponse:
    """A form that posts itself (and a button for a browser without scripts)."""
    inputs = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in fields.items()
    )
    return _page(
        title,
        f"<h1>{escape(title)}</h1>"
        f'<form id="lti-post" method="post" action="{escape(url)}">{inputs}'
        '<button type="submit">Continue</button></form>'
        "<script>document.getElementById('lti-post').submit()</script>",
    )


def pick_page(
    secret: str,
    course_title: str,
    assignments: Sequence[tuple[int, str]],
    problems: Sequence[tuple[str, str]],
) -> HTMLResponse:
    """The instructor picks an assignment of the course, or one problem (which becomes a
    one-problem assignment due in two weeks)."""
    items = (
        "".join(
            f'<label><input type="radio" name="choice" value="assignment:{aid}"> {escape(title)}'
            "</label>"
            for aid, title in assignments
        )
        or "<p>This course has no assignments yet.</p>"
    )
    singles = "".join(
        f'<label><input type="radio" name="choice" value="problem:{escape(pid)}"> '
        f"{escape(title)}</label>"
        for pid, title in problems
    )
    return _page(
        "Add TensorJudge",
        f"<h1>Add TensorJudge to {escape(course_title)}</h1>"
        '<form method="post" action="/lti/deep-link">'
        f'<input type="hidden" name="secret" value="{escape(secret)}">'
        f"<fieldset><legend>An assignment</legend>{items}</fieldset>"
        f"<fieldset><legend>A single problem</legend>{singles}</fieldset>"
        '<button type="submit">Add to the course</button></form>',
    )


def link_page(
    secret: str, lms_title: str, courses: Sequence[tuple[int, str]], can_link_account: bool
) -> HTMLResponse:
    """The instructor's first launch from an LMS course: link it to a course they teach here,
    or make a new one; an LMS-made account is offered to sign in to their own first."""
    taught = "".join(
        f'<label><input type="radio" name="choice" value="course:{cid}"> {escape(title)}</label>'
        for cid, title in courses
    )
    account = (
        '<p id="link-account">Already teach this course on TensorJudge? '
        '<a href="/lti/link-account">Sign in to link your account</a>, then open TensorJudge '
        "from your LMS again.</p>"
        if can_link_account
        else ""
    )
    return _page(
        "Link your LMS course",
        f"<h1>Set up {escape(lms_title)} on TensorJudge</h1>{account}"
        '<form method="post" action="/lti/link-course">'
        f'<input type="hidden" name="secret" value="{escape(secret)}">'
        f"<fieldset><legend>A course you teach here</legend>"
        f"{taught or '<p>You teach no course here with this account.</p>'}</fieldset>"
        '<fieldset><legend>Or</legend><label><input type="radio" name="choice" value="new"> '
        f"A new course named {escape(lms_title)}</label></fieldset>"
        '<button type="submit">Link</button></form>',
    )


def identity_page(lms_name: str, signed_in_as: str | None) -> HTMLResponse:
    """Linking an LMS account to an existing one: sign in first, then confirm."""
    if signed_in_as is None:
        return _page(
            "Link your account",
            f"<h1>Link {escape(lms_name)} to your TensorJudge account</h1>"
            '<p><a id="sign-in" href="/login?next=/lti/link-account">Sign in</a> with your '
            "existing account in this browser, then come back here.</p>",
        )
    return _page(
        "Link your account",
        f"<h1>Link {escape(lms_name)} to your TensorJudge account</h1>"
        f"<p>From now on, opening TensorJudge from your LMS signs you in as "
        f"<strong>{escape(signed_in_as)}</strong>. This is done once and cannot be undone "
        "here.</p>"
        '<form method="post" action="/lti/link-account"><button type="submit">Link</button></form>',
    )


def linked_page() -> HTMLResponse:
    return _page(
        "Linked",
        "<h1>Your LMS account is linked</h1><p>Open TensorJudge from your LMS again to "
        "continue.</p>",
    )
