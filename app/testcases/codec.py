"""Arrays in and out of bytes without pickle: ``.npy`` for one array, ``.npz`` for a case.

Uploaded ``.npz`` files are untrusted: each member's header (dtype and shape) is read and
checked against the size cap before its data is decompressed, so a small zip cannot expand into
gigabytes, and object arrays are refused (``allow_pickle=False``).
"""

from __future__ import annotations

import io
import math
import zipfile

import numpy as np

from app.problems.cases import InputValue, InvalidCase, Result

MAX_MEMBERS = 64


def to_npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def from_npy(data: bytes) -> np.ndarray:
    array = np.load(io.BytesIO(data), allow_pickle=False)
    assert isinstance(array, np.ndarray)
    return array


def to_npz(values: dict[str, InputValue]) -> bytes:
    """Integers are stored as 0-d int64 arrays and come back as ``int``; None (an omitted
    optional parameter) is left out, and reads back as absent."""
    buffer = io.BytesIO()
    arrays = {k: np.asarray(v) for k, v in values.items() if v is not None}
    np.savez(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


# The stored expected result of a case that requires an exception: an .npz holding its name.
_RAISES = "__raises__"


def expected_to_bytes(expected: Result | None, raises: str | None) -> bytes:
    """One array as ``.npy``; a tuple of outputs as an ``.npz`` of its parts in order; an
    expected exception as an ``.npz`` holding its type's name."""
    if raises is not None:
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **{_RAISES: np.array(raises)})
        return buffer.getvalue()
    assert expected is not None
    if isinstance(expected, tuple):
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **{f"part{k}": a for k, a in enumerate(expected)})
        return buffer.getvalue()
    return to_npy(expected)


def expected_from_bytes(data: bytes) -> tuple[Result | None, str | None]:
    """(expected result, expected exception) from ``expected_to_bytes`` (our own bytes)."""
    if not data.startswith(b"PK"):
        return from_npy(data), None
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        if _RAISES in archive.files:
            return None, str(archive[_RAISES])
        parts = [archive[f"part{k}"] for k in range(len(archive.files))]
    return tuple(parts), None


def from_npz(data: bytes) -> dict[str, InputValue]:
    """Our own stored bytes (trusted shape, still never unpickled)."""
    out: dict[str, InputValue] = {}
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        for key in archive.files:
            value = archive[key]
            out[key] = int(value) if value.ndim == 0 and value.dtype.kind in "iu" else value
    return out


def read_upload(data: bytes, max_elements: int) -> dict[str, np.ndarray]:
    """Every array of an uploaded ``.npz``, by name. Raises ``InvalidCase`` naming the member as
    ``inputs.<name>`` or ``expected`` (``file`` when the archive itself is unreadable)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise InvalidCase("file", "is not an .npz archive (a zip of .npy files)") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise InvalidCase("file", f"holds {len(members)} members; at most {MAX_MEMBERS}")
        out: dict[str, np.ndarray] = {}
        for member in members:
            if not member.filename.endswith(".npy") or "/" in member.filename:
                raise InvalidCase("file", f"member {member.filename!r} is not a top-level .npy")
            key = member.filename[: -len(".npy")]
            field = key if key.split(".")[0] == "expected" else f"inputs.{key}"
            out[key] = _read_member(archive, member, field, max_elements)
        return out


def _read_member(
    archive: zipfile.ZipFile, member: zipfile.ZipInfo, key: str, max_elements: int
) -> np.ndarray:
    try:
        with archive.open(member) as stream:
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
            else:
                raise InvalidCase(key, f"unsupported .npy format version {version}")
    except InvalidCase:
        raise
    except Exception as exc:  # a corrupt header: name the member, never crash
        raise InvalidCase(key, f"is not a readable .npy array: {exc}") from None
    if dtype.hasobject or dtype.kind not in "biuf":
        raise InvalidCase(key, "holds Python objects; only numeric and boolean arrays are accepted")
    size = math.prod(shape)
    if size > max_elements:
        raise InvalidCase(key, f"has {size} elements; the limit is {max_elements}")
    try:
        with archive.open(member) as stream:
            array = np.lib.format.read_array(stream, allow_pickle=False)
    except Exception as exc:
        raise InvalidCase(key, f"is not a readable .npy array: {exc}") from None
    return np.asarray(array)
