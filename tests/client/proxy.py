"""A TCP proxy on 127.0.0.1 that can lose the answer to a POST: the request reaches the
server, the server answers, and the client's connection is closed before it sees a byte."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class DroppingProxy:
    def __init__(self, upstream_port: int, drop_posts: int = 1) -> None:
        self.upstream_port = upstream_port
        self.drop_posts = drop_posts  # answers to POSTs still to lose
        self.dropped = 0
        self.posts = 0
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            state = {"post": False}
            threading.Thread(
                target=self._pump_requests, args=(downstream, upstream, state), daemon=True
            ).start()
            threading.Thread(
                target=self._pump_answers, args=(upstream, downstream, state), daemon=True
            ).start()

    def _pump_requests(
        self, src: socket.socket, dst: socket.socket, state: dict[str, bool]
    ) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                if data.startswith(b"POST "):
                    state["post"] = True
                    with self.lock:
                        self.posts += 1
                dst.sendall(data)
        _close(src, dst)

    def _pump_answers(self, src: socket.socket, dst: socket.socket, state: dict[str, bool]) -> None:
        with suppress(OSError):
            while data := src.recv(65536):
                with self.lock:
                    drop = state["post"] and self.drop_posts > 0
                    if drop:
                        self.drop_posts -= 1
                        self.dropped += 1
                if drop:
                    break  # the server has answered (so it has stored the request): lose it
                state["post"] = False
                dst.sendall(data)
        _close(src, dst)

    def close(self) -> None:
        self.listener.close()


def _close(*sockets: socket.socket) -> None:
    for s in sockets:
        with suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


@contextmanager
def dropping_proxy(upstream_port: int, drop_posts: int = 1) -> Iterator[DroppingProxy]:
    proxy = DroppingProxy(upstream_port, drop_posts)
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
