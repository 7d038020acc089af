"""Oversized request bodies sent to a real server over a raw socket, streamed from a generator so
neither side needs to hold them, with the server's peak memory while it answers and the bytes it
read meanwhile."""

from __future__ import annotations

import json
import select
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

MIB = 1024 * 1024
GIB = 1024 * MIB
CHUNK = MIB


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak_rss(pid: int) -> int:
    """Reset the process's peak resident set (VmHWM) to its current one; returns that, in bytes.
    Needs the right to write /proc/<pid>/clear_refs (the test's own child)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return _status_kib(pid, "VmRSS") * 1024


def peak_rss(pid: int) -> int:
    """The process's peak resident set since the last reset, in bytes."""
    return _status_kib(pid, "VmHWM") * 1024


def bytes_read(pid: int) -> int:
    """Every byte the process has read so far (``rchar``: its sockets' and files' read calls,
    not what still waits in the kernel's socket buffers), in bytes."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise KeyError("rchar")


@dataclass
class Answer:
    status: int
    body: dict[str, object] | None
    sent: int  # body bytes written before the answer came (or the server closed)


def send_body(
    base: str,
    path: str,
    *,
    total: int,
    chunked: bool = False,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
    timeout: float = 120,
) -> Answer:
    """POST ``total`` bytes to ``path``: with a ``Content-Length`` of ``total``, or chunked with
    none. Stops sending as soon as the server answers or stops reading."""
    url = urlsplit(base)
    assert url.hostname is not None and url.port is not None
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: {url.hostname}:{url.port}",
        f"Content-Type: {content_type}",
        "Connection: close",
        "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}",
        *(f"{k}: {v}" for k, v in (headers or {}).items()),
    ]
    sent = 0
    with socket.create_connection((url.hostname, url.port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        for chunk in _chunks(total):
            readable, writable, _ = select.select([sock], [sock], [], timeout)
            if readable or not writable:
                break  # an answer (or a close) before the whole body: stop sending
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        else:
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        return Answer(*_read_answer(sock), sent=sent)


def _chunks(total: int) -> Iterator[bytes]:
    block = b"a" * CHUNK
    remaining = total
    while remaining > 0:
        yield block[: min(CHUNK, remaining)]
        remaining -= CHUNK


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, object] | None]:
    data = b""
    while b"\r\n\r\n" not in data or len(data) < _expected_length(data):
        try:
            more = sock.recv(65536)
        except ConnectionResetError:
            break
        if not more:
            break
        data += more
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    return status, parsed if isinstance(parsed, dict) else None


def _expected_length(data: bytes) -> int:
    head, sep, _ = data.partition(b"\r\n\r\n")
    if not sep:
        return len(data) + 1
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(head) + 4 + int(value)
    return sys.maxsize  # no length: read until the server closes
