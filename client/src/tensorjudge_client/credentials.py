"""Personal access tokens stored by ``tj login``: one per server, in a file only its owner can
read (mode 0600, in a 0700 folder) under the user's config folder.

The folder is ``TJ_CONFIG_DIR`` if set, else ``%APPDATA%\\tensorjudge`` on Windows, else
``$XDG_CONFIG_HOME/tensorjudge`` (``~/.config/tensorjudge``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

FILE_NAME = "credentials.json"


def config_dir() -> Path:
    explicit = os.environ.get("TJ_CONFIG_DIR")
    if explicit:
        return Path(explicit)
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "tensorjudge"
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tensorjudge"


def credentials_path() -> Path:
    return config_dir() / FILE_NAME


def _key(url: str) -> str:
    return url.rstrip("/")


def _read() -> dict[str, Any]:
    try:
        data = json.loads(credentials_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(data: dict[str, Any]) -> None:
    """Replaces the file at once; the secret is never in a file others can read, not even
    for a moment (the temporary file is created 0600)."""
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".credentials-")
    try:
        os.chmod(tmp, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
        os.replace(tmp, credentials_path())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def stored(url: str) -> dict[str, Any] | None:
    """What ``tj login`` stored for this server: {"token", "token_id"?, "name"?}."""
    entry = _read().get("servers", {}).get(_key(url))
    return entry if isinstance(entry, dict) and isinstance(entry.get("token"), str) else None


def stored_token(url: str) -> str | None:
    entry = stored(url)
    return str(entry["token"]) if entry is not None else None


def store(url: str, token: str, *, token_id: int | None = None, name: str | None = None) -> Path:
    data = _read()
    servers = data.setdefault("servers", {})
    servers[_key(url)] = {"token": token, "token_id": token_id, "name": name}
    _write(data)
    return credentials_path()


def forget(url: str) -> bool:
    data = _read()
    servers = data.get("servers", {})
    if _key(url) not in servers:
        return False
    del servers[_key(url)]
    _write(data)
    return True
