"""Writes src/hotpath/aio.py: the types of the entity handles on an asyncio
client, generated from src/hotpath/client.py (each method's parameters as
they are, its reply type ``T`` as ``Awaitable[T]``). Run it after changing
a handle; ``--check`` fails when aio.py is not what it would write
(tests/test_api.py runs the check).

    python3 clients/python/tools/gen_aio.py [--check]
"""
import ast
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src", "hotpath")
HANDLES = ["Poll", "Rank", "Like", "RedPacket", "LuckyBag", "Rate", "Lock", "DelayQueue", "Idem",
           "Stock"]
#: HotPath's methods that give a handle, and those that stay sync.
FACTORIES = {h.lower(): h for h in HANDLES}
FACTORIES.update({"redpacket": "RedPacket", "luckybag": "LuckyBag", "delayq": "DelayQueue"})
SYNC_ONLY = {"spread_count", "pipeline"}

HEAD = '''"""The entity handles' types on an asyncio client (``redis.asyncio``):
:class:`AsyncHotPath` is :class:`hotpath.HotPath` as it behaves there, each
handle method returning an awaitable of the sync method's reply type.

    hp = hotpath.aio.typed(hotpath.HotPath(redis.asyncio.Redis()))
    counted = await hp.poll("poll:{42}").vote("user:1", "alice")   # bool

At run time ``typed`` returns the same object (it checks the client is an
asyncio one); the classes here are typing protocols. Generated from
client.py by clients/python/tools/gen_aio.py: do not edit.
"""
from __future__ import annotations

from typing import Any, Awaitable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple

from . import replies as R
from .client import Arg, AsyncPipeline, Backend, HotPath, Key
'''

TAIL = '''

def typed(hp: HotPath) -> AsyncHotPath:
    """``hp`` (a :class:`hotpath.HotPath` over a ``redis.asyncio`` client)
    typed as :class:`AsyncHotPath`."""
    if hp.mode != "async":
        raise TypeError(f"hotpath.aio.typed needs a HotPath over an asyncio client, not {hp.mode}")
    return hp  # type: ignore[return-value]


__all__ = ["AsyncHotPath", "typed", %s]
'''


def _doc(fn):
    doc = ast.get_docstring(fn)
    return doc.split("\n\n")[0].replace("\n", " ") if doc else ""


def _method(fn, ret):
    args = ast.unparse(fn.args)
    doc = _doc(fn)
    lines = [f"    def {fn.name}({args}) -> {ret}:"]
    if doc:
        lines.append(f'        """{doc}"""')
    lines.append("        ...")
    return "\n".join(lines)


def generate():
    with open(os.path.join(SRC, "client.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    out = [HEAD]
    for name in HANDLES:
        cls = classes[name]
        out.append(f"\nclass Async{name}(Protocol):")
        out.append(f'    """:class:`hotpath.{name}` on an asyncio client."""')
        out.append("    key: Key\n")
        methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)
                   and not n.name.startswith("_")]
        out.append("\n\n".join(_method(fn, f"Awaitable[{ast.unparse(fn.returns)}]")
                               for fn in methods))
        out.append("")
    hp = classes["HotPath"]
    out.append("\nclass AsyncHotPath(Protocol):")
    out.append('    """:class:`hotpath.HotPath` over a ``redis.asyncio`` client (spread\n'
               '    handles need a sync client)."""')
    out.append("    client: Any")
    out.append("    backend: Backend\n")
    methods = []
    for fn in hp.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        if any(isinstance(d, ast.Name) and d.id in ("overload", "property")
               for d in fn.decorator_list):
            continue
        if fn.name in FACTORIES:
            methods.append(f"    def {fn.name}(self, key: Key) -> Async{FACTORIES[fn.name]}:\n"
                           f'        """{_doc(fn).split(";")[0].rstrip(".")}."""\n        ...')
        elif fn.name == "pipeline":
            methods.append(_method(fn, "AsyncPipeline"))
        elif fn.name not in SYNC_ONLY:
            methods.append(_method(fn, f"Awaitable[{ast.unparse(fn.returns)}]"))
    out.append("\n\n".join(methods))
    names = ", ".join(f'"Async{h}"' for h in HANDLES)
    return "\n".join(out) + "\n" + TAIL % names


def main():
    path = os.path.join(SRC, "aio.py")
    text = generate()
    if "--check" in sys.argv:
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                sys.exit(f"{path} is stale: run python3 clients/python/tools/gen_aio.py")
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
