"""The client on a server without the module: every family's calls of
test_client.Families, through the Functions library (lua-compat/generated/
hotpath.lua) that ``HotPath``'s default backend falls back to.

Environment: ``HOTPATH_FUNCTIONS_URL``, a server without the module (the
test loads the library with FUNCTION LOAD REPLACE). tests/
clients_fallback.rs starts one and runs this file.
"""
import asyncio
import os
import unittest

import redis
import redis.asyncio as aredis

import hotpath
from hotpath import fallback
from hotpath import replies as R
from test_client import NOW, Families
from test_modes import SPREAD_TESTS, AsyncSuite, Awaiting, Queueing

HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY = os.environ.get("HOTPATH_LIBRARY",
                         os.path.join(HERE, "..", "..", "..", "lua-compat", "generated", "hotpath.lua"))
URL = os.environ.get("HOTPATH_FUNCTIONS_URL")
# The LIKE configs of the module servers test_client.Families runs against
# (tests/clients.rs loads the module with like-recent 10): the twins take
# them as arguments.
LIKE_CONFIGS = (4294967295, 512, 10)


class TwinArgs(unittest.TestCase):
    """The module's arguments as the twins take them."""

    def test_keys_leave_argv(self):
        self.assertEqual(fallback.twin_args("POLL.VOTE", ["p", "u", "c"], ["p"]), ["u", "c"])

    def test_rate_multi_drops_numkeys(self):
        argv = [2, "a", "b", "LIMITS", 5, 1000, 6, 1000]
        self.assertEqual(fallback.twin_args("RATE.MULTI", argv, ["a", "b"]),
                         ["LIMITS", 5, 1000, 6, 1000])

    def test_rank_merge_keeps_numkeys(self):
        argv = ["d", 2, "a", "b", "AGGREGATE", "MAX"]
        self.assertEqual(fallback.twin_args("RANK.MERGE", argv, ["d", "a", "b"]),
                         [2, "AGGREGATE", "MAX"])

    def test_like_takes_its_configs_first(self):
        self.assertEqual(fallback.twin_args("LIKE.ADD", ["p", 7], ["p"], (9, 512, 0)),
                         [9, 512, 0, 7])

    def test_function_names(self):
        self.assertEqual(fallback.function_name("DELAYQ.POLL"), "hotpath_delayq_poll")


def load_library(r):
    with open(LIBRARY, "rb") as f:
        r.execute_command("FUNCTION", "LOAD", "REPLACE", f.read())


@unittest.skipUnless(URL, "HOTPATH_FUNCTIONS_URL not set")
class OnTheFunctionsLibrary(Families, unittest.TestCase):
    """Every family's calls, their replies checked exactly as against the
    module, on a server that has only the library."""

    @classmethod
    def setUpClass(cls):
        cls.r = redis.Redis.from_url(URL)
        load_library(cls.r)
        cls.hp = hotpath.HotPath(cls.r, backend=hotpath.FallbackBackend(cls.r, LIKE_CONFIGS))

    def test_the_server_has_no_module_and_the_client_fell_back(self):
        with self.assertRaisesRegex(redis.ResponseError, "unknown command"):
            self.r.execute_command("POLL.INFO", self.k("p"))
        hp = hotpath.HotPath(self.r)
        self.assertIsNone(hp.backend.mode)
        self.assertTrue(hp.poll(self.k("p")).vote("u", "x", now=NOW))
        self.assertEqual(hp.backend.mode, "functions")
        # The data is the module's layout, written by the twin.
        self.assertEqual(self.r.zscore(self.k("p") + ":board", "x"), 1.0)


@unittest.skipUnless(URL, "HOTPATH_FUNCTIONS_URL not set")
class OnTheFunctionsLibraryInResp2(Families, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = redis.Redis.from_url(URL, protocol=2)
        load_library(cls.r)
        cls.hp = hotpath.HotPath(cls.r, backend=hotpath.FunctionsBackend(cls.r, LIKE_CONFIGS))


def _skip_spread(cls):
    for name in SPREAD_TESTS:
        setattr(cls, name, unittest.skip("spread handles are not queued")(lambda self: None))
    return cls


@unittest.skipUnless(URL, "HOTPATH_FUNCTIONS_URL not set")
class AsyncOnTheFunctionsLibrary(AsyncSuite, Families, unittest.TestCase):
    """Every family's calls through an asyncio client whose default backend
    falls back to the library (decided on its first call)."""

    @classmethod
    def setUpClass(cls):
        cls.loop = asyncio.new_event_loop()
        cls.r = redis.Redis.from_url(URL)
        load_library(cls.r)
        cls.ar = aredis.Redis.from_url(URL)
        cls.backend = hotpath.FallbackBackend(cls.ar, LIKE_CONFIGS)
        cls.hp = Awaiting(hotpath.HotPath(cls.ar, backend=cls.backend), cls.loop)

    @classmethod
    def tearDownClass(cls):
        cls.loop.run_until_complete(cls.ar.aclose())
        cls.loop.close()

    def test_the_client_fell_back(self):
        self.hp.poll(self.k("p")).info()
        self.assertEqual(self.backend.mode, "functions")


@unittest.skipUnless(URL, "HOTPATH_FUNCTIONS_URL not set")
@_skip_spread
class TransactionOnTheFunctionsLibraryInResp2(Families, unittest.TestCase):
    """Every family's calls through ``hp.pipeline()`` transactions (FCALLs
    in MULTI/EXEC), over RESP2."""

    @classmethod
    def setUpClass(cls):
        cls.r = redis.Redis.from_url(URL, protocol=2)
        load_library(cls.r)
        cls.hp = Queueing(hotpath.HotPath(cls.r, backend=hotpath.FallbackBackend(cls.r, LIKE_CONFIGS)),
                          transaction=True)


@unittest.skipUnless(URL, "HOTPATH_FUNCTIONS_URL not set")
class PipelinesOnTheFunctionsLibrary(unittest.TestCase):
    """A pipeline queued before anything decided the default backend: its
    module commands, refused, go again to the library, and the backend
    stays there."""

    @classmethod
    def setUpClass(cls):
        cls.r = redis.Redis.from_url(URL)
        load_library(cls.r)

    def test_a_pipeline_decides_the_backend(self):
        for transaction in (True, False):
            hp = hotpath.HotPath(self.r)
            key = f"fb:{{{transaction}}}"
            with hp.pipeline(transaction=transaction) as p:
                p.rank(key + "b").incr("alice", 5, now=NOW)
                p.poll(key + "p").vote("u", "x", now=NOW)
                p.stock(key + "s").restock(1)
                out = p.execute(raise_on_error=False)
            self.assertEqual(out[:2], [5, True])
            self.assertIsInstance(out[2], hotpath.errors.StockError)
            self.assertEqual(hp.backend.mode, "functions")
            # The writes ran once (the refused module commands did nothing).
            self.assertEqual(hp.rank(key + "b").get("alice").points, 5)
            # Once decided, the pipeline sends FCALLs at once.
            with hp.pipeline(transaction=transaction) as p:
                p.poll(key + "p").top()
                self.assertEqual(p.execute(), [[R.PollEntry("x", 1)]])
            # HotPath over redis-py's own pipeline, with the decided backend.
            with self.r.pipeline(transaction=transaction) as pipe:
                hotpath.HotPath(pipe, backend=hp.backend).poll(key + "p").top()
                self.assertEqual(pipe.execute(), [[R.PollEntry("x", 1)]])

    def test_an_asyncio_pipeline_decides_the_backend(self):
        async def run():
            ar = aredis.Redis.from_url(URL)
            try:
                hp = hotpath.HotPath(ar)
                async with hp.pipeline() as p:
                    p.poll("fb:{a}p").vote("u", "x", now=NOW)
                    p.poll("fb:{a}p").top()
                    self.assertEqual(await p.execute(), [True, [R.PollEntry("x", 1)]])
                self.assertEqual(hp.backend.mode, "functions")
            finally:
                await ar.aclose()
        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
