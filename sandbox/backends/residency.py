"""Keeps the memory every run shares resident, so no run can tell which of it another touched.

Runs share pages: the runtime tree's files (one tmpfs every bwrap run reads), the docker image's
layers, and the fork server zygote's memory (every run is a copy-on-write fork of it). Inside the
machine these stay in memory (nothing evicts a tmpfs page without swap, and fadvise/madvise are
denied), but the layer under the machine may not: on a virtual machine whose host reclaims guest
memory nobody touched for a few minutes (measured here: none after 4 min idle, ~20 % after 6),
reading such a page costs a host fault (40-70 us against ~1.5 us). A run that reads some pages
makes them fast for minutes, and a later run that times its first reads finds out which: CI
read 64 bits across runs at 67 % this way. A keeper thread reads one byte of every shared page
far more often than the host reclaims, so every page is already fast whatever runs do.

A round is a few hundred milliseconds of CPU (~215,000 pages with torch: ~250 ms here), due
every minute whatever else the process does. In the API process (embedded graders) that may be
a deadline's burst of submissions: the host process can have a round step aside between slices
(``pause_rounds_with``), which stretches the round, not its period, well under the minutes
after which the host reclaims.
"""

from __future__ import annotations

import logging
import mmap
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)

# Well under the idle time after which this host started reclaiming (4-6 minutes).
DEFAULT_PERIOD_SECONDS = 60.0
PAGE = mmap.PAGESIZE
_CHUNK = 1 << 20
# Files are mapped a window at a time: a mapped page counts in this process's resident size
# while mapped, and a whole library of several hundred MiB would show as that much growth.
_WINDOW = 8 << 20
# Pages read between two calls of the round's pause (8 MiB).
SLICE_PAGES = _WINDOW // PAGE


def _no_pause() -> object:
    return None


# Called between slices of every round: set by the host process (``pause_rounds_with``).
_pause: Callable[[], object] = _no_pause


def pause_rounds_with(pause: Callable[[], object] | None) -> None:
    """Have every keeper of this process call ``pause`` after each ``SLICE_PAGES`` pages it
    reads (e.g. a wait, bounded, while more urgent work runs); None: never pause."""
    global _pause
    _pause = pause or _no_pause


def rounds_pause() -> Callable[[], object]:
    """What rounds call between slices now."""
    return _pause


class _Slices:
    """Counts a round's pages and pauses after each slice of them."""

    def __init__(self) -> None:
        self.pages = 0
        self._since = 0

    def add(self, pages: int) -> None:
        self.pages += pages
        self._since += pages
        if self._since >= SLICE_PAGES:
            self._since = 0
            _pause()


def _touch_mapping(buf: mmap.mmap | bytes) -> int:
    view = memoryview(buf)
    try:
        # One byte per page is enough to fault the page in; the sum keeps the reads.
        return len(bytes(view[::PAGE]))
    finally:
        view.release()


def touch_files(roots: Iterable[Path]) -> int:
    """Read one byte of every page of every regular file under ``roots``; returns the pages."""
    slices = _Slices()
    for root in roots:
        for folder, _dirs, names in os.walk(root):
            for name in names:
                _touch_file(os.path.join(folder, name), slices)
    return slices.pages


def _touch_file(path: str, slices: _Slices) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # a symlink, a socket, a file that went away
    try:
        size = os.fstat(fd).st_size
        for start in range(0, size, _WINDOW):
            length = min(_WINDOW, size - start)
            with mmap.mmap(fd, length, prot=mmap.PROT_READ, offset=start) as mapped:
                pages = _touch_mapping(mapped)
            slices.add(pages)
    except (OSError, ValueError):
        return  # not a regular file, or not mappable
    finally:
        os.close(fd)


def touch_process(pid: int) -> int:
    """Read one byte of every page of ``pid``'s readable memory that no file backs (as root,
    through /proc/pid/mem); pages it never touched read as the shared zero page."""
    slices = _Slices()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
            for line in maps:
                fields = line.split()
                start, end = (int(x, 16) for x in fields[0].split("-"))
                # A file's pages (the tree's libraries) are its keeper's; [vvar] cannot be read.
                named = fields[5] if len(fields) > 5 else ""
                if not fields[1].startswith("r") or named.startswith("/") or named == "[vvar]":
                    continue
                for at in range(start, end, _CHUNK):
                    try:
                        mem.seek(at)
                        slices.add(_touch_mapping(mem.read(min(_CHUNK, end - at))))
                    except OSError:
                        break  # a guard page or a mapping that went away
    except (OSError, ValueError):
        pass  # the process ended
    return slices.pages


class ResidencyKeeper:
    """A daemon thread touching ``files()`` and the memory of ``pids()`` every ``period``
    seconds (0: never). ``touch_once`` is what each round does, for tests and operators."""

    def __init__(
        self,
        name: str,
        files: Callable[[], Iterable[Path]] = tuple,
        pids: Callable[[], Iterable[int]] = tuple,
        period: float = DEFAULT_PERIOD_SECONDS,
    ) -> None:
        self.name = name
        self.files = files
        self.pids = pids
        self.period = period
        self.rounds = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def touch_once(self) -> int:
        pages = touch_files(self.files())
        for pid in self.pids():
            pages += touch_process(pid)
        self.rounds += 1
        return pages

    def start(self) -> ResidencyKeeper:
        if self.period > 0 and self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name=f"sandbox-residency-{self.name}", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.touch_once()
            except Exception:  # a round that failed must not end the defence
                log.exception("keeping the sandbox's shared memory resident failed")
            self._stop.wait(self.period)


_SHARED: dict[str, ResidencyKeeper] = {}
_SHARED_LOCK = threading.Lock()


def shared_keeper(
    name: str, key: str, files: Callable[[], Iterable[Path]], period: float
) -> ResidencyKeeper:
    """One keeper per ``key`` (a tree's path, an image) in this process, however many backends
    use it: each would read the same pages again, and none stops it while others use it."""
    with _SHARED_LOCK:
        keeper = _SHARED.get(key)
        if keeper is None or (keeper.period <= 0 < period):
            keeper = _SHARED[key] = ResidencyKeeper(name, files=files, period=period).start()
        return keeper


def descendants(pid: int) -> list[int]:
    """``pid``'s descendants, nearest first (from /proc/<pid>/task/*/children)."""
    found: list[int] = []
    queue = [pid]
    while queue:
        parent = queue.pop(0)
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                continue
            found.extend(children)
            queue.extend(children)
    return found
