"""The routing spec of spread entities (docs/spread.md), in Python.

Every function here mirrors one in the Rust crate ``hotpath-route``
(``route/`` in the repository), which the module and the Rust client use;
``docs/spread-vectors.json`` holds test vectors that both implementations
check. Standard library only: scripts/lua-gen.py loads this file by itself
to put the slot-tag table into the Lua twins.
"""
from __future__ import annotations

import re
from typing import List, Optional, Tuple, Union

SLOTS = 16384
MAX_SHARDS = 1024
TAG_ALPHABET = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

Bytes = Union[bytes, str, int]


def _b(value: Bytes) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, int):
        return str(value).encode()
    return value.encode()


def _crc_table() -> List[int]:
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
        table.append(c)
    return table


_CRC = _crc_table()


def crc16(data: Bytes) -> int:
    """CRC16-XMODEM (poly 0x1021, init 0), as Redis Cluster uses."""
    c = 0
    for x in _b(data):
        c = ((c << 8) & 0xFFFF) ^ _CRC[((c >> 8) ^ x) & 0xFF]
    return c


def hashed_part(key: Bytes) -> bytes:
    """The bytes of ``key`` Redis Cluster hashes: the hash tag between the
    first ``{`` and the next ``}`` when it is not empty, else the key."""
    k = _b(key)
    o = k.find(b"{")
    if o >= 0:
        c = k.find(b"}", o + 1)
        if c > o + 1:
            return k[o + 1:c]
    return k


def key_slot(key: Bytes) -> int:
    """The cluster slot of ``key`` (``CLUSTER KEYSLOT``)."""
    return crc16(hashed_part(key)) & 0x3FFF


def _compute_slot_tags() -> List[str]:
    """The slot-tag table, computed as :func:`generate_slot_tags` defines
    it but faster (about 20 ms): the strings of each length in the same
    order, each one's CRC16 one table step from its prefix's."""
    alphabet = TAG_ALPHABET.decode()
    crc_table = _CRC
    table = [""] * SLOTS
    missing = SLOTS
    level = [("", 0)]  # the strings of the previous length, with their CRC16s
    while missing:
        for prefix, crc in level:
            low, high = (crc << 8) & 0xFFFF, crc >> 8
            for ch, code in zip(alphabet, TAG_ALPHABET):
                slot = (low ^ crc_table[high ^ code]) & 0x3FFF
                if not table[slot]:
                    table[slot] = prefix + ch
                    missing -= 1
        if missing:
            level = [(p + ch, ((c << 8) & 0xFFFF) ^ crc_table[(c >> 8) ^ code])
                     for p, c in level for ch, code in zip(alphabet, TAG_ALPHABET)]
    return table


_SLOT_TAGS: Optional[List[str]] = None


def slot_tags() -> List[str]:
    """The slot-tag table, slot 0 first: computed on the first call (so a
    client that never routes a spread entity never pays it), then kept.
    Two threads that both make the first call both compute it; each gets
    a whole table, and the last one is kept."""
    global _SLOT_TAGS
    tags = _SLOT_TAGS
    if tags is None:
        tags = _SLOT_TAGS = _compute_slot_tags()
    return tags


def __getattr__(name: str) -> List[str]:
    # ``routing.SLOT_TAGS``, the table's name before it was computed here.
    if name == "SLOT_TAGS":
        return slot_tags()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def slot_tag(slot: int) -> str:
    """The short tag whose key slot is ``slot``."""
    return slot_tags()[slot]


def valid_shards(n: int) -> bool:
    return isinstance(n, int) and 1 <= n <= MAX_SHARDS


def shard_slot(base: Bytes, n: int, i: int) -> int:
    """Slot of shard ``i`` of ``n``: ``(key_slot(base) + i*16384 // n) % 16384``."""
    if not (valid_shards(n) and 0 <= i < n):
        raise ValueError(f"shard {i} of {n}")
    return (key_slot(base) + i * SLOTS // n) % SLOTS


def shard_key(base: Bytes, n: int, i: int) -> bytes:
    """The shard key ``{<tag>}<base>`` of shard ``i`` of ``n``."""
    return b"{" + slot_tag(shard_slot(base, n, i)).encode() + b"}" + _b(base)


def shard_keys(base: Bytes, n: int) -> List[bytes]:
    return [shard_key(base, n, i) for i in range(n)]


_INT = re.compile(rb"-?(0|[1-9][0-9]*)\Z")


def parse_int_id(user: Bytes) -> Optional[int]:
    """The id as an integer when Redis would read it as one (optional ``-``,
    no leading zero, no ``-0``, signed 64-bit range), else ``None``."""
    b = _b(user)
    if not _INT.match(b) or b == b"-0":
        return None
    v = int(b)
    if not (-(2**63) <= v < 2**63):
        return None
    return v


def fnv1a32(data: Bytes) -> int:
    h = 2166136261
    for x in _b(data):
        h = ((h ^ x) * 16777619) & 0xFFFFFFFF
    return h


def shard_of(user: Bytes, n: int) -> int:
    """The shard of an id: ``id mod n`` (never negative) for an integer id,
    else ``fnv1a32(id) mod n``."""
    if not valid_shards(n):
        raise ValueError(f"shard count {n}")
    v = parse_int_id(user)
    if v is not None:
        return v % n  # Python's % is already the Euclidean remainder here
    return fnv1a32(user) % n


def like_slot_of(user_id: int, n: int) -> Tuple[int, int]:
    """``(shard, stored)`` of a LIKE user id: ``(id % n, id // n)``."""
    if user_id < 0:
        raise ValueError("like ids are not negative")
    return user_id % n, user_id // n


def like_id_of(shard: int, stored: int, n: int) -> int:
    return stored * n + shard


def split_shard_key(key: Bytes) -> Optional[Tuple[str, bytes]]:
    """``(tag, base)`` of a shard key ``{<tag>}<base>`` whose tag is the
    table's tag of its own slot, else ``None``. The base is never empty:
    a bare hash tag (``{bm}``) is not a shard key."""
    k = _b(key)
    if not k.startswith(b"{"):
        return None
    c = k.find(b"}", 1)
    if c <= 1 or c == len(k) - 1:
        return None
    tag = k[1:c]
    try:
        t = tag.decode("ascii")
    except UnicodeDecodeError:
        return None
    if slot_tag(key_slot(tag)) != t:
        return None
    return t, k[c + 1:]


def shard_index(key: Bytes, n: int) -> Optional[int]:
    """``i`` when ``key`` is the key of shard ``i`` of ``n`` of its base,
    else ``None``."""
    if not valid_shards(n):
        return None
    split = split_shard_key(key)
    if split is None:
        return None
    tag, base = split
    slot = key_slot(tag)
    offset = (slot - key_slot(base)) % SLOTS
    i = -(-offset * n // SLOTS)  # ceil
    if i < n and shard_slot(base, n, i) == slot:
        return i
    return None


def generate_slot_tags() -> List[str]:
    """The slot-tag table by its definition, plainly: for every slot, the
    first string over ``TAG_ALPHABET``, shortest first and then in the
    alphabet's order, whose key slot is that slot (slow: ~1 s; tests check
    :func:`slot_tags` against it)."""
    table: List[str] = [""] * SLOTS
    missing = SLOTS
    length = 1
    import itertools
    while missing:
        for t in itertools.product(TAG_ALPHABET, repeat=length):
            tag = bytes(t)
            s = key_slot(tag)
            if not table[s]:
                table[s] = tag.decode()
                missing -= 1
        length += 1
    return table


#: The public names (``SLOT_TAGS`` too, computed on first use).
__all__ = ["SLOTS", "MAX_SHARDS", "TAG_ALPHABET", "Bytes", "crc16", "hashed_part", "key_slot",
           "slot_tags", "slot_tag", "valid_shards", "shard_slot", "shard_key", "shard_keys",
           "parse_int_id", "fnv1a32", "shard_of", "like_slot_of", "like_id_of", "split_shard_key",
           "shard_index", "generate_slot_tags"]
