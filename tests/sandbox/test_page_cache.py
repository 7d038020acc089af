"""No residency channel through shared files: what a run can open is served from memory (a tmpfs),
so a later run cannot read back which pages an earlier one touched or evicted. Each test runs real
sandboxes on every backend: a view probe, and a sender and a receiver run one after the other."""

from __future__ import annotations

import ctypes
import fcntl
import json
import mmap
import os
import secrets
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sandbox.backends import runtree
from sandbox.backends.bwrap import BwrapSandbox
from sandbox.backends.runtime import INSIDE_PACKAGE, discover
from sandbox.protocol import Sandbox
from tests.sandbox.helpers import FAST, IDENTITY, assert_grader_still_works, run

pytestmark = pytest.mark.timeout(180)

LIMITS = FAST.model_copy(update={"wall_seconds": 10.0, "cpu_seconds": 6, "output_bytes": 1 << 16})
BITS = 64
TRIALS = 3
GAP_SECONDS = 2.0  # between the sender's end and the receiver's start

# Docker: the engine reads every image file into memory when the backend starts (warm()), so no
# run can load a cold page; posix_fadvise(DONTNEED) still evicts one until the seccomp filter
# denies it. A container's root stays the image's overlay on the host's disk, and the engine
# binds /etc/hosts, /etc/hostname and /etc/resolv.conf from /var/lib/docker/containers/<id>.
DOCKER_VIEW = "the docker backend: the image's overlay and the engine's /etc binds are on disk"


# Shared by sender and receiver: the same view gives the same list. Files the interpreter and
# numpy mapped at start-up are left out (their pages are resident whatever the sender does), the
# largest first: on a host-library view these are libraries no run loads.
CANDIDATES = """
import ctypes, json, mmap, os, random, stat, time

PAGE = 4096
SKIP = {"/proc", "/sys", "/dev", "/tmp"}

def mapped():
    found = set()
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 6 and parts[5].startswith("/"):
                    found.add(parts[5])
    except OSError:
        pass
    return found

def candidates(count):
    skip = mapped()
    seen, files = set(), []
    for root, dirs, names in os.walk("/"):
        dirs[:] = sorted(d for d in dirs if os.path.join(root, d) not in SKIP)
        for name in sorted(names):
            path = os.path.join(root, name)
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if stat.S_ISREG(st.st_mode) and st.st_size >= 4 * PAGE and key not in seen:
                seen.add(key)
                if os.path.realpath(path) not in skip:
                    files.append((-st.st_size, path))
    files.sort()
    # A page of each chosen afresh for every trial (SEED): one nobody touched for long, which
    # a host that reclaims idle guest memory has made slow to read (see residency.py).
    pick = random.Random(SEED)
    return [(path, pick.randrange(-size // PAGE) * PAGE) for size, path in files[:count]]
"""

SENDER = (
    CANDIDATES
    + """
def f(a, n):
    secret = SECRET
    sent = 0
    for i, (path, offset) in enumerate(candidates(BITS)):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if secret >> i & 1:
                os.pread(fd, 1, offset)  # loads the page
            else:
                os.posix_fadvise(fd, offset, PAGE, os.POSIX_FADV_DONTNEED)  # evicts it
            sent += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    print(json.dumps({"sent": sent}))
    return a
"""
)

RECEIVER = (
    CANDIDATES
    + """
libc = ctypes.CDLL(None, use_errno=True)
libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]

def nowait(fd, offset):
    try:
        os.preadv(fd, [bytearray(1)], offset, os.RWF_NOWAIT)
        return 1
    except BlockingIOError:
        return 0
    except OSError:
        return None

def in_core(fd, offset):
    try:
        m = mmap.mmap(fd, PAGE, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE,
                      offset=offset)
    except OSError:
        return None
    try:
        anchor = ctypes.c_char.from_buffer(m)
        vec = ctypes.create_string_buffer(1)
        ok = libc.mincore(ctypes.addressof(anchor), PAGE, vec) == 0
        del anchor
        return vec.raw[0] & 1 if ok else None
    finally:
        m.close()

def f(a, n):
    found = {"nowait": [], "mincore": [], "ns": [], "hot_ns": []}
    for path, offset in candidates(BITS):
        fd = os.open(path, os.O_RDONLY)
        try:
            found["nowait"].append(nowait(fd, offset))
            found["mincore"].append(in_core(fd, offset))
            start = time.perf_counter_ns()
            os.pread(fd, 1, offset)
            found["ns"].append(time.perf_counter_ns() - start)
            start = time.perf_counter_ns()
            os.pread(fd, 1, offset)  # the same page again: resident now, whatever it was
            found["hot_ns"].append(time.perf_counter_ns() - start)
        finally:
            os.close(fd)
    print(json.dumps(found))
    return a
"""
)


def _docker_open(sandbox: Sandbox, request: pytest.FixtureRequest, reason: str) -> None:
    if sandbox.name == "docker":
        request.applymarker(pytest.mark.xfail(reason=reason, strict=False))


def decode(found: dict[str, list[int | None]], method: str) -> list[int]:
    """The receiver's guess of each bit (1: the page was resident); bits it has no file for, or
    whose probe was refused, are guessed 0."""
    if method == "timing":
        # A first read four times slower than the typical second read of a page (a cache hit,
        # 0.6-0.8 us here) waited for the disk (1-90 us measured on this host's virtual disk).
        hot = sorted(int(ns or 0) for ns in found["hot_ns"])
        limit = 4 * hot[len(hot) // 2] if hot else 0
        got = [1 if ns is not None and ns < limit else 0 for ns in found["ns"]]
    else:
        got = [1 if v == 1 else 0 for v in found[method]]
    return (got + [0] * BITS)[:BITS]


def test_a_later_run_cannot_read_back_which_pages_an_earlier_one_touched(
    sandbox: Sandbox,
) -> None:
    errors = dict.fromkeys(("nowait", "mincore", "timing"), 0)
    for _ in range(TRIALS):
        secret, seed = secrets.randbits(BITS), secrets.randbits(32)
        code = SENDER.replace("SECRET", str(secret)).replace("BITS", str(BITS))
        sent = run(sandbox, code.replace("SEED", str(seed)), limits=LIMITS)
        assert sent.status == "ok", sent.message
        time.sleep(GAP_SECONDS)
        code = RECEIVER.replace("BITS", str(BITS)).replace("SEED", str(seed))
        received = run(sandbox, code, limits=LIMITS)
        assert received.status == "ok", received.message
        found = json.loads(received.stdout.strip().splitlines()[-1])
        for method in errors:
            guess = decode(found, method)
            errors[method] += sum(guess[i] != (secret >> i & 1) for i in range(BITS))
    total = BITS * TRIALS
    # A receiver that knows nothing is a coin per bit: total/2 errors, sd sqrt(total)/2. Four
    # standard deviations either way: a decoder that beats the coin (or is its mirror) fails.
    margin = 4 * (total**0.5) / 2
    for method, wrong in errors.items():
        assert abs(wrong - total / 2) <= margin, (method, wrong, total, errors)
    assert_grader_still_works(sandbox)


VIEW = """
import json, os
import numpy as np

def f(a, n):
    mounts = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            head, _, tail = line.partition(" - ")
            fields, rest = head.split(), tail.split()
            mounts.append({"root": fields[3], "point": fields[4], "type": rest[0],
                           "source": rest[1], "dev": fields[2]})
    # statfs is refused in a run: a file's file system is the mount its device number names.
    fs_of = {m["dev"]: m["type"] for m in mounts}
    file_systems = {}
    for root, dirs, names in os.walk("/"):
        if root == "/":
            dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
        for name in dirs + names:
            path = os.path.join(root, name)
            if not os.path.islink(path):  # /dev/fd and friends lead into /proc
                dev = os.lstat(path).st_dev
                kind = fs_of.get(f"{os.major(dev)}:{os.minor(dev)}", "unknown")
                file_systems.setdefault(kind, path)
    multiarch = [d for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
                 if os.path.isdir(d)]
    libs = sorted(os.listdir(multiarch[0])) if multiarch else []
    squares = []
    for x in (1, 2, 3):
        child = os.fork()
        if child == 0:
            os._exit(x * x)
        squares.append(os.waitpid(child, 0)[1] >> 8)
    print(json.dumps({"mounts": mounts, "file_systems": file_systems, "libs": libs,
                      "squares": squares, "numpy": float(np.linalg.norm(np.eye(3)))}))
    return a
"""


def test_a_run_sees_only_the_in_memory_runtime(
    sandbox: Sandbox, request: pytest.FixtureRequest
) -> None:
    _docker_open(sandbox, request, DOCKER_VIEW)
    result = run(sandbox, VIEW, limits=LIMITS)
    assert result.status == "ok", result.message
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["squares"] == [1, 4, 9]  # fork works
    assert abs(seen["numpy"] - 3**0.5) < 1e-9
    # Every file a run can open is in memory: tmpfs (the runtime, /tmp, /dev), the device nodes
    # (devtmpfs), procfs, devpts.
    allowed = {"tmpfs", "devtmpfs", "proc", "devpts"}
    assert set(seen["file_systems"]) <= allowed, seen["file_systems"]
    # The mount table: tmpfs, procfs, devpts, and the host's device nodes; the runtime's tmpfs
    # is mounted whole (its root is "/") at "/", so no host directory is named.
    types = {m["type"] for m in seen["mounts"]}
    assert types <= {"tmpfs", "proc", "devpts", "devtmpfs"}, seen["mounts"]
    for m in seen["mounts"]:
        if m["type"] == "tmpfs":
            assert m["root"] == "/", m
        if m["type"] == "devtmpfs":  # a device node: in /dev, or /dev/null over a /proc file
            assert m["point"].startswith(("/dev/", "/proc/")), m
            assert m["root"].count("/") == 1, m
    assert any(m["point"] == "/" and m["type"] == "tmpfs" for m in seen["mounts"])
    # The host's library directory holds what the runtime loads, not the host's other libraries.
    assert seen["libs"], "no shared library directory"
    for unused in ("libLLVM", "libicudata", "libz3", "libgtk", "libpython3.11.so.1.0"):
        assert not any(lib.startswith(unused) for lib in seen["libs"]), (unused, seen["libs"])
    assert len(seen["libs"]) < 100, seen["libs"]
    assert_grader_still_works(sandbox)


def test_without_its_runtime_tree_no_run_starts(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    sandbox = BwrapSandbox(tree_base=blocked / "trees")  # cannot be made: never the host's disk
    result = run(sandbox, IDENTITY)
    assert result.status == "internal_error"
    assert "runtime tree" in result.message, result.message


def test_grader_processes_share_one_tree(bwrap_sandbox: BwrapSandbox) -> None:
    tree = bwrap_sandbox.tree()
    before = os.stat(tree.path)
    assert run(bwrap_sandbox, IDENTITY).status == "ok"
    again = subprocess.run(
        [sys.executable, "-c", SHARED],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    path, seconds = again.stdout.split()
    assert (path, float(seconds)) == (str(tree.path), 0.0)  # found, not rebuilt
    after = os.stat(tree.path)
    assert (after.st_dev, after.st_ino, after.st_ctime_ns) == (
        before.st_dev,
        before.st_ino,
        before.st_ctime_ns,
    )
    if os.geteuid() == 0:
        assert os.statvfs(tree.path).f_flag & os.ST_RDONLY  # its own read-only tmpfs
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        line = next(m for m in mounts if m.split()[4] == str(tree.path))
        assert " - tmpfs " in line and "noswap" in line, line


SHARED = """
from sandbox.backends import runtree
from sandbox.backends.runtime import discover
tree = runtree.ensure(discover())
print(tree.path, tree.build_seconds)
"""


def test_trees_no_process_holds_are_removed(tmp_path: Path) -> None:
    for key in ("held", "unused", "half-built"):
        (tmp_path / key).mkdir()
        (tmp_path / key / "python3").write_text("")
    for key in ("held", "unused"):
        (tmp_path / f"{key}.lock").write_text("")
    holder = os.open(tmp_path / "held.lock", os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_SH)  # as a live grader process does
        runtree._remove_unused(tmp_path, "mine", root=False)
    finally:
        os.close(holder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held", "held.lock"]


def _image_files(image_attrs: dict[str, object]) -> list[Path]:
    data = image_attrs["GraphDriver"]["Data"]  # type: ignore[index]
    layers = [*str(data.get("LowerDir") or "").split(":"), str(data.get("UpperDir") or "")]
    found = []
    for layer in filter(None, layers):
        for dirpath, _dirs, names in os.walk(layer):
            found += [Path(dirpath) / n for n in names if (Path(dirpath) / n).is_file()]
    return [p for p in found if not p.is_symlink()]


def _cold_pages(files: list[Path]) -> int:
    """Pages of ``files`` not in the page cache, by mincore (a read, even RWF_NOWAIT, would
    start readahead and load them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    cold = 0
    for path in files:
        size = path.stat().st_size
        if size == 0:
            continue
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY) as m:
            vec = ctypes.create_string_buffer((size + 4095) // 4096)
            anchor = ctypes.c_char.from_buffer(m)  # the mapping's address; touches no page
            try:
                assert libc.mincore(ctypes.addressof(anchor), size, vec) == 0, ctypes.get_errno()
            finally:
                del anchor
            cold += sum(1 for b in vec.raw if not b & 1)
    return cold


def test_the_docker_backend_makes_every_image_page_resident() -> None:
    from sandbox.backends.docker import DockerSandbox
    from tests.sandbox.docker_support import docker_sandbox_or_skip

    shared = docker_sandbox_or_skip()
    attrs = shared.client.images.get(shared.image).attrs
    if attrs.get("GraphDriver", {}).get("Name") != "overlay2" or os.geteuid() != 0:
        pytest.skip("needs root and the overlay2 storage driver to look at the image's pages")
    files = _image_files(attrs)
    for path in files:  # as if the host had reclaimed them since the image was last used
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
    assert _cold_pages(files) > 1000  # so the check below can fail
    DockerSandbox(image=shared.image)
    assert _cold_pages(files) == 0


def test_bytecode_written_on_the_host_does_not_change_the_tree(tmp_path: Path) -> None:
    """A host process importing the in-sandbox package writes its bytecode into the checkout;
    the next grader process must find the same tree, not build a second one."""
    rt = discover()
    before = runtree._key(rt)
    cache = INSIDE_PACKAGE / "__pycache__"
    written = cache / f"tj-test-{secrets.token_hex(4)}.cpython-311.pyc"
    cache.mkdir(exist_ok=True)
    written.write_bytes(b"not really bytecode")
    try:
        assert runtree._key(rt) == before
    finally:
        written.unlink()
    # A change of source does make a new tree.
    source = tmp_path / "changed.py"
    source.write_text("x = 1\n")
    assert runtree._key(replace(rt, stdlib=tmp_path)) != before
