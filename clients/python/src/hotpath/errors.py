"""Exception classes for hotpath's error replies, derived from their texts
(docs/reference/: every error a command answers is listed there).

Every class is a ``redis.exceptions.ResponseError``, so code that catches
``ResponseError`` keeps working; catch a narrower class to react to one
case::

    try:
        hp.poll("poll:{42}").vote("user:2", "bob")
    except hotpath.errors.VoteLimitReached:
        ...                       # the voter used every vote
    except hotpath.errors.PollError as e:
        ...                       # any other POLL error, e.g. CorruptData

An error of family ``F`` (``ERR poll: …``) is an instance of the family's
class (:class:`PollError`, …, all :class:`HotPathError`) and, where its
text says so, of one *kind* class as well: :class:`CorruptData`,
:class:`IntegerOverflow`, :class:`WrongShard`, :class:`SpreadBaseKey`,
:class:`LimitReached` (with :class:`VoteLimitReached` for POLL),
:class:`NotFound`, :class:`ImportRunning`. The class of a family and kind
is made once, e.g. ``PollCorruptData(PollError, CorruptData)``.
Errors that are not a family's (``ERR syntax error``, ``WRONGTYPE``,
arity) stay plain ``ResponseError``.
"""
from __future__ import annotations

import re
from typing import Dict, Optional, Tuple, Type

from redis.exceptions import ResponseError


class HotPathError(ResponseError):
    """An error a hotpath command answered: ``ERR <family>: <text>``.
    ``family`` is the family's name in lower case, ``text`` what follows
    the colon."""
    family = ""

    @property
    def text(self) -> str:
        msg = str(self)
        head = f"{self.family}: "
        return msg[len(head):] if msg.startswith(head) else msg


class PollError(HotPathError):
    family = "poll"


class RankError(HotPathError):
    family = "rank"


class LikeError(HotPathError):
    family = "like"


class RedPacketError(HotPathError):
    family = "redpacket"


class LuckyBagError(HotPathError):
    family = "luckybag"


class RateError(HotPathError):
    family = "rate"


class LockError(HotPathError):
    family = "lock"


class DelayQError(HotPathError):
    family = "delayq"


class StockError(HotPathError):
    family = "stock"


class IdemError(HotPathError):
    family = "idem"


#: The family classes by the name the error texts use.
FAMILIES: Dict[str, Type[HotPathError]] = {
    c.family: c for c in (PollError, RankError, LikeError, RedPacketError, LuckyBagError,
                          RateError, LockError, DelayQError, StockError, IdemError)
}
#: ``ERR hotpath: internal error`` (a handler that panicked) is the module's own.
FAMILIES["hotpath"] = HotPathError


class CorruptData(HotPathError):
    """``corrupt data in '<key>' …``: a key holds a value the family never
    writes (edited by hand); the command wrote nothing."""


class IntegerOverflow(HotPathError):
    """``integer overflow in '<key>' …``: the write would take a stored
    integer past its range; nothing was written."""


class WrongShard(HotPathError):
    """``wrong shard: …``, ``not a shard key``, ``shard counts disagree``,
    ``shard … does not exist``: a call on a shard key of a spread entity
    that is not the id's shard, or not a shard of that count."""


class SpreadBaseKey(HotPathError):
    """``'<B>' is spread over n shards: call its shard keys …``: a
    single-slot command on the base key of a spread entity."""


class LimitReached(HotPathError):
    """A per-user limit of the entity was reached (``vote limit reached``,
    ``… limit …``)."""


class VoteLimitReached(PollError, LimitReached):
    """``ERR poll: vote limit reached``: the voter used every vote the
    poll allows (``MAXVOTES``, or one per day)."""


class NotFound(HotPathError):
    """``… does not exist`` / ``no such …``: the entity (or the member,
    job, order) the call names is not there."""


class ImportRunning(HotPathError):
    """``board is being imported`` / ``… is already running``: a sliced
    job holds the entity; retry when it is done."""


#: (kind, pattern over the text after ``<family>: ``), first match wins.
KINDS: Tuple[Tuple[Type[HotPathError], "re.Pattern[str]"], ...] = (
    (CorruptData, re.compile(r"^corrupt data in ")),
    (IntegerOverflow, re.compile(r"^integer overflow")),
    (WrongShard, re.compile(r"^wrong shard: |is not a shard key of |^shard counts disagree|^shard '.*' \(\S+ of \S+\) does not exist")),
    (SpreadBaseKey, re.compile(r"is spread over \S+ shards")),
    (LimitReached, re.compile(r"limit reached|limit exceeded")),
    (ImportRunning, re.compile(r"is being imported|already running")),
    (NotFound, re.compile(r"does not exist|^no such ")),
)

_MADE: Dict[Tuple[str, Optional[type]], Type[HotPathError]] = {}
_HEAD = re.compile(r"^([a-z]+): ")


def error_class(message: str) -> Optional[Type[HotPathError]]:
    """The class of an error reply's message (redis-py strips ``ERR``):
    None when it is not a hotpath family's error."""
    m = _HEAD.match(message)
    if m is None or m.group(1) not in FAMILIES:
        return None
    fam = FAMILIES[m.group(1)]
    text = message[m.end():]
    kind: Optional[type] = None
    for k, pat in KINDS:
        if pat.search(text):
            kind = k
            break
    if fam is PollError and kind is LimitReached and text.startswith("vote limit reached"):
        return VoteLimitReached
    key = (fam.family, kind)
    cls = _MADE.get(key)
    if cls is None:
        if kind is None:
            cls = fam
        else:
            name = fam.__name__[:-len("Error")] + kind.__name__
            cls = type(name, (fam, kind), {"__module__": __name__, "__doc__": kind.__doc__})
        _MADE[key] = cls
    return cls


def typed(e: BaseException) -> BaseException:
    """``e`` as its hotpath class when it is a hotpath error reply (the
    same message and cause); any other exception as it is."""
    if type(e) is not ResponseError:
        return e
    cls = error_class(str(e))
    if cls is None:
        return e
    out = cls(*e.args)
    out.__cause__ = e.__cause__
    out.__traceback__ = e.__traceback__
    return out


#: The public names (the rest is the package's own).
__all__ = [
    "HotPathError", "PollError", "RankError", "LikeError", "RedPacketError", "LuckyBagError",
    "RateError", "LockError", "DelayQError", "StockError", "IdemError", "CorruptData",
    "IntegerOverflow", "WrongShard", "SpreadBaseKey", "LimitReached", "VoteLimitReached",
    "NotFound", "ImportRunning", "FAMILIES", "KINDS", "error_class", "typed",
]
