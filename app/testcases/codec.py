"""Arrays in and out of bytes without pickle: ``.npy`` for one array, ``.npz`` for a case.

Uploaded ``.npz`` files are untrusted: the archive's expanded size, then each member's header
(its length, dtype and shape) are read and checked against the caps before any data is
decompressed, so a small zip cannot expand into gigabytes, and object arrays are refused
(never unpickled).
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from app.problems.cases import InputValue, InvalidCase, Result

MAX_MEMBERS = 64
# numpy's own ceiling for the header of a trusted file; its writers never need more than a few
# hundred bytes.
MAX_HEADER_BYTES = 64 * 1024
# A central directory entry's signature. Array data may hold it by chance (about once per
# 4 GB of random bytes): the allowance is far above MAX_MEMBERS.
_DIRECTORY_ENTRY = b"PK\x01\x02"
MAX_DIRECTORY_ENTRIES = 4096


def to_npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
    return buffer.getvalue()


def from_npy(data: bytes) -> np.ndarray:
    array = np.load(io.BytesIO(data), allow_pickle=False)
    assert isinstance(array, np.ndarray)
    return array


# A float parameter's member name: a 0-d float64 array alone could be an array parameter with
# no axes (a variadic group of none), so floats are told apart by name, not by shape.
_FLOAT = "__float__."


def to_npz(values: dict[str, InputValue]) -> bytes:
    """Integers are stored as 0-d int64 arrays and come back as ``int``, floats under a marked
    name and come back as ``float``; None (an omitted optional parameter) is left out, and
    reads back as absent."""
    buffer = io.BytesIO()
    arrays = {
        (_FLOAT + k if isinstance(v, float) else k): np.asarray(v)
        for k, v in values.items()
        if v is not None
    }
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
            if key.startswith(_FLOAT):
                out[key.removeprefix(_FLOAT)] = float(value)
            else:
                out[key] = int(value) if value.ndim == 0 and value.dtype.kind in "iu" else value
    return out


def read_upload(data: bytes, max_elements: int, max_bytes: int) -> dict[str, np.ndarray]:
    """Every array of an uploaded ``.npz``, by name. Raises ``InvalidCase`` naming the member as
    ``inputs.<name>`` or ``expected`` (``file`` when the archive itself is unreadable).

    Nothing is allocated from what the upload declares before it is checked: the number of
    directory entries, each member's expanded size (together at most ``max_bytes``, what an
    uncompressed upload could hold), each header's length, and each array's size against the
    bytes its member holds."""
    entries = data.count(_DIRECTORY_ENTRY)
    if entries > MAX_DIRECTORY_ENTRIES:
        # zipfile builds an object per directory entry before anything can be counted: 27 MiB
        # of entries took 225 MiB and 7 s of CPU.
        raise InvalidCase(
            "file", f"holds {entries} zip directory entries; an .npz holds at most {MAX_MEMBERS}"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError):
        raise InvalidCase("file", "is not an .npz archive (a zip of .npy files)") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise InvalidCase("file", f"holds {len(members)} members; at most {MAX_MEMBERS}")
        expanded = sum(member.file_size for member in members)
        if expanded > max_bytes:
            raise InvalidCase("file", f"expands to {expanded} bytes; the limit is {max_bytes}")
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
    """One member's array, reading no more of it than its checked header says it holds."""
    try:
        with archive.open(member) as stream:
            header = _read_header(stream, key, member.file_size)
            dtype = header.dtype
            if dtype.hasobject or dtype.kind not in "biuf":
                raise InvalidCase(
                    key, "holds Python objects; only numeric and boolean arrays are accepted"
                )
            if any(n < 0 for n in header.shape):
                raise InvalidCase(key, f"has a negative dimension in its shape {header.shape}")
            size = math.prod(header.shape)
            if size > max_elements:
                raise InvalidCase(key, f"has {size} elements; the limit is {max_elements}")
            nbytes = size * dtype.itemsize
            present = member.file_size - header.length
            if nbytes != present:
                raise InvalidCase(
                    key, f"declares {nbytes} bytes of data but holds {present} after its header"
                )
            raw = stream.read(nbytes)
    except InvalidCase:
        raise
    except Exception as exc:  # a corrupt member: name it, never crash
        raise InvalidCase(key, f"is not a readable .npy array: {exc}") from None
    if len(raw) != nbytes:
        raise InvalidCase(key, f"is truncated: {len(raw)} of {nbytes} bytes of data")
    flat = np.frombuffer(raw, dtype=dtype)
    if header.fortran_order:
        return flat.reshape(header.shape, order="F").copy(order="K")
    return flat.reshape(header.shape).copy()


@dataclass(frozen=True)
class _Header:
    shape: tuple[int, ...]
    fortran_order: bool
    dtype: np.dtype[Any]
    length: int  # bytes from the start of the member to its data


def _read_header(stream: IO[bytes], key: str, member_size: int) -> _Header:
    """The magic, version and header length read and bounded here: numpy reads as many bytes as
    the length field says before its own check (a 4.7 MB upload declaring a 1 GiB header took
    the server to 2.2 GB)."""
    magic = stream.read(np.lib.format.MAGIC_LEN)
    if len(magic) != np.lib.format.MAGIC_LEN or not magic.startswith(np.lib.format.MAGIC_PREFIX):
        raise InvalidCase(key, "is not a .npy array (no NUMPY magic)")
    version = (magic[-2], magic[-1])
    if version not in _LENGTH_FIELDS:
        raise InvalidCase(key, f"unsupported .npy format version {version}")
    length_format, parse = _LENGTH_FIELDS[version]
    length_field = stream.read(length_format.size)
    if len(length_field) != length_format.size:
        raise InvalidCase(key, "is truncated inside its header")
    (header_length,) = length_format.unpack(length_field)
    if header_length > MAX_HEADER_BYTES:
        raise InvalidCase(
            key, f"declares a {header_length}-byte header; the limit is {MAX_HEADER_BYTES}"
        )
    data_offset = len(magic) + len(length_field) + header_length
    if data_offset > member_size:
        raise InvalidCase(key, "is truncated inside its header")
    text = stream.read(header_length)
    if len(text) != header_length:
        raise InvalidCase(key, "is truncated inside its header")
    shape, fortran_order, dtype = parse(
        io.BytesIO(length_field + text), max_header_size=MAX_HEADER_BYTES
    )
    return _Header(tuple(shape), bool(fortran_order), dtype, data_offset)


_LENGTH_FIELDS: dict[tuple[int, int], tuple[struct.Struct, Callable[..., Any]]] = {
    (1, 0): (struct.Struct("<H"), np.lib.format.read_array_header_1_0),
    (2, 0): (struct.Struct("<I"), np.lib.format.read_array_header_2_0),
}
