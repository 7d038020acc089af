"""``IdentityCache``: values kept by the identity of the objects they were made from, never
served for other objects (even equal ones, even at a reused id), bounded by count and bytes."""

from __future__ import annotations

from sandbox.identity_cache import IdentityCache


def _cache(max_entries: int = 8, max_bytes: int = 100) -> IdentityCache[bytes]:
    return IdentityCache(max_entries=max_entries, max_bytes=max_bytes, size=len)


def test_made_once_for_the_same_objects_and_again_for_equal_other_ones() -> None:
    cache = _cache()
    a, b = [1], [1]  # equal, not the same
    made = cache.get((a,), None, lambda: b"x" * 10)
    assert cache.get((a,), None, lambda: b"y" * 10) is made
    assert cache.get((b,), None, lambda: b"y" * 10) == b"y" * 10
    assert cache.get((a,), "other extra", lambda: b"z" * 10) == b"z" * 10


def test_the_oldest_goes_first_under_the_byte_bound_and_a_larger_value_is_not_kept() -> None:
    cache = _cache(max_bytes=100)
    owners = [object() for _ in range(4)]
    first = cache.get((owners[0],), None, lambda: b"a" * 40)
    cache.get((owners[1],), None, lambda: b"b" * 40)
    assert cache.held_bytes() == 80
    cache.get((owners[2],), None, lambda: b"c" * 40)
    assert cache.held_bytes() == 80  # the first went
    assert cache.get((owners[0],), None, lambda: b"A" * 40) == b"A" * 40 != first
    cache.get((owners[3],), None, lambda: b"d" * 200)
    assert cache.get((owners[3],), None, lambda: b"D" * 200) == b"D" * 200  # never held
    assert cache.held_bytes() <= 100


def test_bounded_by_count() -> None:
    cache = _cache(max_entries=3, max_bytes=10**6)
    owners = [object() for _ in range(5)]
    for owner in owners:
        cache.get((owner,), None, lambda: b"v")
    assert cache.held_bytes() == 3
    assert cache.get((owners[0],), None, lambda: b"new") == b"new"


def test_an_entry_holds_its_objects_so_their_ids_are_not_reused() -> None:
    cache = _cache()
    made = cache.get((object(),), None, lambda: b"kept")
    # The temporary object lives on in the entry: a new object cannot take its id and be
    # served ``made``.
    for _ in range(100):
        assert cache.get((object(),), None, lambda: b"fresh") == b"fresh"
    assert made == b"kept"
