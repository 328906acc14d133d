"""The routing spec of spread entities (docs/spread.md), in Python.

Every function here mirrors one in the module's ``src/spread/route.rs``;
``docs/spread-vectors.json`` holds test vectors that both implementations
check.
"""
from __future__ import annotations

import pkgutil
import re
from typing import List, Tuple, Union

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


def _load_tags() -> List[str]:
    # pkgutil reads package data from a directory, a wheel or a zip alike.
    data = pkgutil.get_data(__name__.rpartition(".")[0] or "hotpath", "slot_tags.txt")
    if data is None:
        raise RuntimeError("hotpath: slot_tags.txt is missing from the package")
    tags = data.decode("ascii").split()
    if len(tags) != SLOTS:
        raise RuntimeError("hotpath: slot_tags.txt must hold 16384 tags")
    return tags


SLOT_TAGS: List[str] = _load_tags()


def slot_tag(slot: int) -> str:
    """The short tag whose key slot is ``slot``."""
    return SLOT_TAGS[slot]


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


def parse_int_id(user: Bytes):
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


def split_shard_key(key: Bytes):
    """``(tag, base)`` of a shard key ``{<tag>}<base>`` whose tag is the
    table's tag of its own slot, else ``None``."""
    k = _b(key)
    if not k.startswith(b"{"):
        return None
    c = k.find(b"}", 1)
    if c <= 1:
        return None
    tag = k[1:c]
    try:
        t = tag.decode("ascii")
    except UnicodeDecodeError:
        return None
    if slot_tag(key_slot(tag)) != t:
        return None
    return t, k[c + 1:]


def shard_index(key: Bytes, n: int):
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
    """Recomputes the slot-tag table from its definition (slow: ~1 s)."""
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
