"""Tests of the Python client against a real server and a real cluster.

Environment: ``HOTPATH_URL`` (a server with the module loaded) and
``HOTPATH_CLUSTER`` (``host:port,…`` of a cluster whose nodes load it).
Tests whose server is not given are skipped; the module's
tests/clients.rs starts both and runs this file.
"""
import json
import os
import random
import time
import unittest
import uuid

import redis
from redis.cluster import ClusterNode, RedisCluster

import hotpath
from hotpath import replies as R
from hotpath import routing

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.environ.get("HOTPATH_VECTORS",
                         os.path.join(HERE, "..", "..", "..", "docs", "spread-vectors.json"))
NOW = 1767225600000  # 2026-01-01T00:00:00Z


class RoutingSpec(unittest.TestCase):
    def test_vectors(self):
        with open(VECTORS, encoding="utf-8") as f:
            v = json.load(f)
        for c in v["key_slot"]:
            self.assertEqual(routing.key_slot(c["key"]), c["slot"], c)
        for c in v["slot_tag"]:
            self.assertEqual(routing.slot_tag(c["slot"]), c["tag"])
        for c in v["shard_keys"]:
            n = c["shards"]
            if "keys" in c:
                self.assertEqual([k.decode() for k in routing.shard_keys(c["base"], n)], c["keys"])
                self.assertEqual([routing.shard_slot(c["base"], n, i) for i in range(n)], c["slots"])
            else:
                self.assertEqual(routing.shard_key(c["base"], n, n - 1).decode(), c["last_key"])
        for c in v["shard_of"]:
            self.assertEqual(routing.shard_of(c["id"], c["shards"]), c["shard"], c)
        for c in v["like"]:
            self.assertEqual(routing.like_slot_of(c["id"], c["shards"]), (c["shard"], c["stored"]))

    def test_slot_tag_table_is_its_definition(self):
        self.assertEqual(routing.generate_slot_tags(), routing.SLOT_TAGS)

    def test_shard_keys_land_in_distinct_evenly_spaced_slots(self):
        for n in (1, 3, 16, 1000, 1024):
            slots = sorted(routing.key_slot(k) for k in routing.shard_keys("post:9", n))
            self.assertEqual(len(set(slots)), n)
            gaps = {(b - a) % 16384 or 16384 for a, b in zip(slots, slots[1:] + slots[:1])}
            self.assertTrue(gaps <= {16384 // n, -(-16384 // n)}, (n, gaps))


def _outcome(f):
    """A call's reply, or its error's text."""
    try:
        return f()
    except redis.ResponseError as e:
        return str(e)


class ErrorClasses(unittest.TestCase):
    """Every family error of the command reference maps to its family's
    class, and the texts of a kind to that kind (no server needed)."""

    REFERENCE = os.path.join(HERE, "..", "..", "..", "docs", "reference")

    def test_every_reference_error_has_its_family_class(self):
        import re
        E = hotpath.errors
        kinds = {
            "corrupt data in ": E.CorruptData, "integer overflow": E.IntegerOverflow,
            "wrong shard: ": E.WrongShard, "is spread over": E.SpreadBaseKey,
        }
        seen = set()
        for page in sorted(os.listdir(self.REFERENCE)):
            with open(os.path.join(self.REFERENCE, page), encoding="utf-8") as f:
                for m in re.finditer(r"^- `ERR ([a-z]+): ([^`]*)`", f.read(), re.M):
                    fam, text = m.group(1), m.group(2)
                    cls = E.error_class(f"{fam}: {text}")
                    self.assertIsNotNone(cls, (page, text))
                    self.assertTrue(issubclass(cls, E.FAMILIES[fam]), (page, text, cls))
                    self.assertTrue(issubclass(cls, redis.ResponseError))
                    for phrase, kind in kinds.items():
                        if phrase in text:
                            self.assertTrue(issubclass(cls, kind), (page, text, cls))
                    seen.add(fam)
        self.assertGreaterEqual(len(seen), 8, seen)

    def test_other_errors_stay_plain(self):
        for msg in ("syntax error", "wrong number of arguments for 'poll.vote' command",
                    "nosuchfamily: x"):
            self.assertIsNone(hotpath.errors.error_class(msg))
            e = redis.ResponseError(msg)
            self.assertIs(hotpath.errors.typed(e), e)
        t = hotpath.errors.typed(redis.ResponseError("rank: corrupt data in 'b' field 'x'"))
        self.assertIsInstance(t, hotpath.errors.RankError)
        self.assertIsInstance(t, hotpath.errors.CorruptData)
        self.assertEqual(type(t).__name__, "RankCorruptData")
        self.assertEqual(str(t), "rank: corrupt data in 'b' field 'x'")


class SpreadPollMerge(unittest.TestCase):
    """The exact top and rank of a spread poll against the merged board,
    on boards in memory (a backend answering POLL.TOP and POLL.RANK)."""

    class Boards(hotpath.Backend):
        def __init__(self, boards):
            self.boards = {k: sorted(b.items(), key=lambda e: (e[1], e[0].encode()), reverse=True)
                           for k, b in boards.items()}
            self.calls = 0

        def call(self, command, argv, keys):
            self.calls += 1
            board = self.boards[argv[0]]
            if command == "POLL.TOP":
                count, off = argv[1], argv[3]
                return [x for c, v in board[off:off + count] for x in (c.encode(), v)]
            if command == "POLL.RANK":
                for r, (c, v) in enumerate(board):
                    if c == argv[1]:
                        return [r, v]
                return None
            raise AssertionError(command)

    def test_top_and_rank_equal_the_merged_board(self):
        rnd = random.Random(3)
        for trial in range(40):
            n = rnd.randint(1, 6)
            cands = rnd.choice([1, 4, 30, 300])
            flat = trial % 2 == 1
            keys = routing.shard_keys("poll:m", n)
            boards = {k: {} for k in keys}
            for _ in range(1500):
                c = rnd.randrange(cands) if flat else min(int(cands ** rnd.random()), cands - 1)
                b = boards[keys[rnd.randrange(n)]]
                b[f"c{c}"] = b.get(f"c{c}", 0) + 1
            total = {}
            for b in boards.values():
                for c, v in b.items():
                    total[c] = total.get(c, 0) + v
            merged = sorted(total.items(), key=lambda e: (e[1], e[0].encode()), reverse=True)
            poll = hotpath.SpreadPoll(self.Boards(boards), "poll:m", n, page_max=rnd.choice([1, 7, 1000]))
            for count, offset in [(1, 0), (10, 0), (5, 3), (400, 0)]:
                self.assertEqual(poll.top(count, offset),
                                 [R.PollEntry(c, v) for c, v in merged[offset:offset + count]],
                                 (trial, count, offset))
            for r, (c, v) in list(enumerate(merged))[::5]:
                self.assertEqual(poll.rank(c), R.PollRank(r, v), (trial, c))
            self.assertIsNone(poll.rank("nobody"))


class Families:
    """Every command of every family, with parsed replies checked exactly.
    Subclasses provide ``self.r`` and ``self.hp``."""

    def k(self, name):
        # One hash tag per test, so that a cluster keeps a test's keys in
        # one slot and tests do not see each other's keys.
        return f"{name}:{{{self.tag}}}"

    def setUp(self):
        self.tag = uuid.uuid4().hex[:8]

    def spread_class(self, cls):
        """The class of a spread handle of this client (the asyncio suites:
        its ``hotpath.aspread`` twin)."""
        return cls

    def backend_call(self, command, argv, keys):
        """One raw command through the HotPath's backend, its reply."""
        return self.hp.backend.call(command, argv, keys)

    def test_poll(self):
        p = self.hp.poll(self.k("poll"))
        self.assertTrue(p.create(mode="MULTI", maxvotes=2, candidates=["alice", "bob", "carol"], now=NOW))
        self.assertTrue(p.vote("user:1", "alice", now=NOW))
        self.assertFalse(p.vote("user:1", "alice", now=NOW))
        self.assertTrue(p.vote("user:2", "alice", now=NOW))
        self.assertTrue(p.vote("user:2", "carol", now=NOW))
        with self.assertRaisesRegex(redis.ResponseError, "poll: vote limit reached"):
            p.vote("user:2", "bob", now=NOW)
        # The same error as its class: a ResponseError still, and a POLL one.
        with self.assertRaises(hotpath.errors.VoteLimitReached) as cm:
            p.vote("user:2", "bob", now=NOW)
        self.assertIsInstance(cm.exception, hotpath.errors.PollError)
        self.assertIsInstance(cm.exception, hotpath.errors.LimitReached)
        self.assertEqual(cm.exception.text, "vote limit reached")
        self.assertEqual(p.top(2), [R.PollEntry("alice", 2), R.PollEntry("carol", 1)])
        self.assertEqual(p.top(1, offset=1), [R.PollEntry("carol", 1)])
        self.assertEqual(p.rank("carol"), R.PollRank(1, 1))
        self.assertIsNone(p.rank("nobody"))
        self.assertEqual(p.status("user:2"), ["alice", "carol"])
        self.assertEqual(p.info(), R.PollInfo("MULTI", 2, 0, 0, 3, 3))
        s = p.sync()
        self.assertEqual(s, R.PollSync(1, [R.PollEntry("alice", 2), R.PollEntry("carol", 1)]))
        self.assertTrue(p.syncack(s.epoch))
        self.assertFalse(p.syncack(s.epoch))
        self.assertEqual(p.revoke("user:2", now=NOW), 2)
        self.assertEqual(p.top(), [R.PollEntry("alice", 1), R.PollEntry("carol", 0), R.PollEntry("bob", 0)])
        # A poll never created reads as MODE ONCE with nothing in it.
        self.assertEqual(self.hp.poll(self.k("nopoll")).info(), R.PollInfo("ONCE", 1, 0, 0, 0, 0))

    def test_rank(self):
        b = self.hp.rank(self.k("board"))
        self.assertTrue(b.create(tiebreak="EARLIER", unit="MS", digits=13, now=NOW))
        self.assertEqual(b.add("alice", 300, now=NOW), 300)
        self.assertEqual(b.add("bob", 300, now=NOW + 1000), 300)
        self.assertEqual(b.add("carol", 250, now=NOW + 2000), 250)
        self.assertEqual(b.add("carol", 100, gt=True, now=NOW + 2500), 250)
        self.assertEqual(b.top(3), [R.RankMember("alice", 300), R.RankMember("bob", 300), R.RankMember("carol", 250)])
        self.assertEqual(b.get("bob"), R.RankEntry(300, 1, NOW + 1000))
        self.assertIsNone(b.get("zed"))
        self.assertEqual(b.incr("carol", 100, now=NOW + 3000), 350)
        self.assertEqual(b.around("alice", 1),
                         [R.RankPlace(0, "carol", 350), R.RankPlace(1, "alice", 300), R.RankPlace(2, "bob", 300)])
        self.assertIsNone(b.around("zed", 1))
        self.assertEqual(b.count(), 3)
        self.assertEqual(b.rem("bob", "zed"), 1)
        other = self.hp.rank(self.k("board2"))
        self.assertEqual(other.add("alice", 5, now=NOW), 5)
        self.assertEqual(self.hp.rank_merge(self.k("season"), [self.k("board"), self.k("board2")],
                                            aggregate="SUM", now=NOW), 2)
        self.assertEqual(self.hp.rank(self.k("season")).top(1), [R.RankMember("carol", 350)])
        flat = self.hp.rank(self.k("flat"))
        self.assertTrue(flat.create(tiebreak="NONE"))
        flat.add("x", 7)
        self.assertEqual(flat.get("x"), R.RankEntry(7, 0, None))
        wide = self.hp.rank(self.k("wide"))
        self.assertTrue(wide.create(layout="WIDE", now=NOW))
        big = 9007199254740991
        self.assertEqual(wide.add("ann", big, now=NOW), big)
        self.assertEqual(wide.add("bea", big - 1, now=NOW - 1), big - 1)
        self.assertEqual(wide.decr("ann", 1, now=NOW + 1), big - 1)
        self.assertEqual(wide.top(2), [R.RankMember("bea", big - 1), R.RankMember("ann", big - 1)])
        self.assertEqual(wide.get("ann"), R.RankEntry(big - 1, 1, NOW + 1))

    def test_spread_rank(self):
        # A board spread over 4 shards answers as a single board fed the
        # same writes: global rank, top and around, ties included; on the
        # packed layout and on LAYOUT WIDE (positions by stored name).
        for suffix, layout in (("", dict(tiebreak="EARLIER", unit="S")),
                               ("w", dict(layout="WIDE", tiebreak="EARLIER"))):
            with self.subTest(layout=layout):
                self._spread_rank(suffix, layout)

    def _spread_rank(self, suffix, layout):
        board = self.hp.rank(self.k("sboard" + suffix), spread=4)
        single = self.hp.rank(self.k("single" + suffix))
        self.assertTrue(board.create(now=NOW, **layout))
        self.assertTrue(board.create(now=NOW, **layout))  # again: harmless
        self.assertTrue(single.create(now=NOW, **layout))
        rnd = random.Random(5)
        members = [str(i) for i in range(30)] + [f"p{i}" for i in range(30)]
        for step in range(400):
            m, t, x = rnd.choice(members), NOW + (step // 40) * 1000, rnd.random()
            if x < 0.6:
                p = rnd.randrange(5)
                self.assertEqual(board.add(m, p, now=t),
                                 hotpath.ShardRankWrite(single.add(m, p, now=t), board.shards.shard_of(m)))
            elif x < 0.95:
                d = rnd.randrange(-1, 2)
                self.assertEqual(board.incr(m, d, now=t).points, single.incr(m, d, now=t))
            else:
                self.assertEqual(board.rem(m, "p0"), single.rem(m, "p0"))
        self.assertEqual(board.count(), single.count())
        self.assertEqual(sum(board.shard_counts()), single.count())
        for count, offset in ((10, 0), (100, 0), (5, 7)):
            self.assertEqual(board.top(count, offset), single.top(count, offset))
        # Past rank-range-max (page_max here 7): the cursor walk gives the
        # single board's order at every offset, across page edges.
        whole = single.top(single.count())
        self.assertEqual(len(whole), single.count())
        for count, offset in ((10, 0), (7, 7), (9, 5), (20, 13), (3, 50), (100, 0)):
            self.assertEqual(board.top(count, offset, page_max=7), whole[offset:offset + count],
                             (count, offset))
        self.assertEqual([R.RankMember(e.member, e.points) for e in board.pages(page_max=7)], whole)
        seen, cursor = [], None
        while True:
            page, cursor = board.top_after(8, cursor)
            seen += [R.RankMember(e.member, e.points) for e in page]
            if cursor is None:
                break
        self.assertEqual(seen, whole)
        for m in members:
            want = single.get(m)
            self.assertEqual(board.get(m), want, m)
            self.assertEqual(board.rank(m), None if want is None else want.rank, m)
        for m in members[::6]:
            for n in (0, 2):
                self.assertEqual(board.around(m, n), single.around(m, n), (m, n))
        # The base key refuses single-slot commands.
        with self.assertRaisesRegex(redis.ResponseError, "is spread over 4 shards"):
            self.hp.rank(self.k("sboard" + suffix)).add("x", 1)

    def test_like(self):
        post = self.hp.like(self.k("post"))
        self.assertEqual(post.toggle(42, now=NOW), R.LikeToggle(True, 1))
        self.assertEqual(post.add(7, now=NOW + 1), R.LikeChange(True, 2))
        self.assertEqual(post.add(7), R.LikeChange(False, 2))
        self.assertEqual(post.check(42, 7, 8), [True, True, False])
        self.assertEqual(post.count(), 2)
        self.assertEqual(post.recent(), [R.Liker(7, NOW + 1), R.Liker(42, NOW)])
        self.assertEqual(post.recent(1), [R.Liker(7, NOW + 1)])
        self.assertEqual(post.info().encoding, "set")
        self.assertEqual(post.info().count, 2)
        self.assertEqual(post.toggle(42), R.LikeToggle(False, 1))
        self.assertEqual(post.rem(7), R.LikeChange(True, 0))
        self.assertEqual(post.info(), R.LikeInfo("none", 0, 0))
        a, b = self.hp.like(self.k("pa")), self.hp.like(self.k("pb"))
        for u in (1, 2, 3):
            a.add(u)
        for u in (2, 3, 4):
            b.add(u)
        self.assertEqual(self.hp.like_common(self.k("pa"), self.k("pb")), [2, 3])
        with self.assertRaisesRegex(redis.ResponseError, "like: user id must be an integer"):
            post.toggle(-1)

    def test_redpacket(self):
        # The server drops a packet whose TTL already ran out by its clock,
        # so this one starts now.
        NOW = int(time.time() * 1000)
        rp = self.hp.redpacket(self.k("rp"))
        self.assertEqual(rp.split(1000, 3, mode="EQUAL", ttl=3600, now=NOW), 3)
        self.assertEqual(rp.grab("alice", now=NOW), R.Grab("OK", 334))
        self.assertEqual(rp.grab("alice", now=NOW), R.Grab("ALREADY", 334))
        self.assertTrue(rp.grab("alice", now=NOW).won)
        self.assertEqual(rp.info(now=NOW), R.PacketInfo(1000, 3, 666, 2, "open", NOW + 3600_000))
        self.assertEqual(rp.grabbed(), {"alice": 334})
        self.assertEqual(rp.refund(), 666)
        self.assertEqual(rp.grab("bob", now=NOW), R.Grab("CLOSED", 0))
        self.assertFalse(rp.grab("bob", now=NOW).won)
        self.assertIsNone(self.hp.redpacket(self.k("none")).info())

    def test_luckybag(self):
        bag = self.hp.luckybag(self.k("bag"))
        self.assertTrue(bag.create(3, shards=4, ttl=3600))
        self.assertEqual(bag.join(1001), R.Join(True, True, 1))
        self.assertEqual(bag.join(1001), R.Join(False, True, 1))
        self.assertEqual(bag.join("alice", task_pending=True), R.Join(True, True, 2))
        self.assertTrue(bag.task("alice"))
        self.assertTrue(bag.leave(1001))
        self.assertTrue(bag.enter(1001))
        self.assertFalse(bag.enter(1001))
        self.assertEqual(bag.result(1001), "PENDING")
        won = bag.draw()
        self.assertEqual(sorted(w.user for w in won), ["1001", "alice"])
        # 17 significant digits: the text is the exact score.
        self.assertTrue(all(0 <= w.score <= 1 and repr(float(w.score_text)) == repr(w.score) for w in won))
        self.assertEqual([w.score for w in won], sorted((w.score for w in won), reverse=True))
        self.assertEqual(bag.draw(), won)
        self.assertEqual(bag.result("alice"), "WON")
        self.assertEqual(bag.result("bob"), "ABSENT")
        self.assertEqual(bag.info(), R.BagInfo("drawn", 2, 2, 3, 4))
        with self.assertRaisesRegex(redis.ResponseError, "luckybag: bag is closed"):
            bag.join(5)

    #: Replicas a spread draw waits for (the test cluster has one per master).
    replicas = 0

    def test_spread_like(self):
        post = self.hp.like(self.k("spost"), spread=4)
        self.assertTrue(post.create())
        self.assertTrue(post.create())  # again: harmless
        self.assertEqual(post.add(5, now=NOW), R.ShardLikeChange(True, 1, 1))
        self.assertEqual(post.toggle(8, now=NOW + 1), R.ShardLikeChange(True, 0, 1))
        self.assertEqual(post.add(9, now=NOW + 2).shard, 1)
        self.assertEqual(post.count(), 3)
        self.assertEqual(post.shard_counts(), [1, 2, 0, 0])
        self.assertEqual(post.check(5, 6, 8, 9), [True, False, True, True])
        self.assertEqual(post.recent(2), [R.Liker(9, NOW + 2), R.Liker(8, NOW + 1)])
        self.assertEqual(post.rem(5), R.ShardLikeChange(True, 1, 1))
        info = post.info()
        self.assertEqual((info.shards, info.count, len(info.per_shard)), (4, 2, 4))
        self.assertEqual(self.hp.spread_count("LIKE", self.k("spost")), 4)
        # The base key refuses single-slot commands.
        with self.assertRaisesRegex(redis.ResponseError, "is spread over 4 shards"):
            self.hp.like(self.k("spost")).add(1)

    def test_spread_stock(self):
        from hotpath.spread_stock import SpreadStock
        sku = self.hp.stock(self.k("ssku"), spread=3)
        self.assertIsInstance(getattr(sku, "_target", sku), self.spread_class(SpreadStock))
        self.assertTrue(sku.create(5, limit=2, lease_ms=60_000))
        pool = sku.pool()
        self.assertEqual((pool.total, pool.free, pool.transit, pool.open), (5, 5, 0, 0))
        users = [str(u) for u in range(40)]
        ok = 0
        for n, u in enumerate(users):
            r = sku.reserve(u, f"o{n}", 1, now=NOW)
            # Every unit is sold before anyone hears SOLDOUT.
            if ok < 5:
                self.assertEqual(r.status, "OK", (n, r))
                ok += 1
            else:
                self.assertEqual(r.status, "SOLDOUT", (n, r))
            # The same order again: the same reply, no second reservation.
            self.assertEqual(sku.reserve(u, f"o{n}", 1, now=NOW).status, r.status)
            self.assertEqual(sku.audit(), [])
        info = sku.info()
        self.assertEqual((info.reserved, info.sold, info.available), (5, 0, 0))
        self.assertTrue(sku.confirm("0", "o0", now=NOW))
        self.assertTrue(sku.release("1", "o1"))
        self.assertFalse(sku.release("1", "o1"))
        # The released unit went back to its own shard: that shard's buyer
        # takes it.
        shard1 = sku.shard_of("1")
        buyer = next(u for u in (str(x) for x in range(100, 200)) if sku.shard_of(u) == shard1)
        self.assertEqual(sku.reserve(buyer, "late", 1, now=NOW).status, "OK")
        # A transfer's steps replayed change nothing.
        self.assertEqual(sku.transfer("h", shard1, -1)[0], "OPEN")
        self.assertEqual(sku.finish("h", shard1, -1), 0)
        self.assertEqual(sku.finish("h", shard1, -1), 0)
        self.assertEqual(sku.transfer("h", shard1, -1)[0], "CLOSED")
        self.assertEqual(sku.recover(), 0)
        self.assertEqual(sku.audit(), [])
        info = sku.info()
        self.assertEqual((info.reserved, info.sold, info.pool.free), (4, 1, 0))
        with self.assertRaisesRegex(redis.ResponseError, "is spread over 3 shards"):
            self.hp.stock(self.k("ssku")).reserve("u", "o", 1)

    def test_spread_stock_refill_moves_handed_back_units_to_the_shard(self):
        """A refill whose sweep hands units back from another shard moves
        them on to its own shard at once: none waits in the pool, where a
        shard marked dry meanwhile by another client would never ask for
        it (before 2.1.0 they stayed in the pool for the buyer's next
        round)."""
        sku = self.hp.stock(self.k("hsku"), spread=2)
        self.assertTrue(sku.create(4, limit=4, lease_ms=60_000))
        # Every unit on shard 1, the pool dry.
        self.assertEqual(sku.transfer("t", 1, 4)[0], "OPEN")
        self.assertEqual(sku.finish("t", 1, 4), 4)
        sku.refill(0, 1)
        info = sku.info()
        self.assertEqual((info.pool.free, info.pool.transit, info.pool.open), (0, 0, 0), info)
        self.assertEqual([s.available for s in info.shards], [1, 3], info)
        self.assertEqual(sku.audit(), [])

    def test_spread_poll(self):
        poll = self.hp.poll(self.k("spoll"), spread=4)
        single = self.hp.poll(self.k("spollsingle"))
        self.assertIsInstance(getattr(poll, "_target", poll), self.spread_class(hotpath.SpreadPoll))
        self.assertTrue(poll.create(mode="MULTI", maxvotes=2, ttl=3600))
        self.assertTrue(poll.create(mode="MULTI", maxvotes=2, ttl=3600))  # again: harmless
        self.assertTrue(single.create(mode="MULTI", maxvotes=2, ttl=3600))
        rnd = random.Random(5)
        for i in range(120):
            u = f"user:{rnd.randrange(50)}" if i % 4 else str(rnd.randrange(50))
            c = f"c{min(int(12 ** rnd.random()), 11)}"
            # MAXVOTES 2: the spread poll refuses exactly when the single
            # one does.
            self.assertEqual(_outcome(lambda: poll.vote(u, c, now=NOW)),
                             _outcome(lambda: single.vote(u, c, now=NOW)), (u, c))
        for u in ("user:3", "7"):
            self.assertEqual(poll.revoke(u, now=NOW), single.revoke(u, now=NOW))
        board = single.top(100)
        self.assertEqual(poll.top(100), board)
        self.assertEqual(poll.top(3, offset=2), board[2:5])
        for e in board:
            self.assertEqual(poll.rank(e.candidate), single.rank(e.candidate))
        self.assertIsNone(poll.rank("nobody"))
        self.assertEqual(poll.totals(board[0].candidate, "nobody"), [board[0].votes, None])
        info, one = poll.info(), single.info()
        self.assertEqual((info.mode, info.maxvotes, info.ballots, info.votes, info.shards),
                         (one.mode, one.maxvotes, one.ballots, one.votes, 4))
        self.assertGreater(info.expires, 0)
        self.assertEqual({s.mode for s in info.per_shard}, {"MULTI"})
        for u in ["user:1", "user:2", "3"]:
            self.assertEqual(poll.status(u), single.status(u))
        # The write-back: the shards' deltas merged are the single poll's.
        sync, ref = poll.sync(), single.sync()
        self.assertEqual(sync.epochs, [1, 1, 1, 1])
        self.assertEqual(sorted((e.candidate, e.votes) for e in sync.deltas),
                         sorted((e.candidate, e.votes) for e in ref.deltas))
        self.assertEqual(poll.syncack(sync), [True] * 4)
        self.assertEqual(poll.syncack(sync), [False] * 4)
        # A voter of another shard is refused, naming the right one.
        u = "user:1"
        i = poll.shards.shard_of(u)
        with self.assertRaisesRegex(redis.ResponseError, "wrong shard: user 'user:1' belongs to"):
            other = poll.shards.keys[(i + 1) % 4]
            self.backend_call("POLL.VOTE", [other, u, "c1", "SPREAD", 4], [other])
        # The base key refuses single-slot commands.
        with self.assertRaisesRegex(hotpath.errors.SpreadBaseKey, "is spread over 4 shards"):
            self.hp.poll(self.k("spoll")).vote("u", "x")
        self.assertEqual(self.hp.spread_count("POLL", self.k("spoll")), 4)

    def test_spread_luckybag(self):
        bag = self.hp.luckybag(self.k("sbag"), spread=4)
        self.assertTrue(bag.create(5))
        users = [str(i) for i in range(40)] + [f"user-{i}" for i in range(20)]
        for u in users:
            j = bag.join(u)
            self.assertEqual((j.new, j.shard), (True, bag.shards.shard_of(u)))
        self.assertFalse(bag.join("7").new)
        info = bag.info()
        self.assertEqual((info.state, info.participants, info.winners, info.shards),
                         ("open", 60, 5, 4))
        self.assertEqual(sum(s.participants for s in info.per_shard), 60)
        self.assertEqual(bag.result("7"), "PENDING")
        # A second drawer is refused while the first holds the draw.
        k0 = bag.shards.keys[0]
        # Through the backend: the module's command, or its Lua twin.
        begin = self.backend_call("LUCKYBAG.DRAWBEGIN", [k0, "first", "SPREAD", 4], [k0])
        self.assertEqual(begin[0], b"drawing")
        with self.assertRaisesRegex(hotpath.ShardError, "draw in progress"):
            bag.draw(token="second", replicas=self.replicas)
        won = bag.draw(token="first", replicas=self.replicas)
        self.assertEqual(len(won), 5)
        keys = [(w.score, w.user.encode()) for w in won]
        self.assertEqual(keys, sorted(keys, reverse=True))
        self.assertEqual(bag.draw(replicas=self.replicas), won)
        self.assertEqual(bag.info().state, "drawn")
        winners = {w.user for w in won}
        for u in users:
            self.assertEqual(bag.result(u), "WON" if u in winners else "LOST", u)
        self.assertEqual(bag.result("nobody"), "ABSENT")
        with self.assertRaisesRegex(redis.ResponseError, "luckybag: bag is closed"):
            bag.join("61")

    def test_rate(self):
        lim = self.hp.rate(self.k("api"))
        self.assertEqual(lim.check(2, 1000, now=NOW), R.RateResult(True, 2, 1, -1, 500))
        self.assertEqual(lim.check(2, 1000, peek=True, now=NOW), R.RateResult(True, 2, 0, -1, 1000))
        self.assertEqual(lim.check(2, 1000, now=NOW), R.RateResult(True, 2, 0, -1, 1000))
        self.assertEqual(lim.check(2, 1000, now=NOW), R.RateResult(False, 2, 0, 500, 1000))
        self.assertTrue(lim.reset())
        self.assertFalse(lim.reset())
        b = self.hp.rate(self.k("bucket"))
        self.assertEqual(b.check(5, 1000, algo="BUCKET", burst=50, cost=20, now=NOW),
                         R.RateResult(True, 5, 30, -1, 4000))
        self.assertEqual(self.hp.rate(self.k("cell")).throttle(15, 30, 60),
                         R.Throttle(False, 16, 15, -1, 2))
        multi = self.hp.rate_multi([(self.k("s"), 10, 1000), (self.k("d"), 1000, 86_400_000)], now=NOW)
        self.assertEqual(multi, R.RateResult(True, 10, 9, -1, 100))

    def test_lock(self):
        lk = self.hp.lock(self.k("lock"))
        self.assertEqual(lk.acquire("w1", 30000, now=NOW), 1)
        self.assertEqual(lk.acquire("w1", 30000, now=NOW + 1000), 1)
        self.assertIsNone(lk.acquire("w2", 30000, now=NOW + 1000))
        self.assertEqual(lk.info(now=NOW + 2000), [R.LockHolder("w1", 1, 2, 29000)])
        self.assertTrue(lk.check(1, now=NOW + 2000))
        self.assertFalse(lk.check(2, now=NOW + 2000))
        self.assertEqual(lk.renew("w1", 10000, now=NOW + 2000), 10000)
        self.assertEqual(lk.renew("w2", 10000, now=NOW + 2000), 0)
        self.assertFalse(lk.release("w2", now=NOW + 3000))
        self.assertTrue(lk.release("w1", now=NOW + 3000))
        self.assertTrue(lk.release("w1", now=NOW + 3000))
        self.assertFalse(lk.release("w1", now=NOW + 3000))
        self.assertEqual(lk.info(now=NOW + 3000), [])
        self.assertEqual(lk.acquire("w2", 1000, maxhold=500, now=NOW + 3000), 2)
        self.assertEqual(lk.renew("w2", 1000, now=NOW + 3100), 400)
        sem = self.hp.lock(self.k("sem"))
        self.assertEqual(sem.acquire("a", 1000, limit=2, now=NOW), 1)
        self.assertEqual(sem.acquire("b", 2000, now=NOW), 2)
        self.assertIsNone(sem.acquire("c", 1000, now=NOW))
        self.assertEqual(sem.info(now=NOW + 500),
                         [R.LockHolder("a", 1, 1, 500), R.LockHolder("b", 2, 1, 1500)])
        with self.assertRaisesRegex(redis.ResponseError, "lock: LIMIT 3 differs from the lock's limit 2"):
            sem.acquire("c", 1000, limit=3, now=NOW)
        with self.assertRaisesRegex(redis.ResponseError, "lock: user must not be empty"):
            sem.acquire("", 1000)
        # BLOCK on the server clock: a lease of a minute outlives a wait of
        # 50 ms, which then answers None.
        live = self.hp.lock(self.k("live"))
        self.assertEqual(live.acquire("a", 60000), 1)
        self.assertIsNone(live.acquire("b", 60000, block=50))

    def test_delayq(self):
        q = self.hp.delayq(self.k("q"))
        self.assertTrue(q.add("j1", "p1", now=NOW))
        self.assertFalse(q.add("j1", "other", now=NOW))
        self.assertTrue(q.add("j2", "p2", delay=5000, attempts=1, now=NOW))
        self.assertEqual(q.info(now=NOW), R.QueueInfo(2, 1, 1, 0))
        self.assertEqual(q.poll(30000, count=10, now=NOW), [R.Job("j1", "p1", 1, 1000001)])
        self.assertEqual(q.poll(30000, now=NOW), [])
        self.assertTrue(q.extend("j1", 1000001, 60000, now=NOW + 1000))
        self.assertFalse(q.extend("j1", 999, 60000, now=NOW + 1000))
        self.assertEqual(q.nack("j1", 1000001, delay=1000, now=NOW + 1000), R.Nack.REQUEUED)
        self.assertEqual(q.nack("j1", 1000001, now=NOW + 1000), R.Nack.STALE)
        self.assertEqual(q.poll(30000, count=10, now=NOW + 5000),
                         [R.Job("j1", "p1", 2, 1000002), R.Job("j2", "p2", 1, 2000001)])
        self.assertTrue(q.ack("j1", 1000002))
        self.assertFalse(q.ack("j1", 1000002))
        self.assertEqual(q.nack("j2", 2000001, backoff=(100, 1000), now=NOW + 6000), R.Nack.DEAD)
        self.assertEqual(q.dead(), [R.DeadLetter("j2", "p2", 1, NOW + 6000)])
        self.assertEqual(q.redrive(id="j2", now=NOW + 7000), 1)
        self.assertEqual(q.redrive(count=5, now=NOW + 7000), 0)
        self.assertEqual(q.info(now=NOW + 7000), R.QueueInfo(1, 1, 0, 0))
        self.assertEqual(q.peek(), [R.ScheduledJob("j2", "p2", 0, NOW + 7000, False)])
        self.assertEqual(q.peek(id="j1"), [])
        self.assertTrue(q.add("j3", "p3", now=NOW + 7000))
        self.assertEqual(len(q.peek(count=5)), 2)
        self.assertTrue(q.cancel("j3", now=NOW + 7000))
        self.assertFalse(q.cancel("j3", now=NOW + 7000))
        # On the server clock: the re-driven job is ready; then nothing is,
        # and a poll that waits 50 ms answers empty.
        self.assertEqual(q.poll(60000), [R.Job("j2", "p2", 1, 3000001)])
        self.assertEqual(q.poll(60000, block=50), [])
        with self.assertRaisesRegex(redis.ResponseError, "delayq: id must not be empty"):
            q.add("", "p")
        # A dead letter purged; a job under a running lease (j2, leased on
        # the server clock) cancelled only with force.
        self.assertTrue(q.add("j5", "p5", attempts=1, now=NOW + 8000))
        self.assertEqual(q.poll(1000, count=10, now=NOW + 8000), [R.Job("j5", "p5", 1, 5000001)])
        self.assertEqual(q.nack("j5", 5000001, now=NOW + 8000), R.Nack.DEAD)
        self.assertEqual(q.purge(max_age_ms=1000, now=NOW + 8000), 0)
        self.assertEqual(q.purge(max_len=0, now=NOW + 8000), 1)
        with self.assertRaisesRegex(redis.ResponseError, "delayq: job is leased"):
            q.cancel("j2", now=NOW + 8000)
        self.assertTrue(q.cancel("j2", force=True, now=NOW + 8000))
        self.assertEqual(q.info(now=NOW + 8000), R.QueueInfo(0, 0, 0, 0))
        # lost_max=0: the first lost lease sends the job to the dead letters.
        self.assertTrue(q.add("j6", "p6", lost_max=0, now=NOW + 9000))
        self.assertEqual(q.poll(100, now=NOW + 9000), [R.Job("j6", "p6", 1, 6000001)])
        self.assertEqual(q.poll(100, now=NOW + 9200), [])
        self.assertEqual(q.dead(), [R.DeadLetter("j6", "p6", 1, NOW + 9100)])

    def test_idem(self):
        # A NOW in 2030: records expire a TTL after it.
        t0 = 1893456000000
        ik = self.hp.idem(self.k("idem"))
        self.assertEqual(ik.begin("fa", 1000, now=t0), R.IdemBegin("NEW", fence=t0))
        self.assertTrue(ik.begin("fa", 1000, now=t0 + 400).running)
        self.assertEqual(ik.begin("fa", 1000, now=t0 + 400).left_ms, 600)
        self.assertTrue(ik.begin("fb", 1000, now=t0 + 400).mismatch)
        self.assertEqual(ik.get(now=t0 + 400), R.IdemRecord("running", "fa", t0, 600, None))
        b = ik.begin("fa", 1000, ttl=60, now=t0 + 2000)
        self.assertEqual(b, R.IdemBegin("NEW", fence=t0 + 2000))
        with self.assertRaisesRegex(redis.ResponseError, f"idem: stale fence {t0}"):
            ik.complete(t0, b"r0", now=t0 + 2100)
        self.assertTrue(ik.complete(b.fence, b"ok\x00", now=t0 + 2100))
        self.assertFalse(ik.complete(b.fence, b"ok\x00", now=t0 + 2200))
        self.assertEqual(ik.begin("fa", 1000, now=t0 + 3000),
                         R.IdemBegin("DONE", result=b"ok\x00"))
        self.assertEqual(ik.get(now=t0 + 3000),
                         R.IdemRecord("done", "fa", t0 + 2000, 0, b"ok\x00"))
        other = self.hp.idem(self.k("idem2"))
        self.assertIsNone(other.get())
        f = other.begin("f", 60000).fence
        self.assertTrue(other.abort(f))
        self.assertFalse(other.abort(f))
        self.assertEqual(other.get().state, "aborted")
        with self.assertRaisesRegex(redis.ResponseError, "idem: fingerprint must not be empty"):
            other.begin("", 1000)


    def test_stock(self):
        st = self.hp.stock(self.k("sku"))
        self.assertIsNone(st.info())
        self.assertTrue(st.create(3, limit=2, lease_ms=60000, now=NOW))
        with self.assertRaisesRegex(redis.ResponseError, "stock: already exists"):
            st.create(3)
        self.assertEqual(st.reserve("alice", "o-1", 2, now=NOW),
                         R.Reservation("OK", 1, NOW + 60000))
        # The same order gets the same reply again, and no second unit.
        self.assertEqual(st.reserve("alice", "o-1", 2, now=NOW + 1000),
                         R.Reservation("OK", 1, NOW + 60000))
        self.assertEqual(st.reserve("alice", "o-2", 1, now=NOW + 2000), R.Reservation("LIMIT", 1, 0))
        self.assertEqual(st.reserve("bob", "o-3", 2, now=NOW + 3000), R.Reservation("SOLDOUT", 1, 0))
        r = st.reserve("bob", "o-3", now=NOW + 4000)
        self.assertTrue(r.ok)
        self.assertEqual(r, R.Reservation("OK", 0, NOW + 64000))
        self.assertTrue(st.confirm("o-1", now=NOW + 10000))
        self.assertFalse(st.confirm("o-1", now=NOW + 11000))
        with self.assertRaisesRegex(redis.ResponseError, "stock: lease expired"):
            st.confirm("o-3", now=NOW + 100000)
        self.assertTrue(st.release("o-3"))
        self.assertFalse(st.release("o-3"))
        with self.assertRaisesRegex(redis.ResponseError, "stock: order is confirmed"):
            st.release("o-1")
        self.assertEqual(st.restock(5, now=NOW + 100000), 6)
        self.assertEqual(st.restock(-2, now=NOW + 100000), 4)
        with self.assertRaisesRegex(redis.ResponseError, "stock: not enough available units"):
            st.restock(-7, now=NOW + 100000)
        self.assertEqual(st.info(), R.StockInfo(total=6, available=4, reserved=0, sold=2, limit=2,
                                                lease_ms=60000, orders=2))
        self.assertEqual(st.audit(), R.StockAudit("0", 2, []))
        self.assertEqual(st.audit_all(count=1), [])
        # A hand-edited ledger: the audit names what is wrong.
        self.r.hset(self.k("sku") + ":users", "alice", "9")
        self.assertEqual(st.audit_all(), ["user 'alice': holds 9 over the limit 2",
                                          "ledger: user 'alice' holds 9, orders hold 2"])
        # A lease on the server clock (no NOW): a minute from now.
        live = self.hp.stock(self.k("live"))
        self.assertTrue(live.create(1))
        before = int(time.time() * 1000)
        r = live.reserve("carol", "o-9")
        self.assertEqual((r.status, r.left), ("OK", 0))
        self.assertTrue(before + 900000 <= r.lease_end <= before + 960000, r)
        self.assertEqual(live.reserve("dave", "o-10"), R.Reservation("SOLDOUT", 0, 0))
        with self.assertRaisesRegex(redis.ResponseError, "stock: user must not be empty"):
            live.reserve("", "o-11")


@unittest.skipUnless(os.environ.get("HOTPATH_URL"), "HOTPATH_URL not set")
class OnOneServer(Families, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = redis.Redis.from_url(os.environ["HOTPATH_URL"])
        cls.hp = hotpath.HotPath(cls.r)

    def test_the_connection_speaks_resp3(self):
        self.assertIsInstance(self.r.execute_command("DELAYQ.INFO", self.k("q")), dict)

    def test_decoded_responses_work_too(self):
        hp = hotpath.HotPath(redis.Redis.from_url(os.environ["HOTPATH_URL"], decode_responses=True))
        p = hp.poll(self.k("dpoll"))
        self.assertTrue(p.vote("u", "x", now=NOW))
        self.assertEqual(p.top(), [R.PollEntry("x", 1)])
        self.assertEqual(p.info().mode, "ONCE")


@unittest.skipUnless(os.environ.get("HOTPATH_URL"), "HOTPATH_URL not set")
class OnOneServerInResp2(Families, unittest.TestCase):
    """The same calls over RESP2, where map-like replies are flat arrays
    (redis-py 8 speaks RESP3 unless told otherwise)."""

    @classmethod
    def setUpClass(cls):
        cls.r = redis.Redis.from_url(os.environ["HOTPATH_URL"], protocol=2)
        cls.hp = hotpath.HotPath(cls.r)

    def test_the_connection_speaks_resp2(self):
        self.assertIsInstance(self.r.execute_command("DELAYQ.INFO", self.k("q")), list)


@unittest.skipUnless(os.environ.get("HOTPATH_CLUSTER"), "HOTPATH_CLUSTER not set")
class OnACluster(Families, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        nodes = []
        for hp in os.environ["HOTPATH_CLUSTER"].split(","):
            host, port = hp.rsplit(":", 1)
            nodes.append(ClusterNode(host, int(port)))
        cls.r = RedisCluster(startup_nodes=nodes)
        cls.hp = hotpath.HotPath(cls.r)

    replicas = 1

    def test_routing_matches_the_server(self):
        rnd = random.Random(11)
        keys = ["", "post:9", "post:{9}", "a{}b", "{06S}x"] + [
            "".join(rnd.choice("ab{}:09xyz") for _ in range(rnd.randint(0, 12))) for _ in range(300)]
        for key in keys:
            self.assertEqual(routing.key_slot(key), self.r.cluster_keyslot(key), key)
        for key in routing.shard_keys("post:{hot}", 16):
            self.assertEqual(routing.key_slot(key), self.r.cluster_keyslot(key))

    def test_entities_spread_over_every_master(self):
        owners = set()
        for i in range(12):
            key = f"post:{{spread{i}}}"
            self.hp.like(key).add(1)
            owners.add(self.r.get_node_from_key(key).name)
        self.assertEqual(len(owners), 3)


if __name__ == "__main__":
    unittest.main()
