"""A TCP proxy on 127.0.0.1 that cuts connections on purpose: the request reaches the server,
the server answers, and the client loses the answer (all of it, or the rest after a marker)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class CuttingProxy:
    """Cuts the answer to the first ``times`` requests whose first bytes start with
    ``request_prefix``: at once, or right after forwarding the chunk in which ``cut_after``
    appears. ``requests`` keeps the head of every request that passed."""

    def __init__(
        self,
        upstream_port: int,
        request_prefix: bytes,
        *,
        cut_after: bytes | None = None,
        times: int = 1,
    ) -> None:
        self.upstream_port = upstream_port
        self.request_prefix = request_prefix
        self.cut_after = cut_after
        self.left = times
        self.cut = 0
        self.requests: list[bytes] = []
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            state = {"marked": False}
            for target, args in (
                (self._requests, (downstream, upstream, state)),
                (self._answers, (upstream, downstream, state)),
            ):
                threading.Thread(target=target, args=args, daemon=True).start()

    def _requests(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                if data.startswith((b"GET ", b"POST ", b"DELETE ", b"PUT ", b"HEAD ")):
                    with self.lock:
                        self.requests.append(data[:2048])
                        if data.startswith(self.request_prefix) and self.left > 0:
                            self.left -= 1
                            state["marked"] = True
                dst.sendall(data)
        _close(src, dst)

    def _answers(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        seen = b""
        with suppress(OSError):
            while data := src.recv(65536):
                if state["marked"]:
                    seen += data
                    if self.cut_after is None:
                        break  # the server has answered (so it acted on the request): lose it
                    dst.sendall(data)
                    if self.cut_after in seen:
                        break
                    continue
                dst.sendall(data)
        if state["marked"]:
            with self.lock:
                self.cut += 1
        _close(src, dst)

    def close(self) -> None:
        self.listener.close()


def _close(*sockets: socket.socket) -> None:
    for s in sockets:
        with suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


@contextmanager
def cutting_proxy(
    upstream_port: int, request_prefix: bytes, *, cut_after: bytes | None = None
) -> Iterator[CuttingProxy]:
    proxy = CuttingProxy(upstream_port, request_prefix, cut_after=cut_after)
    try:
        yield proxy
    finally:
        proxy.close()


@contextmanager
def silent_server() -> Iterator[str]:
    """Accepts connections and never answers: what a hung server looks like."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for s in held:
            s.close()
