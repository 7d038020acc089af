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
