"""The public surface of the package (no server needed): ``__all__`` says
what is public, every public signature names only public types (issue
25: no internal union such as ``LikeToggle | ShardLikeChange`` leaks out),
and every public method of a handle has a docstring."""
import collections.abc
import inspect
import os
import subprocess
import sys
import typing
import unittest

import hotpath

NAMESPACE = {n: getattr(hotpath, n) for n in hotpath.__all__}

#: Where a public signature may take its types from besides the package.
OUTSIDE = {"builtins", "typing", "collections.abc", "types"}


def _public_methods(cls):
    for name, member in inspect.getmembers(cls):
        if name.startswith("_") or isinstance(member, property):
            continue
        if inspect.isfunction(member):
            yield name, member


def _signatures(fn):
    """The type hints of ``fn``, or of each of its overloads."""
    variants = typing.get_overloads(fn) or [fn]
    for v in variants:
        yield typing.get_type_hints(v, globalns=vars(inspect.getmodule(fn)), localns=NAMESPACE)


def _classes(t):
    """Every class an annotation names."""
    origin = typing.get_origin(t)
    if origin is not None:
        if origin not in (typing.Union, typing.Literal):
            yield origin
        for a in typing.get_args(t):
            for b in (a if isinstance(a, list) else [a]):  # Callable[[args], ret]
                if b is not Ellipsis and not isinstance(b, (str, int)):
                    yield from _classes(b)
    elif isinstance(t, type):
        yield t
    elif isinstance(t, typing.TypeVar) or t is typing.Any or t is None:
        return
    else:
        yield t


def _union_members(t):
    if typing.get_origin(t) is typing.Union:
        return [a for a in typing.get_args(t) if a is not type(None)]
    return [t]


class PublicApi(unittest.TestCase):
    def test_all_lists_only_what_exists(self):
        for n in hotpath.__all__:
            self.assertTrue(hasattr(hotpath, n), n)
        self.assertEqual(len(hotpath.__all__), len(set(hotpath.__all__)))
        # The reply parsers are the client's own, not the package's names.
        for internal in ("text", "integer", "array", "rows", "like_toggle", "Runner", "SyncRunner"):
            self.assertNotIn(internal, hotpath.__all__)
            self.assertFalse(hasattr(hotpath, internal), internal)

    def test_public_signatures_name_public_types_only(self):
        exported = {id(v) for v in NAMESPACE.values()}
        checked = 0
        for cname, cls in NAMESPACE.items():
            if not inspect.isclass(cls) or issubclass(cls, BaseException):
                continue
            for mname, fn in _public_methods(cls):
                for hints in _signatures(fn):
                    checked += 1
                    for arg, t in hints.items():
                        for c in _classes(t):
                            where = f"{cname}.{mname} {arg}: {t}"
                            module = getattr(c, "__module__", "")
                            self.assertTrue(id(c) in exported or module in OUTSIDE
                                            or c in (collections.abc.Awaitable,), where)
                    ret = hints.get("return")
                    members = [m for m in _union_members(ret) if inspect.isclass(m)
                               and getattr(m, "__module__", "").startswith("hotpath")]
                    self.assertLessEqual(len(members), 1,
                                         f"{cname}.{mname} returns a union {ret}")
        self.assertGreater(checked, 150)

    def test_spread_factories_have_one_type_per_form(self):
        hints = [typing.get_type_hints(v, localns=NAMESPACE)["return"]
                 for v in typing.get_overloads(hotpath.HotPath.like)]
        self.assertEqual(hints, [hotpath.Like, hotpath.SpreadLike])

    def test_public_methods_have_docstrings(self):
        # Every family's entity, as the family files declare them (hotpath/entities/).
        entities = [getattr(hotpath, n) for n in hotpath.entities.__all__
                    if isinstance(getattr(hotpath, n), type)]
        self.assertIn(hotpath.Stock, entities)
        handles = [hotpath.HotPath, hotpath.Pipeline, hotpath.AsyncPipeline, *entities]
        missing = [f"{c.__name__}.{n}" for c in handles for n, fn in _public_methods(c)
                   if not (fn.__doc__ or "").strip()]
        self.assertEqual(missing, [])

    def test_the_asyncio_types_are_generated_from_the_handles(self):
        tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "gen_aio.py")
        out = subprocess.run([sys.executable, tool, "--check"], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        # One protocol method per public handle method.
        for name in ("Poll", "Rank", "Like", "Stock", "DelayQueue"):
            sync = {n for n, _ in _public_methods(getattr(hotpath, name))}
            proto = {n for n in vars(getattr(hotpath.aio, "Async" + name))
                     if not n.startswith("_") and n != "key"}
            self.assertEqual(sync, proto, name)

    def test_typed_accepts_asyncio_only(self):
        import redis
        import redis.asyncio
        hp = hotpath.HotPath(redis.asyncio.Redis())
        self.assertIs(hotpath.aio.typed(hp), hp)
        with self.assertRaisesRegex(TypeError, "needs a HotPath over an asyncio client, not sync"):
            hotpath.aio.typed(hotpath.HotPath(redis.Redis()))


if __name__ == "__main__":
    unittest.main()
