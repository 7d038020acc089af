"""Readiness, as opposed to liveness (``/healthz``): whether this process should get traffic now.

Ready when the database is at the newest migration, the sandbox backend this process grades
with is primed (embedded mode), and the broker answers (Celery mode). Each check is cheap and
bounded in time, since orchestrators probe every few seconds.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from app.db.migrate import is_current

log = logging.getLogger(__name__)

BROKER_TIMEOUT_SECONDS = 1.0


@dataclass
class Priming:
    """The sandbox backend being built and started in the background."""

    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None

    def run(self, prime: Callable[[], None]) -> threading.Thread:
        def work() -> None:
            try:
                prime()
            except Exception as exc:
                # The type only: readiness is public; the log has the rest.
                log.exception("the sandbox backend did not start")
                self.error = type(exc).__name__
            finally:
                self.done.set()

        thread = threading.Thread(target=work, name="sandbox-priming", daemon=True)
        thread.start()
        return thread


@dataclass
class Readiness:
    engine: Engine
    priming: Priming | None = None
    redis_url: str | None = None

    def problems(self) -> list[str]:
        """What keeps this process from being ready; empty when it is."""
        found = []
        try:
            if not is_current(self.engine):
                found.append("database: the schema is not at the newest migration")
        except Exception as exc:
            found.append(f"database: {type(exc).__name__}")
        if self.priming is not None:
            if not self.priming.done.is_set():
                found.append("sandbox: still starting")
            elif self.priming.error is not None:
                found.append(f"sandbox: {self.priming.error}")
        if self.redis_url is not None and not _broker_answers(self.redis_url):
            found.append("broker: Redis does not answer")
        return found


def _broker_answers(url: str) -> bool:
    import redis

    client = redis.Redis.from_url(
        url,
        socket_connect_timeout=BROKER_TIMEOUT_SECONDS,
        socket_timeout=BROKER_TIMEOUT_SECONDS,
    )
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()
