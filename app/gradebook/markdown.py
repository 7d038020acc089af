"""Staff's markdown (comments, notes, diagnosis hints) rendered to HTML that is safe to insert
in a student's page: raw HTML is escaped (``html`` off), links go only to http(s), mailto or
this site (markdown-it's ``validateLink`` drops ``javascript:``, ``data:``...), and an image
is kept only from this site: a remote one would tell its host who opened the page and when."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import escape

_ALLOWED_LINK = ("http://", "https://", "mailto:", "/", "#")


def _local(url: str) -> bool:
    return url.startswith("/") and not url.startswith("//") and "\\" not in url


def _image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = "".join(child.content for child in token.children or [])
    if _local(src):
        return f'<img src="{escape(src)}" alt="{escape(alt)}" loading="lazy">'
    return f'<span class="remote-image">[image: {escape(alt or "remote image")}]</span>'


def _link_open(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    if not href.lower().startswith(_ALLOWED_LINK) or href.startswith("//"):
        token.attrSet("href", "#")
    token.attrSet("rel", "nofollow noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.add_render_rule("image", _image)
    md.add_render_rule("link_open", _link_open)
    return md


_MD = _parser()


def render(body: str) -> str:
    """``body`` as sanitized HTML."""
    return str(_MD.render(body))
