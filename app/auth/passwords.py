"""Password hashing (argon2id through pwdlib) and the rules a new password must meet.

The length cap is checked before hashing: argon2 cost does not grow with length, but a huge
body still costs memory and bandwidth, and a cap gives a clear answer instead of a slow one.
"""

from __future__ import annotations

from pwdlib import PasswordHash

MAX_PASSWORD_BYTES = 1024

_hasher = PasswordHash.recommended()
# Verified when the email is unknown, so a wrong email costs the same time as a wrong password
# and the response time does not tell which accounts exist.
_DUMMY_HASH = _hasher.hash("not a password of anyone")


class PasswordError(ValueError):
    pass


def check_new_password(password: str, min_length: int) -> None:
    """A ``PasswordError`` naming the rule a new password breaks."""
    if len(password) < min_length:
        raise PasswordError(f"a password needs at least {min_length} characters")
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        raise PasswordError(f"a password may be at most {MAX_PASSWORD_BYTES} bytes")


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password: str, stored: str | None) -> bool:
    """True when ``password`` matches ``stored``; an account without a password (tokens only,
    single sign-on only) never matches, after the same work as a real check."""
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        return False
    if stored is None:
        _hasher.verify(password, _DUMMY_HASH)
        return False
    try:
        return _hasher.verify(password, stored)
    except Exception:  # an unreadable stored hash is a failed sign-in, not a 500
        return False
