"""Event-commit notices between processes (the scale-out mode), over Redis pub/sub.

A Celery worker commits a submission's events (running, the sandbox phase, the result) in its
own process; the API process that streams them (SSE) or waits for the result (``?wait``) would
only find them at its next database poll. Every process of the scale-out mode publishes, after
each commit, which submissions got events (and which got their result) on one Redis channel; each
API process listens and wakes its streams and waiters (``app.submissions.notices``).

Only hints, like the in-process notices: the database stays the truth, so a lost message (Redis
restarting, a listener reconnecting) only delays an answer to the next safety poll. Messages are
size-capped JSON holding submission ids, validated before use.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Set

import redis
from pydantic import BaseModel, Field, ValidationError

from app.submissions.notices import ACTIVITY, COMPLETIONS

log = logging.getLogger(__name__)

CHANNEL = "tensorjudge:events"
MAX_MESSAGE_BYTES = 64 * 1024
RECONNECT_SECONDS = 1.0


class EventsCommitted(BaseModel):
    """One commit's worth: submissions that got events, and those whose result was stored."""

    ids: list[str] = Field(max_length=1000)
    done: list[str] = Field(default=[], max_length=1000)


class Broadcaster:
    """Publishes this process's event commits (called by ``announce_event_commits``)."""

    def __init__(self, redis_url: str) -> None:
        self._redis = redis.Redis.from_url(redis_url, socket_timeout=1.0)
        self._failing = False

    def __call__(self, written: Mapping[str, Set[str]]) -> None:
        message = EventsCommitted(
            ids=sorted(written), done=sorted(i for i, kinds in written.items() if "result" in kinds)
        )
        try:
            self._redis.publish(CHANNEL, message.model_dump_json())
            self._failing = False
        except redis.RedisError as exc:
            # Committed all the same: listeners find it at their next safety poll.
            if not self._failing:
                log.warning("could not publish event notices: %s", exc)
            self._failing = True


class Listener:
    """Wakes this process's event streams and ``?wait`` requests on other processes' commits."""

    def __init__(self, redis_url: str) -> None:
        self._redis_url = redis_url
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="event-notices", daemon=True)
        self.received = 0  # for tests and operators

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._listen()
            except redis.RedisError as exc:
                log.warning("event notices interrupted (%s); reconnecting", exc)
                self._stop.wait(RECONNECT_SECONDS)

    def _listen(self) -> None:
        client = redis.Redis.from_url(self._redis_url, socket_timeout=5.0)
        pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        try:
            pubsub.subscribe(CHANNEL)
            while not self._stop.is_set():
                message = pubsub.get_message(timeout=1.0)
                if message is not None and message.get("type") == "message":
                    self._deliver(message["data"])
        finally:
            pubsub.close()
            client.close()

    def _deliver(self, data: object) -> None:
        if not isinstance(data, bytes) or len(data) > MAX_MESSAGE_BYTES:
            return
        try:
            notice = EventsCommitted.model_validate(json.loads(data))
        except (ValueError, ValidationError):
            return
        self.received += 1
        ACTIVITY.wake(notice.ids)
        COMPLETIONS.wake(notice.done)  # no row attached: the waiters read it
