"""The words of each mail, in plain text and HTML (every inserted value escaped)."""

from __future__ import annotations

from html import escape

from app.mail.outbox import Message

# The kinds of mail (``mail_outbox.kind``).
RESET, INVITATION = "reset", "invitation"


def _html(before: list[str], url: str, label: str, after: list[str]) -> str:
    def paragraphs(lines: list[str]) -> str:
        return "".join(f"<p>{escape(line)}</p>" for line in lines)

    link = f'<p><a href="{escape(url, quote=True)}">{escape(label)}</a></p>'
    return f"<!doctype html><html><body>{paragraphs(before)}{link}{paragraphs(after)}</body></html>"


def reset_message(name: str, url: str) -> Message:
    """The mail that carries a password (re)set link."""
    hello = f"Hello {name},"
    line = "Open this link to set your password (it works once, for 7 days):"
    ignore = "If you did not expect this, ignore this message."
    return Message(
        subject="Set your TensorJudge password",
        text=f"{hello}\n\n{line}\n{url}\n\n{ignore}\n",
        html=_html([hello, line], url, "Set your password", [ignore]),
    )


def invitation_message(name: str, course: str, url: str | None, sign_in_url: str) -> Message:
    """A course's invitation: with a link to set a password when the account has none yet
    (and is the course's to set up), else a pointer to the sign-in page."""
    hello = f"Hello {name},"
    added = f"you have been added to the course \u201c{course}\u201d on TensorJudge."
    if url is not None:
        line = "Open this link to choose your password (it works once, for 7 days):"
        target, label = url, "Choose your password"
    else:
        line = "Sign in with your existing account to find it under Courses:"
        target, label = sign_in_url, "Sign in"
    return Message(
        subject=f"You are invited to {course}"[:300],
        text=f"{hello}\n\n{added}\n{line}\n{target}\n",
        html=_html([hello, added, line], target, label, []),
    )


EXTENSION, SCORES, REGRADE = "extension", "scores_published", "regrade_changed"
REMINDER = "reminder"
# The kinds a person may turn off (``users.mail_optional``).
OPTIONAL = frozenset({SCORES, REGRADE, REMINDER})


def notice_message(name: str, subject: str, lines: list[str], url: str, label: str) -> Message:
    """A short notice about a course's work: the lines, and a link to the page concerned."""
    hello = f"Hello {name},"
    text = "\n".join([hello, "", *lines, url, ""])
    return Message(subject=subject[:300], text=text, html=_html([hello, *lines], url, label, []))


SIGNUP = "signup"


def verify_message(name: str, url: str, course: str | None) -> Message:
    """A sign-up's link to verify the address, which makes the account (and joins ``course``)."""
    hello = f"Hello {name},"
    what = (
        f"someone (we hope you) asked for a TensorJudge account with this address, to join "
        f"\u201c{course}\u201d."
        if course is not None
        else "someone (we hope you) asked for a TensorJudge account with this address."
    )
    line = "Open this link to confirm it is yours (it works once, for 2 days):"
    ignore = "If it was not you, ignore this message: no account is made without the link."
    return Message(
        subject="Confirm your TensorJudge address",
        text=f"{hello}\n\n{what}\n{line}\n{url}\n\n{ignore}\n",
        html=_html([hello, what, line], url, "Confirm my address", [ignore]),
    )


def has_account_message(name: str, url: str, course: str | None) -> Message:
    """The answer to a sign-up for an address that has an account: sign in (and join) instead;
    never a second account, never a password link."""
    hello = f"Hello {name},"
    what = "someone (we hope you) asked for a TensorJudge account with this address, which has one."
    line = (
        f"Sign in with it, then join \u201c{course}\u201d from this page:"
        if course is not None
        else "Sign in with it here:"
    )
    forgot = "Forgot the password? Ask your instructor or an administrator for a reset link."
    ignore = "If it was not you, ignore this message: nothing was changed."
    return Message(
        subject="You already have a TensorJudge account",
        text=f"{hello}\n\n{what}\n{line}\n{url}\n\n{forgot}\n{ignore}\n",
        html=_html([hello, what, line], url, "Sign in", [forgot, ignore]),
    )
