"""The client on a server without the module: every family's calls of
test_client.Families, through the Functions library (lua-compat/generated/
hotpath.lua) that ``HotPath``'s default backend falls back to.

Environment: ``HOTPATH_FUNCTIONS_URL``, a server without the module (the
test loads the library with FUNCTION LOAD REPLACE). tests/
clients_fallback.rs starts one and runs this file.
"""
import os
import unittest

import redis

import hotpath
from hotpath import fallback
from test_client import NOW, Families

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

    def test_spread_stock(self):
        # STOCK's spread form has no twins: the library refuses SPREAD.
        with self.assertRaisesRegex(Exception, "SPREAD is not supported by the Lua twins"):
            self.hp.stock(self.k("ssku"), spread=3).create(5)

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

    def test_spread_stock(self):
        # STOCK's spread form has no twins: the library refuses SPREAD.
        with self.assertRaisesRegex(Exception, "SPREAD is not supported by the Lua twins"):
            self.hp.stock(self.k("ssku"), spread=3).create(5)


if __name__ == "__main__":
    unittest.main()
