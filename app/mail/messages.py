"""The words of each mail, in plain text and HTML (every inserted value escaped)."""

from __future__ import annotations

from html import escape

from app.mail.outbox import Message


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
