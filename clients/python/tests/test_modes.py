"""The client in its other modes, against real servers: asyncio
(``redis.asyncio``), pipelines and MULTI/EXEC transactions, over RESP2 and
RESP3, on one server (``HOTPATH_URL``) and on a cluster
(``HOTPATH_CLUSTER``).

The whole ``Families`` suite of test_client.py (every command of every
family, replies checked exactly, typed errors) runs again through an
asyncio ``HotPath`` and through ``hp.pipeline()``: an adapter runs each
handle call to completion (awaits it; or queues it alone and executes the
pipeline), after checking that the call really was a coroutine or was
really queued. Then the cases a one-command adapter cannot show: several
commands in one pipeline, a transaction's atomicity, errors in a pipeline,
``HotPath(r.pipeline())`` with redis-py's own ``execute()``.
"""
import asyncio
import inspect
import os
import unittest
import uuid

import redis
import redis.asyncio as aredis
from redis.cluster import ClusterNode, RedisCluster

import hotpath
from hotpath import aspread
from hotpath import replies as R
from hotpath.aspread import _AsyncSpread
from hotpath.client import _Entity
from test_client import NOW, Families

URL = os.environ.get("HOTPATH_URL")
CLUSTER = os.environ.get("HOTPATH_CLUSTER")

SPREAD_TESTS = ("test_spread_rank", "test_spread_like", "test_spread_poll",
                "test_spread_luckybag", "test_spread_stock",
                "test_spread_stock_refill_moves_handed_back_units_to_the_shard")


def _cluster_nodes():
    nodes = []
    for hp in (CLUSTER or "").split(","):
        host, port = hp.rsplit(":", 1)
        nodes.append((host, int(port)))
    return nodes


def sync_client(cluster, protocol=3):
    if cluster:
        return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in _cluster_nodes()],
                            protocol=protocol)
    return redis.Redis.from_url(URL, protocol=protocol)


def async_client(cluster, protocol=3):
    if cluster:
        return aredis.RedisCluster(startup_nodes=[aredis.cluster.ClusterNode(h, p)
                                                  for h, p in _cluster_nodes()],
                                   protocol=protocol)
    return aredis.Redis.from_url(URL, protocol=protocol)


class Awaiting:
    """An asyncio HotPath (or handle, or spread handle) as the sync suite
    calls it: each call of a handle method must give a coroutine, which is
    run to its end (an async iterator: read to its end, as a list). A
    spread handle's methods that send nothing (``shard_of``,
    ``with_retry``) stay plain."""

    def __init__(self, target, loop):
        self._target = target
        self._loop = loop

    def __getattr__(self, name):
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            out = attr(*args, **kwargs)
            if isinstance(out, (_Entity, _AsyncSpread)):
                return Awaiting(out, self._loop)
            if inspect.isasyncgen(out):
                async def read():
                    return [x async for x in out]
                return self._loop.run_until_complete(read())
            if isinstance(self._target, _AsyncSpread) and not inspect.iscoroutinefunction(attr):
                return out
            assert inspect.iscoroutine(out), f"{name} gave {out!r}, not a coroutine"
            return self._loop.run_until_complete(out)
        return call


class Queueing:
    """``hp.pipeline()`` as the sync suite calls it: each call of a handle
    method is queued alone (the method must return the pipeline and leave
    one command queued) and the pipeline executed; its one reply, or its
    error raised, typed, by ``execute()``."""

    #: Methods that need each reply before the next command (not queued).
    DIRECT = {"audit_all"}

    def __init__(self, hp, transaction, path=()):
        self._hp = hp
        self._transaction = transaction
        self._path = path

    def __getattr__(self, name):
        if not self._path and not callable(getattr(self._hp, name, None)):
            return getattr(self._hp, name)

        def call(*args, **kwargs):
            path = self._path + ((name, args, kwargs),)
            if name in self.DIRECT:
                return self._replay(self._hp, path)
            with self._hp.pipeline(transaction=self._transaction) as p:
                out = self._replay(p, path)
                if isinstance(out, _Entity):
                    return Queueing(self._hp, self._transaction, path)
                assert out is p.client and len(p) == 1, (name, out)
                return p.execute()[0]
        return call

    @staticmethod
    def _replay(target, path):
        for name, args, kwargs in path:
            target = getattr(target, name)(*args, **kwargs)
        return target


class AsyncSuite:
    """What Families asks of an asyncio suite (``self.hp`` an
    :class:`Awaiting`, ``self.loop`` its event loop)."""

    def spread_class(self, cls):
        return getattr(aspread, "Async" + cls.__name__)

    def backend_call(self, command, argv, keys):
        return self.loop.run_until_complete(self.hp.backend.acall(command, argv, keys))


class _AsyncFamilies(AsyncSuite, Families):
    """Families through an asyncio client, over ``protocol``."""
    protocol = 3
    cluster = False

    @classmethod
    def setUpClass(cls):
        cls.loop = asyncio.new_event_loop()
        cls.r = sync_client(cls.cluster, cls.protocol)
        cls.ar = async_client(cls.cluster, cls.protocol)
        cls.hp = Awaiting(hotpath.HotPath(cls.ar), cls.loop)

    @classmethod
    def tearDownClass(cls):
        cls.loop.run_until_complete(cls.ar.aclose())
        cls.loop.close()
        cls.r.close()

    def test_the_client_is_asyncio(self):
        hp = hotpath.HotPath(self.ar)
        self.assertEqual(hp.mode, "async")
        coro = hp.poll(self.k("p")).info()
        self.assertTrue(inspect.iscoroutine(coro))
        self.assertEqual(self.loop.run_until_complete(coro), R.PollInfo("ONCE", 1, 0, 0, 0, 0))

    def test_spread_handles_are_the_asyncio_twins(self):
        hp = hotpath.HotPath(self.ar)
        for factory, cls in (("like", hotpath.SpreadLike), ("rank", hotpath.SpreadRank),
                             ("poll", hotpath.SpreadPoll), ("luckybag", hotpath.SpreadLuckyBag),
                             ("stock", hotpath.SpreadStock)):
            h = getattr(hp, factory)(self.k("sp"), spread=4)
            self.assertIsInstance(h, getattr(hotpath.aio, "Async" + cls.__name__))
            self.assertEqual(h.retry, hp.retry)
            # Every public method of the sync handle, under the same name;
            # those that send are coroutine functions.
            sync = {n for n in dir(cls) if not n.startswith("_")}
            self.assertEqual(sync, {n for n in dir(type(h)) if not n.startswith("_")}, factory)
        coro = hp.like(self.k("sp"), spread=4).count()
        self.assertTrue(inspect.iscoroutine(coro))
        # Never created: a shard's error, named by its shard, as sync.
        with self.assertRaisesRegex(hotpath.ShardError, r"\(0 of 4\) does not exist"):
            self.loop.run_until_complete(coro)
        self.assertIsNone(self.loop.run_until_complete(hp.spread_count("LIKE", self.k("sp"))))
        # Many spread calls of one client at once.
        post = hp.like(self.k("many"), spread=4)
        self.assertTrue(self.loop.run_until_complete(post.create()))

        async def likes():
            return await asyncio.gather(*(post.add(u, now=NOW) for u in range(40)))
        changes = self.loop.run_until_complete(likes())
        self.assertEqual(sorted(c.shard for c in changes), sorted(u % 4 for u in range(40)))
        self.assertEqual(self.loop.run_until_complete(post.count()), 40)
        self.assertEqual(self.loop.run_until_complete(post.check(*range(42))), [True] * 40 + [False] * 2)

    def test_spread_handles_refuse_a_pipeline(self):
        with self.assertRaisesRegex(TypeError, "spread handles need a client .*not a pipeline"):
            hotpath.HotPath(self.ar.pipeline()).like(self.k("sp"), spread=4)


class _PipelineFamilies(Families):
    """Families through ``hp.pipeline(transaction=…)``, over ``protocol``."""
    protocol = 3
    transaction = True
    cluster = False

    @classmethod
    def setUpClass(cls):
        cls.r = sync_client(cls.cluster, cls.protocol)
        cls.hp = Queueing(hotpath.HotPath(cls.r), cls.transaction)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()


def _skip_spread(cls):
    for name in SPREAD_TESTS:
        setattr(cls, name, unittest.skip("spread handles are not queued (their reads take rounds)")(
            lambda self: None))
    return cls


class Pipelines:
    """What one command at a time cannot show. Subclasses set ``self.r``
    (sync) and ``self.ar`` (asyncio) on one server or a cluster."""

    def k(self, name):
        return f"{name}:{{{self.tag}}}"

    def setUp(self):
        self.tag = uuid.uuid4().hex[:8]

    def test_a_transaction_runs_several_commands_and_parses_each(self):
        hp = hotpath.HotPath(self.r)
        with hp.pipeline() as p:
            self.assertEqual(p.mode, "pipeline")
            p.rank(self.k("b")).incr("alice", 5, now=NOW)
            p.poll(self.k("p")).vote("u1", "x", now=NOW)
            p.poll(self.k("p")).vote("u1", "x", now=NOW)
            p.poll(self.k("p")).top()
            p.lock(self.k("l")).acquire("w", 1000, now=NOW)
            p.rate_multi([(self.k("r"), 2, 1000)], now=NOW)
            self.assertEqual(len(p), 6)
            self.assertEqual(p.execute(), [
                5, True, False, [R.PollEntry("x", 1)], 1,
                R.RateResult(True, 2, 1, -1, 500)])
            self.assertEqual(len(p), 0)
            # The pipeline is ready for more.
            p.rank(self.k("b")).get("alice")
            self.assertEqual(p.execute(), [R.RankEntry(5, 0, NOW)])

    def test_an_error_in_a_pipeline_is_raised_typed_and_the_rest_ran(self):
        hp = hotpath.HotPath(self.r)
        for transaction in (True, False):
            poll = self.k(f"p{transaction}")
            with hp.pipeline(transaction=transaction) as p:
                p.poll(poll).create(mode="MULTI", maxvotes=1, now=NOW)
                p.poll(poll).vote("u", "x", now=NOW)
                p.stock(self.k("nostock")).restock(5)
                p.poll(poll).top()
                with self.assertRaises(hotpath.errors.StockError) as cm:
                    p.execute()
                self.assertIsInstance(cm.exception, hotpath.errors.NotFound)
                self.assertIsInstance(cm.exception, redis.ResponseError)
                self.assertEqual(cm.exception.text, "no such stock")
            # A MULTI/EXEC transaction is not rolled back by an error reply:
            # the commands around it ran.
            self.assertEqual(hp.poll(poll).top(), [R.PollEntry("x", 1)])
            with hp.pipeline(transaction=transaction) as p:
                p.poll(poll).vote("u2", "x", now=NOW)
                p.lock(self.k("l")).acquire("", 1000)
                out = p.execute(raise_on_error=False)
                self.assertTrue(out[0])
                self.assertIsInstance(out[1], hotpath.errors.LockError)
                self.assertEqual(str(out[1]), "lock: user must not be empty")

    def test_a_transaction_is_atomic(self):
        # WATCH-free check: another client's write between the queued
        # commands cannot land, since they run as one.
        hp = hotpath.HotPath(self.r)
        other = hotpath.HotPath(sync_client(self.cluster))
        with hp.pipeline() as p:
            for i in range(50):
                p.rank(self.k("b")).incr("m", 1, now=NOW)
            p.rank(self.k("b")).get("m")
            other.rank(self.k("b")).incr("m", 1000, now=NOW)  # before EXEC
            out = p.execute()
        self.assertEqual(out[:50], list(range(1001, 1051)))
        self.assertEqual(out[50].points, 1050)

    def test_hotpath_over_a_redis_py_pipeline(self):
        # HotPath(r.pipeline()): the handle methods queue (and return the
        # pipeline, to chain as redis-py does); redis-py's own execute()
        # returns the parsed replies, other commands' replies as they are.
        for transaction in (True, False):
            poll = self.k(f"p{transaction}")
            with self.r.pipeline(transaction=transaction) as pipe:
                hp = hotpath.HotPath(pipe)
                self.assertIs(hp.poll(poll).vote("u", "x", now=NOW), pipe)
                hp.poll(poll).top()
                pipe.set(self.k("plain"), "v")
                pipe.get(self.k("plain"))
                hp.rank(self.k("b")).add("alice", 7, now=NOW)
                hp.like_common(self.k("l1"), self.k("l2"))
                out = pipe.execute()
            self.assertEqual(out[0:2], [True, [R.PollEntry("x", 1)]])
            self.assertEqual(out[3], b"v")
            self.assertEqual(out[4:], [7, []])
            # The same command sent raw, on the client or in a pipeline,
            # keeps its raw reply: the callback parses hotpath's own only.
            self.assertIsInstance(self.r.execute_command("POLL.TOP", poll), list)
            self.assertEqual(R.poll_top(self.r.execute_command("POLL.TOP", poll)),
                             [R.PollEntry("x", 1)])
            with self.r.pipeline(transaction=transaction) as pipe:
                pipe.execute_command("POLL.VOTE", poll, "u", "x", "NOW", NOW)
                self.assertEqual(pipe.execute(), [0])
            # An error reply comes as redis-py gives it from a pipeline;
            # hotpath.errors.typed gives its class.
            with self.r.pipeline(transaction=transaction) as pipe:
                hotpath.HotPath(pipe).stock(self.k("nostock")).restock(5)
                out = pipe.execute(raise_on_error=False)
            self.assertIsInstance(hotpath.errors.typed(out[0]), hotpath.errors.StockError)

    def test_a_handle_made_from_a_backend_sends_at_once(self):
        # How handles were made before runners: Poll(backend, key).
        p = hotpath.Poll(hotpath.ModuleBackend(self.r), self.k("p"))
        self.assertTrue(p.vote("u", "x", now=NOW))
        self.assertEqual(p.top(), [R.PollEntry("x", 1)])

    def test_a_pipeline_of_a_pipeline_is_refused(self):
        with self.r.pipeline() as pipe:
            with self.assertRaisesRegex(TypeError, "over a pipeline already"):
                hotpath.HotPath(pipe).pipeline()
            with self.assertRaisesRegex(TypeError, "audit_all needs a client"):
                hotpath.HotPath(pipe).stock(self.k("s")).audit_all()

    def test_asyncio_pipelines(self):
        async def run():
            ar = async_client(self.cluster, self.protocol)
            try:
                if self.cluster:
                    # redis-py 8.1: an asyncio RedisCluster whose first
                    # command is a raw pipeline's cannot aclose() afterwards.
                    await ar.initialize()
                hp = hotpath.HotPath(ar)
                async with hp.pipeline() as p:
                    p.rank(self.k("b")).incr("alice", 5, now=NOW)
                    p.poll(self.k("p")).vote("u1", "x", now=NOW)
                    p.stock(self.k("nostock")).info()
                    p.delayq(self.k("q")).add("j1", "payload", delay=0, now=NOW)
                    self.assertEqual(await p.execute(), [5, True, None, True])
                    p.poll(self.k("p")).vote("u1", "x", now=NOW)
                    p.stock(self.k("nostock")).restock(1)
                    with self.assertRaises(hotpath.errors.StockError):
                        await p.execute()
                    p.poll(self.k("p")).top()
                    p.lock(self.k("l")).acquire("", 1)
                    out = await p.execute(raise_on_error=False)
                    self.assertEqual(out[0], [R.PollEntry("x", 1)])
                    self.assertIsInstance(out[1], hotpath.errors.LockError)
                # redis-py's asyncio pipeline, with HotPath over it.
                for transaction in (True, False):
                    pipe = ar.pipeline(transaction=transaction)
                    h = hotpath.HotPath(pipe)
                    h.poll(self.k("p")).info()
                    h.rank(self.k("b")).top(1)
                    self.assertEqual(await pipe.execute(), [
                        R.PollInfo("ONCE", 1, 0, 0, 1, 1), [R.RankMember("alice", 5)]])
                # Coroutines of one client, at once.
                hp = hotpath.HotPath(ar)
                votes = await asyncio.gather(*(hp.poll(self.k("g")).vote(f"u{i}", "x", now=NOW)
                                               for i in range(20)))
                self.assertEqual(votes, [True] * 20)
                self.assertEqual(await hp.poll(self.k("g")).top(), [R.PollEntry("x", 20)])
            finally:
                await ar.aclose()
        asyncio.run(run())


# ---- one server -----------------------------------------------------------

@unittest.skipUnless(URL, "HOTPATH_URL not set")
class AsyncOnOneServer(_AsyncFamilies, unittest.TestCase):
    protocol = 3


@unittest.skipUnless(URL, "HOTPATH_URL not set")
class AsyncOnOneServerInResp2(_AsyncFamilies, unittest.TestCase):
    protocol = 2


@unittest.skipUnless(URL, "HOTPATH_URL not set")
@_skip_spread
class TransactionOnOneServer(_PipelineFamilies, unittest.TestCase):
    protocol = 3
    transaction = True


@unittest.skipUnless(URL, "HOTPATH_URL not set")
@_skip_spread
class PipelineOnOneServerInResp2(_PipelineFamilies, unittest.TestCase):
    protocol = 2
    transaction = False


@unittest.skipUnless(URL, "HOTPATH_URL not set")
class PipelinesOnOneServer(Pipelines, unittest.TestCase):
    protocol = 3
    cluster = False

    def setUp(self):
        super().setUp()
        self.r = sync_client(self.cluster, self.protocol)

    def tearDown(self):
        self.r.close()


@unittest.skipUnless(URL, "HOTPATH_URL not set")
class PipelinesOnOneServerInResp2(PipelinesOnOneServer):
    protocol = 2


# ---- a cluster -------------------------------------------------------------

@unittest.skipUnless(CLUSTER, "HOTPATH_CLUSTER not set")
class AsyncOnACluster(_AsyncFamilies, unittest.TestCase):
    protocol = 3
    cluster = True
    replicas = 1


@unittest.skipUnless(CLUSTER, "HOTPATH_CLUSTER not set")
class AsyncSpreadOnAClusterInResp2(_AsyncFamilies, unittest.TestCase):
    """The spread handles over asyncio on a cluster in RESP2 (the other
    families' RESP2 runs are on one server)."""
    protocol = 2
    cluster = True
    replicas = 1


for _name in [n for n in dir(Families) if n.startswith("test_") and n not in SPREAD_TESTS]:
    setattr(AsyncSpreadOnAClusterInResp2, _name, unittest.skip("AsyncOnACluster runs it")(
        lambda self: None))


@unittest.skipUnless(CLUSTER, "HOTPATH_CLUSTER not set")
@_skip_spread
class TransactionOnACluster(_PipelineFamilies, unittest.TestCase):
    protocol = 2
    transaction = True
    cluster = True


@unittest.skipUnless(CLUSTER, "HOTPATH_CLUSTER not set")
class PipelinesOnACluster(Pipelines, unittest.TestCase):
    protocol = 3
    cluster = True

    @classmethod
    def setUpClass(cls):
        cls.r = sync_client(cls.cluster, cls.protocol)

    @classmethod
    def tearDownClass(cls):
        cls.r.close()


if __name__ == "__main__":
    unittest.main()
