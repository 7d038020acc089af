"""Winnowing over Python tokens (Schleimer, Wilkerson and Aiken, SIGMOD 2003; what MOSS,
copydetect and Dolos do): a submission becomes the set of hashes of its token k-grams that a
sliding window selects, each remembering the source lines it covers.

Tokens come from the ``tokenize`` module with identifiers a student chooses replaced by one
placeholder, comments, docstrings and layout dropped, so renaming variables and rewriting
comments change nothing. Attribute and builtin names stay (``np.einsum`` and ``reshape`` are
how a solution works, not what it calls things). copydetect does the same over pygments
tokens but needs matplotlib and reads files; this is the part of it a server needs.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import tokenize
from dataclasses import dataclass

# A k-gram of K tokens is about one short statement; the window guarantees that any shared
# run of K + WINDOW - 1 tokens is found.
K = 10
WINDOW = 6
# Bounds the work of one submission (and so of one pair): tokens past this are not read.
MAX_TOKENS = 20_000

_BUILTINS = frozenset(dir(builtins))
_SKIP = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
)


@dataclass(frozen=True)
class Token:
    text: str
    line: int


@dataclass(frozen=True)
class Fingerprints:
    """Selected k-gram hash -> the (first, last) source lines of its first occurrence."""

    spans: dict[int, tuple[int, int]]
    tokens: int


def tokens(code: str) -> list[Token]:
    """The normalised tokens of ``code``; code that does not tokenize gives what came before
    the error (a syntax error's submission can still be a copy)."""
    out: list[Token] = []
    previous = ""
    statement_start = True
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if len(out) >= MAX_TOKENS:
                break
            if tok.type in _SKIP:
                if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                    statement_start = True
                continue
            if tok.type == tokenize.STRING and statement_start:
                continue  # a docstring or a bare string: prose, like a comment
            statement_start = False
            out.append(Token(_normal(tok, previous), tok.start[0]))
            previous = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _normal(tok: tokenize.TokenInfo, previous: str) -> str:
    if tok.type == tokenize.NAME:
        name = tok.string
        if keyword.iskeyword(name) or name in _BUILTINS or previous == ".":
            return name
        return "V"
    if tok.type == tokenize.STRING:
        return "S"
    return tok.string


def _hash(texts: list[str]) -> int:
    digest = hashlib.blake2b("\x1f".join(texts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def fingerprints(code: str, k: int = K, window: int = WINDOW) -> Fingerprints:
    toks = tokens(code)
    texts = [t.text for t in toks]
    grams = [(_hash(texts[i : i + k]), i) for i in range(len(toks) - k + 1)]
    spans: dict[int, tuple[int, int]] = {}
    if not grams:
        return Fingerprints(spans, len(toks))
    last_pick = -1
    for start in range(max(1, len(grams) - window + 1)):
        frame = grams[start : start + window]
        # The rightmost minimum (the paper's rule): one pick per run of equal windows.
        best = min(range(len(frame)), key=lambda j: (frame[j][0], -j))
        pick = start + best
        if pick != last_pick:
            value, at = grams[pick]
            spans.setdefault(value, (toks[at].line, toks[at + k - 1].line))
            last_pick = pick
    return Fingerprints(spans, len(toks))


def merge_lines(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching line ranges merged, in order."""
    merged: list[tuple[int, int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged
