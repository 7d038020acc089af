"""The metrics on a port of their own, without credentials: a scrape target on an internal
network, and a worker process's only one (it serves no HTTP otherwise), so the port also answers
the worker's readiness (``/readyz``, as the API's: 200, or 503 saying what is missing)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from app.core import metrics
from app.core.errors import ApiError
from app.observability.readiness import Readiness


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._answer(200, metrics.exposition(), metrics.CONTENT_TYPE)
        elif path == "/readyz" and self.server.readiness is not None:
            problems = self.server.readiness.problems()
            if problems:
                error = ApiError(503, "not_ready", "; ".join(problems))
                self._answer(503, error.body.model_dump_json().encode(), "application/json")
            else:
                self._answer(200, json.dumps({"status": "ready"}).encode(), "application/json")
        else:
            self.send_error(404)

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # one line per scrape would drown the log


class _Server(ThreadingHTTPServer):
    readiness: Readiness | None = None


class MetricsPort:
    def __init__(self, host: str, port: int, readiness: Readiness | None = None) -> None:
        self._server = _Server((host, port), _Handler)
        self._server.readiness = readiness
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-port", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> MetricsPort:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
