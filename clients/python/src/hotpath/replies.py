"""Parsed replies of every hotpath command: dataclasses instead of the
flat arrays the server sends (docs/<family>.md describe the raw forms)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Dict, List, Optional, Sequence, Tuple


class ReplyError(ValueError):
    """The server sent a reply this client does not understand (a newer
    module, or a hand-edited key)."""


def text(v: Any) -> str:
    """A bulk string as text (UTF-8; bytes that are not UTF-8 survive as
    surrogates, so ``text(v).encode('utf-8', 'surrogateescape')`` is exact)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    raise ReplyError(f"expected a string, got {v!r}")


def integer(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, (bytes, str)):
        try:
            return int(v)
        except ValueError:
            pass
    raise ReplyError(f"expected an integer, got {v!r}")


def boolean(v: Any) -> bool:
    """An integer reply read as a flag (0: False)."""
    return bool(integer(v))


def ok(v: Any) -> bool:
    if v is True or v in (b"OK", "OK"):
        return True
    raise ReplyError(f"expected OK, got {v!r}")


def array(v: Any, n: Optional[int] = None) -> List[Any]:
    if not isinstance(v, (list, tuple)):
        raise ReplyError(f"expected an array, got {v!r}")
    if n is not None and len(v) != n:
        raise ReplyError(f"expected {n} elements, got {v!r}")
    return list(v)


def pairs(v: Any) -> List[Tuple[Any, Any]]:
    # A RESP3 connection (redis-py's default from 8.0) gets maps where RESP2
    # gets ``[field, value, …]``.
    if isinstance(v, dict):
        return list(v.items())
    a = array(v)
    if len(a) % 2:
        raise ReplyError(f"expected pairs, got {v!r}")
    return list(zip(a[0::2], a[1::2]))


def rows(v: Any, width: int) -> List[Tuple[Any, ...]]:
    """A list reply of ``width``-field rows: RESP2 sends it flat
    (``[a1, b1, a2, b2, …]``), RESP3 as an array of rows (``[[a1, b1], …]``,
    the way ``ZRANGE … WITHSCORES`` answers)."""
    a = array(v)
    if a and isinstance(a[0], (list, tuple)):
        return [tuple(array(r, width)) for r in a]
    if len(a) % width:
        raise ReplyError(f"expected rows of {width}, got {v!r}")
    return [tuple(a[i:i + width]) for i in range(0, len(a), width)]


def fields(v: Any) -> Dict[str, Any]:
    """A map reply ``[field, value, …]`` (or a RESP3 map) as a dict keyed by
    field name."""
    return {text(k): val for k, val in pairs(v)}


def record(v: Any, names: Sequence[str]) -> List[Any]:
    """A record reply: the positional array of RESP2, or the RESP3 map of
    the same fields (``names``, in the array's order)."""
    if isinstance(v, dict):
        f = fields(v)
        missing = [n for n in names if n not in f]
        if missing:
            raise ReplyError(f"fields {missing} missing from {v!r}")
        return [f[n] for n in names]
    return array(v, len(names))


# ---- POLL -------------------------------------------------------------

@dataclass(frozen=True)
class PollEntry:
    candidate: str
    votes: int


@dataclass(frozen=True)
class PollRank:
    rank: int
    votes: int


@dataclass(frozen=True)
class PollInfo:
    mode: str
    maxvotes: int
    start: int
    end: int
    ballots: int
    votes: int


@dataclass(frozen=True)
class PollSync:
    """A frozen write-back snapshot: apply ``deltas`` then ``syncack(epoch)``."""
    epoch: int
    deltas: List[PollEntry]


def poll_top(v: Any) -> List[PollEntry]:
    return [PollEntry(text(c), integer(n)) for c, n in rows(v, 2)]


def poll_rank(v: Any) -> Optional[PollRank]:
    if v is None:
        return None
    r, n = array(v, 2)
    return PollRank(integer(r), integer(n))


def poll_info(v: Any) -> Optional[PollInfo]:
    f = fields(v)
    if not f:
        return None
    return PollInfo(text(f["mode"]), integer(f["maxvotes"]), integer(f["start"]),
                    integer(f["end"]), integer(f["ballots"]), integer(f["votes"]))


def poll_sync(v: Any) -> PollSync:
    a = array(v)
    if not a:
        raise ReplyError("empty POLL.SYNC reply")
    return PollSync(integer(a[0]), poll_top(a[1:]))


# ---- RANK -------------------------------------------------------------

@dataclass(frozen=True)
class RankMember:
    member: str
    points: int


@dataclass(frozen=True)
class RankPlace:
    rank: int
    member: str
    points: int


@dataclass(frozen=True)
class RankEntry:
    points: int
    rank: int
    #: When the points were reached (unix ms, rounded down to the board's
    #: unit); None on a TIEBREAK NONE board.
    achieved_ms: Optional[int]


def rank_top(v: Any) -> List[RankMember]:
    return [RankMember(text(m), integer(p)) for m, p in rows(v, 2)]


def rank_get(v: Any) -> Optional[RankEntry]:
    if v is None:
        return None
    p, r, t = record(v, ("points", "rank", "achieved_ms"))
    return RankEntry(integer(p), integer(r), None if t is None else integer(t))


def rank_around(v: Any) -> Optional[List[RankPlace]]:
    if v is None:
        return None
    return [RankPlace(integer(r), text(m), integer(p)) for r, m, p in rows(v, 3)]


# ---- LIKE -------------------------------------------------------------

@dataclass(frozen=True)
class LikeChange:
    """``changed``: the call changed the like (TOGGLE: ``liked`` is the state
    after the call); ``count``: the post's exact like count."""
    changed: bool
    count: int


@dataclass(frozen=True)
class LikeToggle:
    liked: bool
    count: int


@dataclass(frozen=True)
class Liker:
    user: int
    at_ms: int


@dataclass(frozen=True)
class LikeInfo:
    encoding: str
    count: int
    bytes: int


@dataclass(frozen=True)
class ShardLikeChange:
    """A write on one shard of a spread post: ``changed`` as the single-slot
    command answers it (TOGGLE: the user likes the post after the call),
    the ``shard`` written and that shard's count."""
    changed: bool
    shard: int
    shard_count: int


@dataclass(frozen=True)
class SpreadLikeInfo:
    shards: int
    count: int
    bytes: int
    per_shard: List[LikeInfo]


def like_change(v: Any) -> LikeChange:
    c, n = array(v, 2)
    return LikeChange(bool(integer(c)), integer(n))


def like_toggle(v: Any) -> LikeToggle:
    c, n = array(v, 2)
    return LikeToggle(bool(integer(c)), integer(n))


def like_recent(v: Any) -> List[Liker]:
    return [Liker(integer(u), integer(t)) for u, t in pairs(v)]


def like_info(v: Any) -> LikeInfo:
    f = fields(v)
    return LikeInfo(text(f["encoding"]), integer(f["count"]), integer(f["bytes"]))


# ---- REDPACKET --------------------------------------------------------

@dataclass(frozen=True)
class Grab:
    """``status``: OK, ALREADY, EMPTY, CLOSED or NOSUCH; ``cents`` won (0
    unless OK or ALREADY)."""
    status: str
    cents: int

    @property
    def won(self) -> bool:
        return self.status in ("OK", "ALREADY")


@dataclass(frozen=True)
class PacketInfo:
    total: int
    count: int
    left_cents: int
    left_count: int
    state: str
    expires: int


def grab(v: Any) -> Grab:
    s, c = array(v, 2)
    return Grab(text(s), integer(c))


def packet_info(v: Any) -> Optional[PacketInfo]:
    f = fields(v)
    if not f:
        return None
    return PacketInfo(integer(f["total"]), integer(f["count"]), integer(f["left_cents"]),
                      integer(f["left_count"]), text(f["state"]), integer(f["expires"]))


def grabbed(v: Any) -> Dict[str, int]:
    return {text(u): integer(c) for u, c in pairs(v)}


# ---- LUCKYBAG ---------------------------------------------------------

@dataclass(frozen=True)
class Join:
    new: bool
    pooled: bool
    participants: int


@dataclass(frozen=True)
class Winner:
    user: str
    #: The score as the server wrote it (17 significant digits, exact).
    score_text: str

    @property
    def score(self) -> float:
        return float(self.score_text)


@dataclass(frozen=True)
class BagInfo:
    state: str
    participants: int
    pooled: int
    winners: int
    shards: int


@dataclass(frozen=True)
class ShardJoin:
    """LUCKYBAG.JOIN on one shard of a spread bag: ``new`` and ``pooled`` as
    the single-slot command answers them, the shard and its participants."""
    new: bool
    pooled: bool
    shard: int
    shard_participants: int


@dataclass(frozen=True)
class SpreadBagInfo:
    """LUCKYBAG.INFO over a spread bag; ``state`` is the bag's draw:
    ``open``, ``drawing`` (a draw has started) or ``drawn``."""
    state: str
    participants: int
    pooled: int
    winners: int
    shards: int
    per_shard: List[BagInfo]


def join(v: Any) -> Join:
    n, p, c = array(v, 3)
    return Join(bool(integer(n)), bool(integer(p)), integer(c))


def winners(v: Any) -> List[Winner]:
    return [Winner(text(u), text(s)) for u, s in pairs(v)]


def bag_info(v: Any) -> Optional[BagInfo]:
    f = fields(v)
    if not f:
        return None
    return BagInfo(text(f["state"]), integer(f["participants"]), integer(f["pooled"]),
                   integer(f["winners"]), integer(f["shards"]))


# ---- RATE -------------------------------------------------------------

@dataclass(frozen=True)
class RateResult:
    """``retry_after_ms`` is -1 when allowed; ``reset_after_ms`` is the time
    until the limiter is full again."""
    allowed: bool
    limit: int
    remaining: int
    retry_after_ms: int
    reset_after_ms: int


@dataclass(frozen=True)
class Throttle:
    """redis-cell's CL.THROTTLE reply, in seconds."""
    limited: bool
    limit: int
    remaining: int
    retry_after_s: int
    reset_after_s: int


def rate(v: Any) -> RateResult:
    names = ("allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms")
    a, l, r, ra, rs = (integer(x) for x in record(v, names))
    return RateResult(bool(a), l, r, ra, rs)


def throttle(v: Any) -> Throttle:
    a, l, r, ra, rs = (integer(x) for x in array(v, 5))
    return Throttle(bool(a), l, r, ra, rs)


# ---- LOCK -------------------------------------------------------------

@dataclass(frozen=True)
class LockHolder:
    """A live hold of LOCK.INFO: its fencing token, reentrance count and the
    ms left in its lease."""
    owner: str
    token: int
    count: int
    ttl_ms: int


def token(v: Any) -> Optional[int]:
    """LOCK.ACQUIRE: the fencing token, or None when the lock is busy."""
    return None if v is None else integer(v)


def lock_info(v: Any) -> List[LockHolder]:
    # RESP3: {owner: {token, count, ttl_ms}}; RESP2: [owner, token, count,
    # ttl_ms, …]. Both by token.
    if isinstance(v, dict):
        out = []
        for owner, rec in v.items():
            t, c, ttl = record(rec, ("token", "count", "ttl_ms"))
            out.append(LockHolder(text(owner), integer(t), integer(c), integer(ttl)))
        return out
    return [LockHolder(text(o), integer(t), integer(c), integer(ttl))
            for o, t, c, ttl in groups(v, 4)]


# ---- IDEM -------------------------------------------------------------

def raw(v: Any) -> bytes:
    """A bulk string as the bytes stored (a result is any bytes)."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "surrogateescape")
    raise ReplyError(f"expected a string, got {v!r}")


@dataclass(frozen=True)
class IdemBegin:
    """IDEM.BEGIN: ``status`` is NEW (``fence`` set: do the work, then
    COMPLETE with it), RUNNING (``left_ms`` set: the original is in
    progress, the IETF draft's 409), DONE (``result`` set: reply it) or
    MISMATCH (the key was used for another request, the draft's 422)."""
    status: str
    fence: Optional[int] = None
    left_ms: Optional[int] = None
    result: Optional[bytes] = None

    @property
    def new(self) -> bool:
        return self.status == "NEW"

    @property
    def running(self) -> bool:
        return self.status == "RUNNING"

    @property
    def done(self) -> bool:
        return self.status == "DONE"

    @property
    def mismatch(self) -> bool:
        return self.status == "MISMATCH"


@dataclass(frozen=True)
class IdemRecord:
    """IDEM.GET: ``state`` running, ended (lease over, not taken over),
    done or aborted; ``lease_ms`` left (0 unless running); ``result`` only
    when done."""
    state: str
    fingerprint: str
    fence: int
    lease_ms: int
    result: Optional[bytes]


def idem_begin(v: Any) -> IdemBegin:
    status, value = array(v, 2)
    s = text(status)
    if s == "NEW":
        return IdemBegin(s, fence=integer(value))
    if s == "RUNNING":
        return IdemBegin(s, left_ms=integer(value))
    if s == "DONE":
        return IdemBegin(s, result=raw(value))
    if s == "MISMATCH":
        return IdemBegin(s)
    raise ReplyError(f"unknown IDEM.BEGIN status {v!r}")


def idem_record(v: Any) -> Optional[IdemRecord]:
    if v is None:
        return None
    st, fp, fence, left, result = record(
        v, ("state", "fingerprint", "fence", "lease_ms", "result"))
    return IdemRecord(text(st), text(fp), integer(fence), integer(left),
                      None if result is None else raw(result))


# ---- DELAYQ -----------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """A delivery of DELAYQ.POLL: ack, nack or extend it with ``receipt``."""
    id: str
    payload: str
    attempt: int
    receipt: int


@dataclass(frozen=True)
class DeadLetter:
    id: str
    payload: str
    attempts: int
    dead_at_ms: int


@dataclass(frozen=True)
class ScheduledJob:
    """A job in line, from DELAYQ.PEEK: ``at_ms`` is its due time, or its
    lease end while ``leased``."""
    id: str
    payload: str
    attempts: int
    at_ms: int
    leased: bool


@dataclass(frozen=True)
class QueueInfo:
    """``jobs``: records kept (dead letters included); ``ready``: jobs that
    can be taken now; ``scheduled``: waiting for their time or leased;
    ``dead``: dead letters."""
    jobs: int
    ready: int
    scheduled: int
    dead: int


class Nack(IntEnum):
    """DELAYQ.NACK: a stale receipt, back in line, or to the dead letters."""
    STALE = 0
    REQUEUED = 1
    DEAD = 2


def jobs(v: Any) -> List[Job]:
    return [Job(text(i), text(p), integer(a), integer(r)) for i, p, a, r in groups(v, 4)]


def dead_letters(v: Any) -> List[DeadLetter]:
    return [DeadLetter(text(i), text(p), integer(a), integer(t)) for i, p, a, t in groups(v, 4)]


def scheduled_jobs(v: Any) -> List[ScheduledJob]:
    return [ScheduledJob(text(i), text(p), integer(a), integer(t), integer(l) == 1)
            for i, p, a, t, l in groups(v, 5)]


def queue_info(v: Any) -> QueueInfo:
    f = fields(v)
    return QueueInfo(integer(f["jobs"]), integer(f["ready"]), integer(f["scheduled"]),
                     integer(f["dead"]))


def nack(v: Any) -> Nack:
    try:
        return Nack(integer(v))
    except ValueError:
        raise ReplyError(f"DELAYQ.NACK: {v!r}") from None


def groups(v: Any, n: int) -> List[Tuple[Any, ...]]:
    """A flat array of ``n``-element groups (``[id, payload, attempt,
    receipt, …]``)."""
    a = array(v)
    if len(a) % n:
        raise ReplyError(f"expected groups of {n}, got {v!r}")
    return [tuple(a[i:i + n]) for i in range(0, len(a), n)]


def ints(v: Any) -> List[int]:
    return [integer(x) for x in array(v)]


def texts(v: Any) -> List[str]:
    return [text(x) for x in array(v)]


def flags(v: Any) -> List[bool]:
    return [bool(integer(x)) for x in array(v)]


@dataclass
class Reservation:
    """STOCK.RESERVE: ``status`` is ``"OK"``, ``"SOLDOUT"`` or ``"LIMIT"``;
    ``left`` the units available after it (OK) or now (refused);
    ``lease_end`` the instant (unix ms) the reservation's lease ends, 0 when
    refused. The same order id gets the same reply again."""
    status: str
    left: int
    lease_end: int

    @property
    def ok(self) -> bool:
        return self.status == "OK"


def reservation(v: Any) -> Reservation:
    a = array(v, 3)
    status = text(a[0])
    if status not in ("OK", "SOLDOUT", "LIMIT"):
        raise ReplyError(f"STOCK.RESERVE: {v!r}")
    return Reservation(status, integer(a[1]), integer(a[2]))


@dataclass
class StockInfo:
    """STOCK.INFO: ``available + reserved + sold == total`` (a lapsed lease
    not yet returned counts as reserved); ``limit`` per user (0: none),
    ``lease_ms`` and the ``orders`` recorded."""
    total: int
    available: int
    reserved: int
    sold: int
    limit: int
    lease_ms: int
    orders: int


def stock_info(v: Any) -> Optional[StockInfo]:
    """None for an unknown stock (an empty reply)."""
    f = fields(v)
    if not f:
        return None
    return StockInfo(*(integer(f[n]) for n in
                       ("total", "available", "reserved", "sold", "limit", "lease_ms", "orders")))


@dataclass
class StockAudit:
    """One STOCK.AUDIT step: the ``cursor`` to pass next ("0": the walk is
    over), the orders ``checked`` and the ``problems`` found (none: the
    stock is consistent)."""
    cursor: str
    checked: int
    problems: List[str]


def stock_audit(v: Any) -> StockAudit:
    a = array(v)
    if len(a) < 2:
        raise ReplyError(f"STOCK.AUDIT: {v!r}")
    return StockAudit(text(a[0]), integer(a[1]), [text(x) for x in a[2:]])


#: The public names: the reply types (the parsers are the client's own).
__all__ = ["ReplyError", "PollEntry", "PollRank", "PollInfo", "PollSync", "RankMember",
           "RankPlace", "RankEntry", "LikeChange", "LikeToggle", "Liker", "LikeInfo",
           "SpreadLikeInfo", "ShardLikeChange", "Grab", "PacketInfo", "Join", "Winner", "BagInfo",
           "ShardJoin", "SpreadBagInfo", "RateResult", "Throttle", "LockHolder", "IdemBegin",
           "IdemRecord", "Job", "DeadLetter", "ScheduledJob", "QueueInfo", "Nack", "Reservation",
           "StockInfo", "StockAudit"]
