"""Spread handles under durability and topology change (issue 24).

``RetryPolicyRules`` needs no server. ``UnderTopologyChange`` needs
``HOTPATH_CLUSTER`` (a cluster of masters with one replica each whose
nodes load the module, DEBUG enabled): tests/clients.rs starts one and
runs every file here. It holds a replica back (``DEBUG SLEEP``), holds a
slot half-moved for 1.5 s, and takes a slot away from every master, so it
restores the cluster before it returns.
"""
import os
import threading
import time
import unittest
import uuid
from collections import Counter

import redis
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import (AskError, ClusterDownError, ClusterError, ConnectionError,
                              MovedError, ResponseError, TimeoutError, TryAgainError)
from redis.retry import Retry

import hotpath
from hotpath import retry
from hotpath.client import ModuleBackend
from hotpath.retry import NOT_APPLIED, UNKNOWN, RetryPolicy


class FakeClock:
    def __init__(self):
        self.t = 0.0
        self.slept = []

    def clock(self):
        return self.t

    def sleep(self, d):
        self.slept.append(d)
        self.t += d


class RetryPolicyRules(unittest.TestCase):
    """The policy of docs/spread.md, "Retries under topology change"."""

    def test_the_documented_defaults(self):
        p = retry.DEFAULT
        self.assertEqual((p.deadline_ms, p.first_ms, p.max_ms), (10_000, 20, 500))
        top = [round(d, 3) for d, _ in zip(p.delays(lambda: 1.0), range(8))]
        self.assertEqual(top, [0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5, 0.5])
        low = [round(d, 3) for d, _ in zip(p.delays(lambda: 0.0), range(3))]
        self.assertEqual(low, [0.01, 0.02, 0.04])

    def test_which_errors_are_retried(self):
        self.assertEqual(retry.classify(TryAgainError("hotpath: slot 5 is being migrated")),
                         NOT_APPLIED)
        self.assertEqual(retry.classify(ClusterError("TTL exhausted.")), NOT_APPLIED)
        self.assertEqual(retry.classify(ClusterDownError("Hash slot not served")), NOT_APPLIED)
        self.assertEqual(retry.classify(MovedError("5 127.0.0.1:7001")), NOT_APPLIED)
        self.assertEqual(retry.classify(AskError("5 127.0.0.1:7001")), NOT_APPLIED)
        # A pipeline's error reply, as redis-py may leave it.
        self.assertEqual(retry.classify(ResponseError("TRYAGAIN hotpath: slot 5")), NOT_APPLIED)
        self.assertEqual(retry.classify(
            ConnectionError("Error 111 connecting to 127.0.0.1:7000. Connection refused.")),
            NOT_APPLIED)
        self.assertEqual(retry.classify(ConnectionError("Connection closed by server.")), UNKNOWN)
        self.assertEqual(retry.classify(TimeoutError("Timeout reading from socket")), UNKNOWN)
        self.assertIsNone(retry.classify(ResponseError("ERR like: user id must be an integer")))
        self.assertIsNone(retry.classify(ValueError("a bug")))
        lost = ConnectionError("Connection closed by server.")
        self.assertTrue(retry.retryable(lost, "LIKE.ADD"))
        self.assertFalse(retry.retryable(lost, "LIKE.TOGGLE"))
        self.assertFalse(retry.retryable(lost, "RANK.INCR"))
        self.assertFalse(retry.retryable(lost, "rank.decr"))
        self.assertTrue(retry.retryable(TryAgainError("x"), "RANK.INCR"))

    def test_retries_until_it_works(self):
        c = FakeClock()
        left = [3]

        def fn():
            if left[0]:
                left[0] -= 1
                raise TryAgainError("slot moving")
            return "ok"

        self.assertEqual(RetryPolicy().run(fn, "RANK.INCR", c.clock, c.sleep), "ok")
        self.assertEqual(len(c.slept), 3)

    def test_gives_up_at_the_deadline(self):
        c = FakeClock()
        calls = []

        def fn():
            calls.append(c.t)
            raise ClusterDownError("Hash slot not served")

        with self.assertRaises(ClusterDownError):
            RetryPolicy(deadline_ms=2000).run(fn, "LIKE.ADD", c.clock, c.sleep)
        self.assertLessEqual(c.t, 2.0)
        self.assertGreater(c.t, 2.0 - 0.5)  # within the longest sleep of the deadline
        self.assertGreater(len(calls), 5)
        # Attempts that take time themselves (redis-py's own retries): no
        # attempt starts that would end past the deadline.
        c1 = FakeClock()

        def slow():
            c1.t += 2.8
            raise ClusterDownError("Hash slot not served")

        with self.assertRaises(ClusterDownError):
            RetryPolicy(deadline_ms=6000).run(slow, "LIKE.ADD", c1.clock, c1.sleep)
        self.assertEqual(len(c1.slept), 1)
        self.assertLessEqual(c1.t, 6.0)
        c2 = FakeClock()
        with self.assertRaises(ClusterDownError):
            retry.NEVER.run(fn, "LIKE.ADD", c2.clock, c2.sleep)
        self.assertEqual(c2.slept, [])

    def test_final_errors_and_unsafe_resends_are_not_retried(self):
        for err, command in ((ResponseError("ERR bad"), "LIKE.ADD"),
                             (ConnectionError("Connection closed by server."), "LIKE.TOGGLE")):
            c = FakeClock()
            n = [0]

            def fn():
                n[0] += 1
                raise err

            with self.assertRaises(type(err)):
                RetryPolicy().run(fn, command, c.clock, c.sleep)
            self.assertEqual(n[0], 1, command)

    def test_run_many_sends_again_only_what_failed(self):
        c = FakeClock()
        seen = []

        def step(idx):
            seen.append(list(idx))
            return [TryAgainError("x") if i == 1 and len(seen) < 3 else f"r{i}" for i in idx]

        out = RetryPolicy().run_many(step, ["A", "B", "C"], c.clock, c.sleep)
        self.assertEqual(out, ["r0", "r1", "r2"])
        self.assertEqual(seen, [[0, 1, 2], [1], [1]])


class CountingSends:
    """Counts, per node, the writes to a socket that carry hotpath
    commands (one per pipeline, one per command sent on its own): a
    wrapper around redis-py's ``Connection.send_packed_command`` while in
    the ``with`` block."""

    def __init__(self):
        self.sends = Counter()

    def __enter__(self):
        self.orig = orig = redis.connection.Connection.send_packed_command
        sends = self.sends

        def counting(conn, command, check_health=True):
            data = command if isinstance(command, (bytes, bytearray)) else b"".join(
                bytes(c) for c in command)
            if b"LUCKYBAG." in data or b"hotpath_luckybag" in data:
                sends[(conn.host, conn.port)] += 1
            return orig(conn, command, check_health)

        redis.connection.Connection.send_packed_command = counting
        return self.sends

    def __exit__(self, *exc):
        redis.connection.Connection.send_packed_command = self.orig


def _text(v):
    return v.decode() if isinstance(v, bytes) else v


@unittest.skipUnless(os.environ.get("HOTPATH_CLUSTER"), "HOTPATH_CLUSTER not set")
class UnderTopologyChange(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addrs = []
        for hp in os.environ["HOTPATH_CLUSTER"].split(","):
            host, port = hp.rsplit(":", 1)
            cls.addrs.append((host, int(port)))
        cls.rc = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cls.addrs])

    def setUp(self):
        self.tag = uuid.uuid4().hex[:8]

    # --- the cluster, read straight from its nodes -----------------------

    def node(self, addr):
        return redis.Redis(host=addr[0], port=addr[1], socket_timeout=10)

    def nodes(self):
        """Every node: {id: (addr, is_master, master_id, slots)}."""
        raw = _text(self.node(self.addrs[0]).execute_command("CLUSTER", "NODES"))
        if isinstance(raw, dict):  # redis-py may parse it
            raw = "\n".join(_text(v) for v in raw)
        out = {}
        for line in raw.splitlines():
            f = line.split()
            if not f:
                continue
            host, port = f[1].split("@")[0].rsplit(":", 1)
            slots = []
            for s in f[8:]:
                if s.startswith("["):
                    continue
                a, _, b = s.partition("-")
                slots.append((int(a), int(b or a)))
            out[f[0]] = ((host, int(port)), "master" in f[2], None if f[3] == "-" else f[3],
                         slots)
        return out

    def owner(self, slot):
        for nid, (addr, master, _, slots) in self.nodes().items():
            if master and any(a <= slot <= b for a, b in slots):
                return nid, addr
        raise AssertionError(f"no owner of slot {slot}")

    def masters(self):
        return {nid: v[0] for nid, v in self.nodes().items() if v[1] and v[3]}

    def wait_ok(self):
        deadline = time.monotonic() + 30
        while True:
            states = [_text(self.node(v[0]).execute_command("CLUSTER", "INFO"))
                      for v in self.nodes().values()]
            if all("cluster_state:ok" in str(s) for s in states):
                return
            self.assertLess(time.monotonic(), deadline, "the cluster did not recover")
            time.sleep(0.1)

    def hold_back(self, addr, secs):
        """``DEBUG SLEEP secs`` on the node at ``addr`` (a replica), from a
        thread; returns the thread once the node is seen asleep (two PINGs
        in a row that get no answer within 150 ms each: a node that is only
        busy answers one), so that it acknowledges nothing meanwhile."""
        t = threading.Thread(
            target=lambda: self.node(addr).execute_command("DEBUG", "SLEEP", secs))
        t.start()
        deadline = time.monotonic() + 3
        silent = 0
        while time.monotonic() < deadline:
            try:
                redis.Redis(host=addr[0], port=addr[1], socket_timeout=0.15,
                            retry=Retry(NoBackoff(), 0)).ping()
                silent = 0
                time.sleep(0.01)
            except (redis.TimeoutError, redis.ConnectionError):
                silent += 1
                if silent == 2:
                    return t
        t.join()
        raise AssertionError(f"{addr} never slept")

    # --- item 1: durability ----------------------------------------------

    def _bag(self, hp, name, joins=300):
        bag = hp.luckybag(f"{name}:{self.tag}", spread=16)
        self.assertTrue(bag.create(10))
        for u in range(joins):
            bag.join(str(u))
        return bag

    def _held_back_replica_refuses_the_draw(self, hp):
        bag = self._bag(hp, f"bag-{type(hp.backend).__name__}")
        # A replica of a master that holds shards of the bag sleeps 1.5 s.
        _, master_addr = self.owner(routing_slot(bag.shards.keys[0]))
        master_id = [nid for nid, v in self.nodes().items() if v[0] == master_addr][0]
        replica = [v[0] for v in self.nodes().values() if v[2] == master_id][0]
        sleeper = self.hold_back(replica, "1.5")
        t0 = time.monotonic()
        try:
            with self.assertRaisesRegex(hotpath.ShardError, r"reached 0 of 1 replicas"):
                bag.draw(token="t", replicas=1, wait_ms=300)
            took = time.monotonic() - t0
        finally:
            sleeper.join()
        # Refused by WAIT's timeout, not after the replica woke.
        self.assertGreaterEqual(took, 0.3)
        self.assertLess(took, 1.3)
        self.assertEqual(bag.info().state, "drawing")
        # Once the replica is back, the same draw goes on and finishes.
        won = bag.draw(token="t", replicas=1, wait_ms=5000)
        self.assertEqual(len(won), 10)
        self.assertEqual(bag.info().state, "drawn")

    def test_a_draw_is_refused_while_a_replica_is_held_back_default_backend(self):
        hp = hotpath.HotPath(self.rc)
        self.assertIsInstance(hp.backend, hotpath.FallbackBackend)
        self._held_back_replica_refuses_the_draw(hp)

    def test_a_draw_is_refused_while_a_replica_is_held_back_module_backend(self):
        self._held_back_replica_refuses_the_draw(hotpath.HotPath(self.rc,
                                                                 backend=ModuleBackend(self.rc)))

    def test_per_shard_calls_go_out_as_one_pipeline_per_master(self):
        for backend in (None, ModuleBackend(self.rc)):
            hp = hotpath.HotPath(self.rc, backend=backend)
            bag = self._bag(hp, "pipes", joins=20)
            masters = set(self.masters().values())
            bag.info()  # the first call decides the fallback's mode
            with CountingSends() as sends:
                self.assertEqual(bag.info().participants, 20)
            self.assertEqual({(h, int(p)) for h, p in sends}, masters)
            self.assertEqual(set(sends.values()), {1}, sends)
            # The durable fan-out: one pipeline per master, WAIT included.
            calls = [("LUCKYBAG.INFO", [k, "SPREAD", 16], [k]) for k in bag.shards.keys]
            with CountingSends() as sends:
                res, acks = hp.backend.call_many_durable(calls, 1, 1000)
            self.assertFalse([r for r in res if isinstance(r, BaseException)])
            self.assertEqual({(h, int(p)) for h, p in sends}, masters)
            self.assertEqual(set(sends.values()), {1}, sends)
            self.assertEqual(acks, [1] * 16)

    def test_a_durable_handle_waits_on_the_connection_of_its_writes(self):
        for backend in (None, ModuleBackend(self.rc)):
            hp = hotpath.HotPath(self.rc, backend=backend)
            post = hp.like(f"dpost:{self.tag}:{backend is None}", spread=4)
            self.assertTrue(post.create())
            durable = post.durable(replicas=1, wait_ms=300)
            self.assertEqual(durable.add(7).shard_count, 1)
            key = post.shards.keys[post.shard_of(8)]
            _, master_addr = self.owner(routing_slot(key))
            master_id = [nid for nid, v in self.nodes().items() if v[0] == master_addr][0]
            replica = [v[0] for v in self.nodes().values() if v[2] == master_id][0]
            sleeper = self.hold_back(replica, "1.5")
            try:
                with self.assertRaises(hotpath.spread.NotDurableError) as cm:
                    durable.add(8)
            finally:
                sleeper.join()
            self.assertEqual((cm.exception.acked, cm.exception.replicas), (0, 1))
            # It ran on the master; written again once the replica is back.
            self.assertTrue(post.likes(8))
            self.assertEqual(durable.add(8).changed, False)

    # --- item 2: topology change -----------------------------------------

    def _migrate(self, slot, src, dst, src_id, dst_id, hold, half=True):
        """Moves ``slot`` from ``src`` to ``dst``: IMPORTING/MIGRATING, one
        key moved, then ``hold`` seconds with the slot half-moved, then the
        rest and SETSLOT NODE everywhere."""
        s, d = self.node(src), self.node(dst)
        d.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
        s.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)

        def move(count):
            keys = s.execute_command("CLUSTER", "GETKEYSINSLOT", slot, count)
            if keys:
                s.execute_command("MIGRATE", dst[0], dst[1], "", 0, 10000, "KEYS", *keys)

        if half:
            move(1)

        def finish():
            time.sleep(hold)
            move(1000)
            # The earliest a command on the slot can run again.
            self.moved_at = time.monotonic()
            d.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
            s.execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
            for nid, addr in self.masters().items():
                if nid not in (src_id, dst_id):
                    self.node(addr).execute_command("CLUSTER", "SETSLOT", slot, "NODE", dst_id)

        t = threading.Thread(target=finish)
        t.start()
        return t

    def test_writes_wait_out_a_slot_held_half_moved(self):
        hp = hotpath.HotPath(self.rc)
        board = hp.rank(f"moving:{self.tag}", spread=4)
        self.assertTrue(board.create())
        member = "m1"
        key = board.shards.keys[board.shards.shard_of(member)]
        slot = routing_slot(key)
        self.assertEqual(board.incr(member, 1).points, 1)
        for durable in (False, True):
            src_id, src = self.owner(slot)
            dst_id, dst = [(n, a) for n, a in self.masters().items() if n != src_id][0]
            mover = self._migrate(slot, src, dst, src_id, dst_id, hold=1.5)
            try:
                time.sleep(0.1)
                # Without the policy redis-py gives up on TRYAGAIN (the
                # control: the slot is really half-moved), and nothing is
                # written.
                with self.assertRaises((ClusterError, TryAgainError, hotpath.ShardError)):
                    board.with_retry(retry.NEVER).incr(member, 100)
                before = 1 if not durable else 6
                t0 = time.monotonic()
                handle = board.durable(1, 2000) if durable else board
                self.assertEqual(handle.incr(member, 5).points, before + 5)
                done = time.monotonic()
            finally:
                mover.join()
            # It waited for the move (about 1 s in all, after the control).
            self.assertGreater(done, self.moved_at, "the write did not wait for the move")
            self.assertGreater(done - t0, 0.5)
            self.assertEqual(self.owner(slot)[0], dst_id)
            # Landed once, on the new owner.
            self.assertEqual(board.get(member).points, before + 5)
        self.assertEqual(board.get(member).points, 11)

    def test_a_slot_with_no_owner_fails_within_the_deadline(self):
        # A cluster client that gives up at once by itself (redis-py's own
        # retries of CLUSTERDOWN take about 3 s with its defaults, one
        # attempt of the policy), so that the attempts the policy adds, and
        # its deadline, show.
        rc = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in self.addrs],
                          retry=Retry(NoBackoff(), 0))
        hp = hotpath.HotPath(rc)
        post = hp.like(f"orphan:{self.tag}", spread=4)
        self.assertTrue(post.create())
        user = 6
        key = post.shards.keys[post.shard_of(user)]
        slot = routing_slot(key)
        owner_id, owner = self.owner(slot)
        masters = self.masters()
        for addr in masters.values():
            self.node(addr).execute_command("CLUSTER", "DELSLOTS", slot)
        policy = RetryPolicy(deadline_ms=3000)
        try:
            t0 = time.monotonic()
            with self.assertRaises(redis.RedisError) as cm:
                post.with_retry(policy).add(user)
            took = time.monotonic() - t0
        finally:
            self.node(owner).execute_command("CLUSTER", "ADDSLOTS", slot)
            self.wait_ok()
        self.assertIsNotNone(retry.classify(cm.exception), repr(cm.exception))
        # It kept retrying (more than one attempt), and stopped by the
        # deadline.
        self.assertGreater(took, 2.0)
        self.assertLess(took, 3.0 + 0.5)
        # The owner is back: the write goes through (the policy covers the
        # client's stale view), once.
        self.assertEqual(post.add(user).shard_count, 1)
        self.assertEqual(post.count(), 1)


def routing_slot(key):
    return hotpath.routing.key_slot(key)


if __name__ == "__main__":
    unittest.main()
