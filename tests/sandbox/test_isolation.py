"""What the submission can see and call inside the sandbox, checked by trying."""

from __future__ import annotations

import errno
import json

import pytest

from sandbox.protocol import Sandbox
from tests.sandbox.helpers import SYSCALL_ATTACKS, assert_grader_still_works, run

pytestmark = pytest.mark.timeout(60)

DENIED_ERRNOS = {errno.EPERM, errno.ENOSYS}


def test_dangerous_system_calls_are_denied(sandbox: Sandbox) -> None:
    result = run(sandbox, SYSCALL_ATTACKS)
    assert result.status == "ok", result.message
    assert result.cases[0].error is None, result.cases[0].error
    outcome = json.loads(result.stdout)
    allowed = {k: v for k, v in outcome.items() if not k.startswith("allowed")}
    not_denied = {
        k: errno.errorcode.get(v, v) for k, v in allowed.items() if v not in DENIED_ERRNOS
    }
    assert not_denied == {}, f"calls that were not denied: {not_denied}"
    assert outcome["allowed getpid"] == 0
    assert_grader_still_works(sandbox)


VIEW = """
import json, os, socket

def probe(path):
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        return errno_name(exc)

def errno_name(exc):
    import errno
    return errno.errorcode.get(exc.errno, str(exc.errno))

def f(a, n):
    info = {
        "uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(),
        "root": sorted(os.listdir("/")),
        "sys": probe("/sys"), "etc": probe("/etc"), "work": probe("/work"),
        "home": probe(os.path.expanduser("~")),
        "env": sorted(os.environ),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
        "caps": [l for l in open("/proc/self/status").read().splitlines() if l.startswith("Cap")],
        "no_new_privs": [l for l in open("/proc/self/status").read().splitlines()
                         if l.startswith("NoNewPrivs")],
        "seccomp": [l for l in open("/proc/self/status").read().splitlines()
                    if l.startswith("Seccomp:")],
    }
    for path in ("/", "/tmp"):
        try:
            with open(os.path.join(path, "probe"), "w") as fh:
                fh.write("x")
            info["write " + path] = "ok"
        except OSError as exc:
            info["write " + path] = errno_name(exc)
    print(json.dumps(info))
    return a
"""


def test_the_view_from_inside(sandbox: Sandbox) -> None:
    result = run(sandbox, VIEW)
    assert result.status == "ok", result.message
    info = json.loads(result.stdout)
    assert info["uid"] != 0 and info["euid"] != 0 and info["gid"] != 0
    assert "work" not in info["root"] or info["work"] in ("ENOENT", [])
    assert info["sys"] in ("ENOENT", []) or "fs" not in info["sys"]
    assert info["write /"] in ("EROFS", "EACCES")
    assert info["write /tmp"] == "ok"
    # Its own pid namespace: a handful of processes, none of the host's.
    assert len(info["procs"]) <= 8
    assert all(line.split()[1] == "0000000000000000" for line in info["caps"]), info["caps"]
    assert info["no_new_privs"] == ["NoNewPrivs:\t1"]
    assert info["seccomp"] == ["Seccomp:\t2"]
    secretish = [k for k in info["env"] if "TOKEN" in k or "SECRET" in k or "DATABASE" in k]
    assert secretish == []
    assert not any(k.startswith("GRADER_") for k in info["env"])


def test_the_worker_cannot_reach_the_supervisor_s_fds_or_memory(sandbox: Sandbox) -> None:
    code = """
import os

def f(a, n):
    parent = f"/proc/{os.getppid()}"
    try:
        names = [f"fd/{fd}" for fd in os.listdir(parent + "/fd")]
    except OSError:
        names = [f"fd/{fd}" for fd in range(3, 16)]
    report = []
    for name in [*names, "mem", "environ", "maps", "cwd", "root"]:
        try:
            os.close(os.open(f"{parent}/{name}", os.O_RDONLY))
            report.append("OPENED " + name)
        except OSError as exc:
            report.append(f"{name} {exc.strerror}")
    print("\\n".join(report))
    return a
"""
    result = run(sandbox, code)
    assert result.status == "ok", result.message
    assert "OPENED" not in result.stdout, result.stdout
    # Refused, or (the fork server, whose procfs hides what a process may not inspect) absent.
    refused = ("Permission denied", "No such file or directory")
    assert all(line.endswith(refused) for line in result.stdout.splitlines()), result.stdout
