"""The test-case route under memory bombs, on a real server: 1 GiB bodies (declared or chunked,
JSON or multipart), an .npz whose .npy header declares 1 GiB, a zip member that expands to 1 GiB,
and an archive of a million directory entries. Each is a clear 4xx, and the server's peak memory
grows by less than RSS_BOUND."""

from __future__ import annotations

import io
import re
import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from app.problems.cases import InvalidCase
from app.testcases import codec
from app.testcases.codec import MAX_HEADER_BYTES, read_upload
from tests.instructors.conftest import CASES, bearer, case_inputs
from tests.support.bodies import GIB, MIB, peak_rss, reset_peak_rss, send_body
from tests.support.services import AppProcess, app_command, serve

# The 32 MiB upload cap, the upload held once more while it is read, and one request's working
# memory: far from the gigabytes the bombs declare.
RSS_BOUND = 100 * MIB


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppProcess, str, str]]:
    root: Path = tmp_path_factory.mktemp("uploads")
    created = app_command(root / "data", "tokens", "create", "--role", "admin", "--name", "i")
    assert created.returncode == 0, created.stderr
    token = re.findall(r"^tj_\S+$", created.stdout, re.MULTILINE)[0]
    env = {"GRADER_DATA_DIR": str(root / "data"), "GRADER_WORKERS": "1"}
    process, base = serve(env, root / "server.log")
    try:
        yield process, base, token
    finally:
        process.stop()


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("content_type", "chunked", "status", "code"),
    [
        ("application/json", False, 413, "body_too_large"),
        ("application/json", True, 413, "case_too_large"),
        ("multipart/form-data; boundary=b", False, 413, "body_too_large"),
        ("multipart/form-data; boundary=b", True, 411, "length_required"),
    ],
    ids=["json", "json-chunked", "multipart", "multipart-chunked"],
)
def test_a_1_gib_body_is_refused_before_it_is_read(
    server: tuple[AppProcess, str, str], content_type: str, chunked: bool, status: int, code: str
) -> None:
    process, base, token = server
    idle = reset_peak_rss(process.pid)
    answer = send_body(
        base,
        CASES,
        total=GIB,
        chunked=chunked,
        content_type=content_type,
        headers=bearer(token),
    )
    grown = peak_rss(process.pid) - idle
    assert grown < RSS_BOUND, f"the server grew by {grown / MIB:.0f} MiB"
    assert answer.sent < 64 * MIB, f"{answer.sent / MIB:.0f} MiB sent before the answer"
    assert answer.status == status, answer
    assert answer.body is not None and answer.body["error"]["code"] == code  # type: ignore[index]


def _npz_of(path: Path, members: dict[str, Iterator[bytes]]) -> bytes:
    """An .npz (deflated) whose members are written from chunks, never held whole."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, chunks in members.items():
            with archive.open(name, "w", force_zip64=True) as member:
                for chunk in chunks:
                    member.write(chunk)
    return path.read_bytes()


def _header_bomb() -> Iterator[bytes]:
    """A version 2.0 .npy whose header length field says 1 GiB, followed by that many spaces."""
    return _header_of(GIB)


def _expanding_member() -> Iterator[bytes]:
    """A valid header for the 2x8x4 array Q, then 1 GiB of zeros (1 MB once deflated)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (2, 8, 4)}
    )
    yield header.getvalue()
    for _ in range(GIB // MIB):
        yield bytes(MIB)


def _directory_bomb() -> bytes:
    """An archive whose central directory repeats one entry 600,000 times (27 MiB)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("Q.npy", b"")
    data = buffer.getvalue()
    start, end = data.index(b"PK\x01\x02"), data.index(b"PK\x05\x06")
    directory = data[start:end] * 600_000
    record = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, len(directory), start, 0)
    return data[:start] + directory + record


def _upload(base: str, token: str, data: bytes) -> httpx.Response:
    return httpx.post(
        f"{base}{CASES}",
        data={"name": "bomb"},
        files={"file": ("case.npz", data, "application/octet-stream")},
        headers=bearer(token),
        timeout=120,
    )


@pytest.mark.timeout(300)
@pytest.mark.parametrize("bomb", ["header", "expanding-member", "directory"])
def test_an_npz_bomb_is_a_422_without_the_memory_it_declares(
    server: tuple[AppProcess, str, str], tmp_path: Path, bomb: str
) -> None:
    process, base, token = server
    inputs = {k: v for k, v in case_inputs().items() if k != "Q"}
    clean = {f"{k}.npy": iter([_npy(v)]) for k, v in inputs.items()}
    if bomb in ("header", "expanding-member"):
        member = _header_bomb() if bomb == "header" else _expanding_member()
        data = _npz_of(tmp_path / "bomb.npz", {"Q.npy": member, **clean})
        # Both members expand past the upload cap: refused from the zip directory, unread.
        field, message = "file", "the limit is 33554432"
    else:
        data = _directory_bomb()
        field, message = "file", "zip directory entries"
    assert len(data) < 32 * MIB  # under the upload cap: only the codec stands in the way
    idle = reset_peak_rss(process.pid)
    response = _upload(base, token, data)
    grown = peak_rss(process.pid) - idle
    assert grown < RSS_BOUND, f"the server grew by {grown / MIB:.0f} MiB"
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["field"] == field and message in error["message"], error


def _npy(array: object) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def test_a_normal_npz_is_still_stored(server: tuple[AppProcess, str, str], tmp_path: Path) -> None:
    _, base, token = server
    members = {f"{k}.npy": iter([_npy(v)]) for k, v in case_inputs().items()}
    response = _upload(base, token, _npz_of(tmp_path / "case.npz", members))
    assert response.status_code == 201, response.text


def _header_of(length: int) -> Iterator[bytes]:
    """A version 2.0 .npy whose header length field says ``length``, followed by that many
    spaces."""
    yield np.lib.format.MAGIC_PREFIX + bytes([2, 0]) + struct.pack("<I", length)
    for start in range(0, length, MIB):
        yield b" " * min(MIB, length - start)


@pytest.mark.parametrize("declared", [MAX_HEADER_BYTES + 1, GIB], ids=["limit+1", "1GiB"])
def test_an_npy_header_length_is_checked_before_numpy_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: int
) -> None:
    """With the expanded-size check out of the way (a cap of 2 GiB), the header length alone
    stops a header over the limit: 422 naming the member; of the member, only the magic and the
    length field are read, numpy's header parser is never called, and this process does not
    grow by the header."""
    data = _npz_of(tmp_path / "bomb.npz", {"Q.npy": _header_of(declared)})
    read: dict[str, int] = {}
    original_read = zipfile.ZipExtFile.read

    def counting_read(self: zipfile.ZipExtFile, n: int = -1) -> bytes:
        chunk = original_read(self, n)
        name = self.name
        read[name] = read.get(name, 0) + len(chunk)
        return chunk

    parsed: list[int] = []

    def never_parse(*args: object, **kwargs: object) -> object:
        parsed.append(1)
        raise AssertionError("numpy parsed a header over the limit")

    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting_read)
    monkeypatch.setattr(
        codec, "_LENGTH_FIELDS", {v: (f, never_parse) for v, (f, _) in codec._LENGTH_FIELDS.items()}
    )
    Path("/proc/self/clear_refs").write_text("5")
    idle = _self_kib("VmRSS")
    with pytest.raises(InvalidCase) as refused:
        read_upload(data, max_elements=1000, max_bytes=2 * GIB)
    grown = (_self_kib("VmHWM") - idle) * 1024
    assert parsed == []
    # The magic (8 bytes) and the version 2.0 length field (4 bytes): nothing of the header.
    assert read == {"Q.npy": np.lib.format.MAGIC_LEN + 4}, read
    assert refused.value.field == "inputs.Q"
    assert refused.value.message == (
        f"declares a {declared}-byte header; the limit is {MAX_HEADER_BYTES}"
    )
    assert grown < RSS_BOUND, f"grew by {grown / MIB:.0f} MiB"


def _self_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise KeyError(field)
