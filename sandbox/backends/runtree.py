"""The runtime tree: everything a bwrap run can open, copied once into a tmpfs and bound as the
sandbox's whole root.

Files bound from the host's disk share the host's page cache with every other run: a run could
evict or load pages of them and a later run read the pattern back by probing residency (even by
timing a first read). Pages of a tmpfs are not in that cache: they are the files themselves,
resident until the file is deleted (``noswap`` keeps them off swap), so their residency says
nothing. The tree holds only what a run needs: the interpreter and libpython, the stdlib without
its tests, GUI and packaging tools, numpy and numpy.libs, the in-sandbox package, and exactly the
shared libraries these load (their ELF dependencies, transitively, and the few glibc dlopens).

Built once per runtime, keyed by a hash of its files' manifest (paths, sizes, mtimes, modes),
of the host's library cache and of this module: grader processes with the same runtime share one
tree, a changed runtime gets a new one. As root each tree is a dedicated tmpfs mounted at
``/run/tensorjudge/<key>`` (read-only once built, so its mount root is "/"); otherwise a
directory under ``/dev/shm``. Every process using a tree holds a shared lock on ``<key>.lock``;
a process making or reusing a tree removes the trees no live process holds.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import logging
import os
import re
import shutil
import stat
import subprocess
import sysconfig
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sandbox.backends.runtime import (
    INSIDE_MOUNT,
    INSIDE_PACKAGE,
    TORCH_COMPANIONS,
    PythonRuntime,
)

log = logging.getLogger(__name__)

SITE = "/sandbox/site-packages"
ROOT_BASE = Path("/run/tensorjudge")
# Parts of the stdlib no run needs (tests, GUI, packaging, the static library of config-*).
STDLIB_SKIP = frozenset(
    {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "site-packages",
     "dist-packages"}
)  # fmt: skip
DYNLOAD_SKIP = ("_tkinter", "_test", "_xxtestfuzz", "xxlimited", "_ctypes_test")
# Parts of torch no run needs or may have (``_torch_skip``).
TORCH_SKIP = frozenset({"include", "test", "bin", "share", "_inductor"})
TORCH_SHM_MANAGER = f"{SITE}/torch/bin/torch_shm_manager"
TORCH_LIB_SKIP = (
    "libjitbackend_test", "libtorchbind_test", "libbackend_with_compiler", "libaoti_custom_ops"
)  # fmt: skip
# glibc dlopens these by name (pthread_cancel and unwinding need libgcc_s); no ELF names them.
DLOPENED = ("libgcc_s.so.1",)
# Mount points inside the tree for what bwrap mounts over it.
MOUNT_POINTS = ("proc", "dev", "tmp")
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_NOATIME = 1024
MNT_DETACH = 2
TREE_FLAGS = MS_NOSUID | MS_NODEV | MS_NOATIME

_libc = ctypes.CDLL(None, use_errno=True)


class RuntimeTreeError(OSError):
    """The runtime tree could not be made: runs cannot start (never from the host's disk)."""


@dataclass(frozen=True)
class RuntimeTree:
    path: Path  # its root on the host: bound as a sandbox's "/"
    key: str
    size_bytes: int
    build_seconds: float  # 0.0 when an existing tree was reused


def library_dirs() -> list[str]:
    """The directories the dynamic loader searches without a cache, where libraries go."""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    dirs = [f"/usr/lib/{multiarch}" if multiarch else "/usr/lib", "/usr/lib64", "/lib64"]
    if multiarch:
        dirs.append(f"/lib/{multiarch}")
    return dirs


@lru_cache
def ensure(rt: PythonRuntime, base: Path | None = None) -> RuntimeTree:
    """This runtime's tree under ``base`` (by default /run/tensorjudge as root, /dev/shm
    otherwise), built if no process made it yet; held (shared lock) until this process exits."""
    root = os.geteuid() == 0
    if base is None:
        base = ROOT_BASE if root else Path(f"/dev/shm/tensorjudge-{os.geteuid()}")
    try:
        base.mkdir(mode=0o755, parents=True, exist_ok=True)
        os.chmod(base, 0o755)  # the runs' unprivileged uids pass through it
        key = _key(rt)
        with _locked(base / ".lock", fcntl.LOCK_EX):
            tree = base / key
            started = time.monotonic()
            built = not _ready(tree, root)
            if built:
                _build(rt, tree, root)
            holder = os.open(base / f"{key}.lock", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            fcntl.flock(holder, fcntl.LOCK_SH)  # kept open: this process uses the tree
            _remove_unused(base, key, root)
            seconds = time.monotonic() - started if built else 0.0
    except OSError as exc:
        raise RuntimeTreeError(
            f"could not make the sandbox runtime tree under {base}: {exc}"
        ) from exc
    made = RuntimeTree(path=tree, key=key, size_bytes=_size(tree), build_seconds=seconds)
    log.info(
        "sandbox runtime tree %s: %.1f MiB, %s",
        tree,
        made.size_bytes / 2**20,
        f"built in {seconds:.2f} s" if built else "reused",
    )
    return made


def _key(rt: PythonRuntime) -> str:
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for dest, src in _sources(rt):
        # Bytecode is derived: a host process importing a module writes it (the checkout's
        # inside/ above all), which must not make the next grader process build a second tree.
        # A stale .pyc copied into a tree is ignored by the interpreter (it checks the source).
        if "/__pycache__/" in dest:
            continue
        digest.update(f"{dest}\0".encode())
        with contextlib.suppress(OSError):
            st = os.lstat(src)
            digest.update(f"{st.st_size} {st.st_mtime_ns} {st.st_mode}\0".encode())
    with contextlib.suppress(OSError):
        st = os.stat("/etc/ld.so.cache")  # changes whenever the host's libraries do
        digest.update(f"{st.st_size} {st.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


def _sources(rt: PythonRuntime) -> Iterator[tuple[str, Path]]:
    """(path in the sandbox, host path) of every runtime file, libraries apart."""
    yield str(rt.executable), rt.executable
    for lib in sorted((rt.prefix / "lib").glob("libpython3*.so*")):
        yield str(lib), lib
    yield from _walk(rt.stdlib, str(rt.stdlib), _stdlib_skip)
    yield from _walk(rt.numpy_dir, f"{SITE}/numpy", _numpy_skip)
    if rt.numpy_libs is not None:
        yield from _walk(rt.numpy_libs, f"{SITE}/numpy.libs", lambda rel: False)
    if rt.torch_dir is not None:
        yield from torch_sources(rt.torch_dir, SITE)
    yield from _walk(INSIDE_PACKAGE, INSIDE_MOUNT, lambda rel: False)


def torch_sources(torch_dir: Path, site: str) -> Iterator[tuple[str, Path]]:
    """(path under ``site``, host path) of torch as a run may have it (``_torch_skip``) and the
    companions ``import torch`` needs: for the runtime tree and the docker image alike
    (``sandbox/backends/imagetorch.py``)."""
    yield from _walk(torch_dir, f"{site}/torch", _torch_skip)
    for name in TORCH_COMPANIONS:
        src = torch_dir.parent / name
        if src.is_dir():
            yield from _walk(src, f"{site}/{name}", lambda rel: False)
        elif src.is_file():
            yield f"{site}/{name}", src


def _stdlib_skip(rel: str) -> bool:
    top = rel.split("/", 1)[0]
    if top in STDLIB_SKIP or top.startswith("config-"):
        return True
    return rel.startswith("lib-dynload/") and rel[12:].startswith(DYNLOAD_SKIP)


def _numpy_skip(rel: str) -> bool:
    return "tests" in rel.split("/")  # numpy's own test suites (17 MB)


def _torch_skip(rel: str) -> bool:
    """torch without what no run needs and what would be a way out: its C++ headers (with no
    compiler in the tree, ``cpp_extension`` and ``torch.compile`` have nothing to build with
    anyway), its test suites and test libraries, its executables, and the inductor, the code
    generator ``torch.compile`` runs (so it fails at import, never writing a cache)."""
    top = rel.split("/", 1)[0]
    if top in TORCH_SKIP:
        return True
    name = rel.rsplit("/", 1)[-1]
    return rel.startswith("lib/") and (name.endswith(".a") or name.startswith(TORCH_LIB_SKIP))


def _walk(top: Path, dest: str, skip: Callable[[str], bool]) -> Iterator[tuple[str, Path]]:
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not skip(rel_dir + d))
        for name in sorted(filenames):
            # Bytecode for -O and -OO: the runner never runs optimized (28 MB of the stdlib's).
            if not skip(rel_dir + name) and not name.endswith((".opt-1.pyc", ".opt-2.pyc")):
                yield f"{dest}/{rel_dir}{name}", Path(dirpath) / name


def _ready(tree: Path, root: bool) -> bool:
    """Built completely: as root, its tmpfs is mounted read-only (the last step of a build);
    otherwise the directory exists (renamed into place when complete)."""
    if not root:
        return tree.is_dir()
    return os.path.ismount(tree) and bool(os.statvfs(tree).f_flag & os.ST_RDONLY)


def _build(rt: PythonRuntime, tree: Path, root: bool) -> None:
    if root:
        if os.path.ismount(tree):  # a build that died half-way
            _umount(tree)
        tree.mkdir(mode=0o755, exist_ok=True)
        _mount_tmpfs(tree)
        try:
            _populate(rt, tree)
            _check(
                _libc.mount(None, str(tree).encode(), None, MS_REMOUNT | MS_RDONLY | TREE_FLAGS,
                            None),
                f"remount {tree} read-only",
            )  # fmt: skip
        except BaseException:
            _umount(tree)
            raise
        return
    building = tree.with_name(f".{tree.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(mode=0o755)
    try:
        _populate(rt, building)
        os.rename(building, tree)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def _mount_tmpfs(tree: Path) -> None:
    target = str(tree).encode()
    if _libc.mount(b"tmpfs", target, b"tmpfs", TREE_FLAGS, b"mode=0755,noswap") == 0:
        return
    if ctypes.get_errno() != errno.EINVAL:
        _check(-1, f"mount a tmpfs on {tree}")
    # Kernels before 6.4 know no noswap: only reachable where the host has swap at all.
    log.warning("this kernel's tmpfs has no noswap: the runtime tree may be swapped out")
    _check(_libc.mount(b"tmpfs", target, b"tmpfs", TREE_FLAGS, b"mode=0755"), f"mount {tree}")


def _populate(rt: PythonRuntime, tree: Path) -> None:
    os.chmod(tree, 0o755)
    for name in MOUNT_POINTS:
        (tree / name).mkdir(mode=0o755)
    elves = []
    for dest, src in _sources(rt):
        _copy(src, tree, dest)
        if _is_elf(src):
            elves.append(src)
    _mkdirs(tree, str(rt.stdlib / "site-packages"))  # the interpreter's own packages: none
    if rt.torch_dir is not None:
        # ``import torch`` insists that its shared-memory manager exists; an empty file that
        # cannot run stands in for it, so tensors shared between processes have no manager.
        _mkdirs(tree, TORCH_SHM_MANAGER.rsplit("/", 1)[0])
        (tree / TORCH_SHM_MANAGER.lstrip("/")).write_bytes(b"")
        os.chmod(tree / TORCH_SHM_MANAGER.lstrip("/"), 0o444)
    for link, target in _top_symlinks():
        os.symlink(target, tree / link.lstrip("/"))
    # Already in the tree, found through their RPATH: libpython, numpy.libs, torch/lib.
    own = {os.path.realpath(p) for p in (rt.prefix / "lib").glob("libpython3*.so*")}
    own_dirs = tuple(
        os.path.realpath(p) + "/" for p in (rt.numpy_dir, rt.numpy_libs, rt.torch_dir) if p
    )
    for lib in sorted(set(_dependencies(elves)) | set(_dlopened())):
        real = os.path.realpath(lib)
        if real not in own and not real.startswith(own_dirs):
            _copy_library(lib, tree)


def _copy(src: Path, tree: Path, dest: str) -> None:
    """``src`` at ``dest`` in the tree: world-readable, with its mtime (the stdlib's and numpy's
    bytecode caches are checked against their sources' mtimes; without it every import compiles)."""
    target = tree / dest.lstrip("/")
    _mkdirs(tree, str(Path(dest).parent))
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), target)
        return
    shutil.copyfile(src, target)
    os.chmod(target, 0o755 if st.st_mode & 0o111 else 0o644)
    os.utime(target, ns=(st.st_mtime_ns, st.st_mtime_ns))


def _mkdirs(tree: Path, dest: str) -> None:
    path = tree
    for part in Path(dest).parts[1:]:
        path = path / part
        if not path.is_dir():
            path.mkdir(mode=0o755)
            os.chmod(path, 0o755)


def _is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return stat.S_ISREG(os.fstat(fh.fileno()).st_mode) and fh.read(4) == b"\x7fELF"
    except OSError:
        return False


_LDD_LINE = re.compile(r"^\s*(?:(\S+) => )?(\S+) \(0x[0-9a-f]+\)$")


def _dependencies(elves: list[Path]) -> list[str]:
    """Host paths of every shared library ``elves`` load, transitively (as ldd resolves them:
    with the host's loader cache), the ELF interpreter included."""
    found: set[str] = set()
    for start in range(0, len(elves), 64):
        chunk = [str(e) for e in elves[start : start + 64]]
        out = subprocess.run(
            ["ldd", *chunk], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}
        ).stdout
        for line in out.splitlines():
            if "not found" in line:
                raise RuntimeTreeError(f"a library the runtime needs is missing: {line.strip()}")
            m = _LDD_LINE.match(line)
            if m and m.group(2).startswith("/"):
                found.add(m.group(2))
    return sorted(found)


def _dlopened() -> Iterator[str]:
    for name in DLOPENED:
        for d in library_dirs():
            if os.path.exists(f"{d}/{name}"):
                yield f"{d}/{name}"
                break


def _copy_library(path: str, tree: Path) -> None:
    """A host library at its canonical directory in the tree (its symlinks kept as symlinks)."""
    directory = os.path.realpath(os.path.dirname(path))
    host = f"{directory}/{os.path.basename(path)}"
    if not any(host.startswith(d + "/") for d in map(os.path.realpath, library_dirs())):
        # Found through the host's loader cache (e.g. /usr/local/lib): a run has no cache.
        raise RuntimeTreeError(f"{path} is outside the loader's default directories")
    target = tree / host.lstrip("/")
    if os.path.lexists(target):
        return
    _mkdirs(tree, directory)
    if os.path.islink(host):
        link = os.readlink(host)
        os.symlink(link, target)
        _copy_library(os.path.join(directory, link), tree)
        return
    shutil.copyfile(host, target)
    os.chmod(target, 0o755)


def _top_symlinks() -> list[tuple[str, str]]:
    """Merged-/usr hosts: /lib -> usr/lib, /lib64 -> usr/lib64 (the ELF interpreter's path)."""
    return [(top, os.readlink(top)) for top in ("/lib", "/lib64") if os.path.islink(top)]


def _remove_unused(base: Path, keep: str, root: bool) -> None:
    """Remove the trees no live process holds, and builds that died half-way (called with the
    base's lock held, so no process is taking a tree meanwhile)."""
    keys = {p.name[: -len(".lock")] for p in base.glob("*.lock")}
    keys |= {p.name for p in base.iterdir() if p.is_dir()}
    for key in sorted(keys - {keep}):
        lock, tree = base / f"{key}.lock", base / key
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use
            if root and os.path.ismount(tree):
                _umount(tree)
            shutil.rmtree(tree, ignore_errors=True)
            lock.unlink()
            log.info("removed the unused sandbox runtime tree %s", tree)
        finally:
            os.close(fd)


def _umount(tree: Path) -> None:
    # Detached: runs still using it keep it until they end.
    _check(_libc.umount2(str(tree).encode(), MNT_DETACH), f"umount {tree}")
    with contextlib.suppress(OSError):
        tree.rmdir()


def _size(tree: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(tree):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


@contextlib.contextmanager
def _locked(path: Path, how: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, how)
        yield
    finally:
        os.close(fd)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
