"""Writes three generated files of the Python client; ``--check`` fails when
any is not what it would write (tests/test_api.py runs the check). Run it
after changing a handle or adding a family:

- src/hotpath/entities/__init__.py: the family files of src/hotpath/entities/
  gathered (each ``<family>.py`` holds its entity handles and
  ``HotPathMethods``, the ``HotPath`` methods that give them): their imports,
  ``__all__`` (the entity handles) and ``Families`` (``HotPath``'s base, with
  every family's methods), so that a new family edits no shared file;
- src/hotpath/aio.py: the types of the entity handles on an asyncio
  client, generated from the family files and ``HotPath`` (client.py): each
  method's parameters as they are, its reply type ``T`` as ``Awaitable[T]``;
- src/hotpath/aspread.py: the asyncio spread handles, generated from the
  sync ones (spread*.py; see "the asyncio spread handles" below).

    python3 clients/python/tools/gen_aio.py [--check]
"""
import ast
import copy
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src", "hotpath")
ENTITIES = os.path.join(SRC, "entities")
#: HotPath's methods that stay sync.
SYNC_ONLY = {"pipeline"}

ENTITIES_HEAD = '''"""Every family's entity handles, one file per family (``poll.py``:
:class:`Poll`, and ``HotPathMethods``, the ``HotPath`` methods that give
it), gathered: ``__all__`` lists the entity handles, and :class:`Families`
has every family's ``HotPath`` methods (``hotpath.HotPath`` derives from it).
A new family adds its file here and runs clients/python/tools/gen_aio.py,
which wrote this file from the files of this folder: do not edit.
"""
'''


def family_modules():
    """The family files of src/hotpath/entities/ (every ``.py`` but
    ``__init__.py``), in name order: (module name, its syntax tree)."""
    out = []
    for name in sorted(os.listdir(ENTITIES)):
        if name.endswith(".py") and name != "__init__.py":
            with open(os.path.join(ENTITIES, name), encoding="utf-8") as f:
                out.append((name[:-3], ast.parse(f.read())))
    return out


def _entity_classes(tree):
    """A family file's entity handles: its classes deriving from ``_Entity``."""
    return [n for n in tree.body if isinstance(n, ast.ClassDef)
            and any(isinstance(b, ast.Name) and b.id == "_Entity" for b in n.bases)]


def _hotpath_methods(tree):
    """A family file's ``class HotPathMethods``, or None."""
    return next((n for n in tree.body if isinstance(n, ast.ClassDef)
                 and n.name == "HotPathMethods"), None)


def generate_entities():
    """The text of entities/__init__.py."""
    out = [ENTITIES_HEAD.rstrip("\n")]
    names, bases = [], []
    for mod, tree in family_modules():
        imported = [c.name for c in _entity_classes(tree)]
        names += imported
        if _hotpath_methods(tree) is not None:
            alias = "_" + mod.capitalize() + "Methods"
            imported.append(f"HotPathMethods as {alias}")
            bases.append(alias)
        if imported:
            out.append(f"from .{mod} import {', '.join(imported)}")
    out.append("\n")
    out.append("class Families(" + "".join(f"\n    {b}," for b in bases) + "\n):")
    out.append('    """``HotPath``\'s methods of every family (each family file\'s\n'
               '    ``HotPathMethods``)."""')
    out.append("\n")
    out.append(textwrap.fill(", ".join(f'"{n}"' for n in names), 99, initial_indent="__all__ = [",
                             subsequent_indent=" " * 11, break_on_hyphens=False) + "]")
    return "\n".join(out) + "\n"


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

from typing import (Any, Awaitable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple,
                    overload)

from . import replies as R
from .aspread import (AsyncSpreadLike, AsyncSpreadLuckyBag, AsyncSpreadPoll, AsyncSpreadRank,
                      AsyncSpreadStock)
from .client import Arg, AsyncPipeline, Backend, HotPath, Key
'''

TAIL = '''

def typed(hp: HotPath) -> AsyncHotPath:
    """``hp`` (a :class:`hotpath.HotPath` over a ``redis.asyncio`` client)
    typed as :class:`AsyncHotPath`."""
    if hp.mode != "async":
        raise TypeError(f"hotpath.aio.typed needs a HotPath over an asyncio client, not {hp.mode}")
    return hp  # type: ignore[return-value]


__all__ = ["AsyncHotPath", "typed", "AsyncSpreadLike", "AsyncSpreadLuckyBag", "AsyncSpreadPoll",
           "AsyncSpreadRank", "AsyncSpreadStock", %s]
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
    """The text of aio.py."""
    with open(os.path.join(SRC, "client.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    hp = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "HotPath")
    # The entity handles, and HotPath's methods: its own (client.py), then
    # each family's (entities/<family>.py), in file order.
    handles = []
    body = list(hp.body)
    for _, t in family_modules():
        handles += _entity_classes(t)
        methods = _hotpath_methods(t)
        if methods is not None:
            body += methods.body
    names = [c.name for c in handles]
    out = [HEAD]
    for cls in handles:
        out.append(f"\nclass Async{cls.name}(Protocol):")
        out.append(f'    """:class:`hotpath.{cls.name}` on an asyncio client."""')
        out.append("    key: Key\n")
        methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)
                   and not n.name.startswith("_")]
        out.append("\n\n".join(_method(fn, f"Awaitable[{ast.unparse(fn.returns)}]")
                               for fn in methods))
        out.append("")
    out.append("\nclass AsyncHotPath(Protocol):")
    out.append('    """:class:`hotpath.HotPath` over a ``redis.asyncio`` client (spread\n'
               '    handles: ``hotpath.aspread``)."""')
    out.append("    client: Any")
    out.append("    backend: Backend\n")
    methods = []
    for fn in body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
            continue
        if any(isinstance(d, ast.Name) and d.id in ("overload", "property")
               for d in fn.decorator_list):
            continue
        spread = [ast.unparse(o.returns).strip("'\"") for o in body
                  if isinstance(o, ast.FunctionDef) and o.name == fn.name and o is not fn
                  and any(a.arg == "spread" and ast.unparse(a.annotation) == "int"
                          for a in o.args.args)]
        # A factory: a method whose reply is an entity handle.
        gives = [n.id for n in ast.walk(fn.returns) if isinstance(n, ast.Name)
                 and n.id in names] if fn.returns is not None else []
        if gives and spread:
            doc = _doc(fn).split(";")[0].rstrip(".")
            methods.append(f"    @overload\n    def {fn.name}(self, key: Key, spread: None = None)"
                           f" -> Async{gives[0]}: ...\n\n"
                           f"    @overload\n    def {fn.name}(self, key: Key, spread: int)"
                           f" -> Async{spread[0]}: ...\n\n"
                           f"    def {fn.name}(self, key: Key, spread: Optional[int] = None) -> "
                           f"Async{gives[0]} | Async{spread[0]}:\n"
                           f'        """{doc}; with ``spread=n``, its asyncio spread handle."""\n'
                           f"        ...")
        elif gives:
            methods.append(f"    def {fn.name}(self, key: Key) -> Async{gives[0]}:\n"
                           f'        """{_doc(fn).split(";")[0].rstrip(".")}."""\n        ...')
        elif fn.name == "pipeline":
            methods.append(_method(fn, "AsyncPipeline"))
        elif fn.name not in SYNC_ONLY:
            methods.append(_method(fn, f"Awaitable[{ast.unparse(fn.returns)}]"))
    out.append("\n\n".join(methods))
    return "\n".join(out) + "\n" + TAIL % ", ".join(f'"Async{n}"' for n in names)



# ---- the asyncio spread handles (src/hotpath/aspread.py) -------------------
#
# The spread handles are written once, sync (spread.py, spread_poll.py,
# spread_rank.py, spread_stock.py). Their asyncio twins are the same code
# with every send awaited: this transform makes each function that sends
# (through ``backend.call``/``call_many``/``call_many_durable`` or the retry
# policy's ``run``/``run_many``, directly or through another such function)
# an ``async def``, awaits its calls, renames the sends to their asyncio
# forms (``acall``, ``acall_many``, ``acall_many_durable``, ``arun``,
# ``arun_many``), and gives each class that sends an ``Async`` twin. A
# generator that sends becomes an async generator (iterated by ``async
# for``). Everything that does not send (dataclasses, parsers, ``Shards``,
# the errors) is imported from the sync modules, not copied.

SPREAD_MODULES = ["spread", "spread_poll", "spread_rank", "spread_stock"]
#: The sends and their asyncio names: on a backend, and on the retry policy.
BACKEND_SENDS = {"call": "acall", "call_many": "acall_many",
                 "call_many_durable": "acall_many_durable"}
RETRY_SENDS = {"run": "arun", "run_many": "arun_many"}
#: The receivers whose methods may send: the handle itself, the handle a
#: helper is given (``poll``), a helper object (``m``).
RECEIVERS = {"self", "poll", "m"}

ASPREAD_HEAD = '''"""The spread handles on an asyncio client (``redis.asyncio.Redis`` or
``redis.asyncio.RedisCluster``): :class:`AsyncSpreadLike`,
:class:`AsyncSpreadLuckyBag`, :class:`AsyncSpreadPoll`,
:class:`AsyncSpreadRank` and :class:`AsyncSpreadStock`, what
``HotPath(redis.asyncio…).like(key, spread=n)`` (…) gives. Each is its sync
handle (``hotpath.SpreadLike``, …) with every method that sends commands a
coroutine: the same commands, the same merges, the same replies and errors.

    hp = hotpath.aio.typed(hotpath.HotPath(redis.asyncio.RedisCluster(…)))
    post = hp.like("post:{9}", spread=8)
    await post.create()
    await post.toggle(42)            # ShardLikeChange(changed=True, shard=2, count=1)
    await post.count()               # the sum over the shards

Generated from the sync handles by clients/python/tools/gen_aio.py: do not
edit.
"""
'''


def _parse(mod):
    with open(os.path.join(SRC, mod + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read())


def _funcs(node):
    """The functions of a module: its own and its classes' methods."""
    for n in node.body:
        if isinstance(n, ast.FunctionDef):
            yield n
        elif isinstance(n, ast.ClassDef):
            for m in n.body:
                if isinstance(m, ast.FunctionDef):
                    yield m


def _has_yield(fn):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(fn))


def _sends(call, io, gens):
    """Whether ``call`` sends (and is awaited): a backend's or the retry
    policy's send, or a sending function's call (not an async generator's:
    that one is iterated)."""
    f = call.func
    if isinstance(f, ast.Attribute):
        v = f.value
        if f.attr in BACKEND_SENDS and (
                (isinstance(v, ast.Attribute) and v.attr == "backend")
                or (isinstance(v, ast.Name) and v.id == "backend")):
            return True
        if f.attr in RETRY_SENDS and isinstance(v, ast.Attribute) and v.attr == "retry":
            return True
        if isinstance(v, ast.Name) and v.id in RECEIVERS and f.attr in io:
            return f.attr not in gens
    if isinstance(f, ast.Name) and f.id in io:
        return f.id not in gens
    return False


def _iterates(node, gens):
    """Whether a ``for`` iterates an async generator of ours."""
    it = node.iter
    return (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute)
            and isinstance(it.func.value, ast.Name) and it.func.value.id in RECEIVERS
            and it.func.attr in gens)


def _io_functions(trees):
    """The names of the functions that send, directly or not (a fixpoint
    over every spread module), and those among them that are generators."""
    funcs = [fn for t in trees for fn in _funcs(t)]
    io, gens = set(), set()
    while True:
        before = (len(io), len(gens))
        for fn in funcs:
            if fn.name in io:
                continue
            for n in ast.walk(fn):
                if (isinstance(n, ast.Call) and _sends(n, io, gens)) or (
                        isinstance(n, ast.For) and _iterates(n, gens)):
                    io.add(fn.name)
                    if _has_yield(fn):
                        gens.add(fn.name)
                    break
        if (len(io), len(gens)) == before:
            return io, gens


class _Async(ast.NodeTransformer):
    """Rewrites one sending function into its asyncio form."""

    def __init__(self, io, gens, renames):
        self.io, self.gens, self.renames = io, gens, renames
        self.in_lambda = 0

    def visit_FunctionDef(self, node):
        # A function defined inside a sending one (a step handed to the
        # retry policy) is async when it sends.
        self.depth = getattr(self, "depth", 0) + 1
        self.generic_visit(node)
        self.depth -= 1
        if self.depth and any(isinstance(n, ast.Await) for n in ast.walk(node)):
            return ast.AsyncFunctionDef(name=node.name, args=node.args, body=node.body,
                                        decorator_list=node.decorator_list,
                                        returns=node.returns, type_comment=None)
        return node

    def visit_Lambda(self, node):
        # A lambda handed to the retry policy returns the coroutine (the
        # policy awaits it): its send is renamed, not awaited.
        self.in_lambda += 1
        self.generic_visit(node)
        self.in_lambda -= 1
        return node

    def visit_Call(self, node):
        sends = _sends(node, self.io, self.gens)
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Attribute):
            if f.attr in BACKEND_SENDS and sends:
                f.attr = BACKEND_SENDS[f.attr]
            elif f.attr in RETRY_SENDS and sends:
                f.attr = RETRY_SENDS[f.attr]
        if isinstance(f, ast.Name) and f.id in self.renames:
            f.id = self.renames[f.id]
        if sends and not self.in_lambda:
            return ast.Await(value=node)
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        if _iterates(node, self.gens):
            return ast.AsyncFor(target=node.target, iter=node.iter, body=node.body,
                                orelse=node.orelse)
        return node

    def visit_YieldFrom(self, node):
        # ``yield from x`` has no async form: the caller's statement is
        # rewritten (visit_Expr).
        raise SystemExit("gen_aio: `yield from` outside a statement")

    def visit_Expr(self, node):
        if isinstance(node.value, ast.YieldFrom):
            item = ast.Name(id="_item", ctx=ast.Store())
            return ast.For(target=item, iter=self.visit(node.value.value),
                           body=[ast.Expr(ast.Yield(ast.Name(id="_item", ctx=ast.Load())))],
                           orelse=[])
        self.generic_visit(node)
        return node


class _Rename(ast.NodeTransformer):
    """Renames the classes that have an asyncio twin (names, and the
    string annotations that name them), and ``Iterator`` to
    ``AsyncIterator`` where an async generator is returned."""

    def __init__(self, renames, iterator=False):
        self.renames = renames
        self.iterator = iterator

    def visit_Name(self, node):
        if node.id in self.renames:
            node.id = self.renames[node.id]
        elif self.iterator and node.id == "Iterator":
            node.id = "AsyncIterator"
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value in self.renames:
            node.value = self.renames[node.value]
        return node


def _async_function(fn, io, gens, renames):
    returns_gen = fn.name in gens or any(
        isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Attribute) and n.value.func.attr in gens
        for n in ast.walk(fn))
    fn = _Rename(renames, iterator=returns_gen).visit(copy.deepcopy(fn))
    if fn.name not in io:
        return fn
    fn = _Async(io, gens, renames).visit(fn)
    out = ast.AsyncFunctionDef(name=fn.name, args=fn.args, body=fn.body,
                               decorator_list=fn.decorator_list, returns=fn.returns,
                               type_comment=None)
    if isinstance(fn, ast.FunctionDef) and fn.name in renames:
        out.name = renames[fn.name]
    return out


def _class_doc(cls, sync_name):
    doc = ast.get_docstring(cls) or ""
    head = (f":class:`hotpath.{sync_name}` on an asyncio client (generated): each "
            f"method that sends commands is a coroutine." if not sync_name.startswith("_")
            else f"``{sync_name}`` on an asyncio client (generated).")
    return head + ("\n\n    " + doc.replace("\n", "\n    ") if doc else "")


def generate_spread():
    """The text of aspread.py."""
    trees = {m: _parse(m) for m in SPREAD_MODULES}
    io, gens = _io_functions(trees.values())
    # The classes with a method that sends, and their subclasses, get an
    # asyncio twin; so do the module functions that send.
    renames = {}
    for t in trees.values():
        for n in t.body:
            if isinstance(n, ast.ClassDef) and (
                    any(isinstance(m, ast.FunctionDef) and m.name in io for m in n.body)
                    or any(isinstance(b, ast.Name) and b.id in renames for b in n.bases)):
                renames[n.name] = ("_Async" + n.name[1:]) if n.name.startswith("_") \
                    else "Async" + n.name
            elif isinstance(n, ast.FunctionDef) and n.name in io:
                renames[n.name] = "a" + n.name
    body = []
    origins = []
    defined = set()
    typing_names = {"AsyncIterator"}
    imports = {}
    for mod, t in trees.items():
        for n in t.body:
            if isinstance(n, ast.ImportFrom) and n.module == "typing":
                typing_names.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom) and n.level == 1 and n.module in SPREAD_MODULES:
                pass
            elif isinstance(n, (ast.Import, ast.ImportFrom)) and not (
                    isinstance(n, ast.ImportFrom) and n.module == "__future__"):
                imports.setdefault((type(n).__name__, n.module if isinstance(n, ast.ImportFrom)
                                    else None, getattr(n, "level", 0)), []).extend(n.names)
            elif isinstance(n, ast.ClassDef) and n.name in renames:
                cls = _Rename(renames).visit(copy.deepcopy(n))
                cls.name = renames[n.name]
                doc = _class_doc(n, n.name)
                rest = cls.body[1:] if ast.get_docstring(n) else cls.body
                methods = [(_async_function(m, io, gens, renames)
                            if isinstance(m, ast.FunctionDef) else m) for m in rest]
                cls.body = [ast.Expr(ast.Constant(doc))] + methods
                body.append(cls)
                origins.append(mod)
                defined.add(cls.name)
            elif isinstance(n, ast.FunctionDef) and n.name in renames:
                body.append(_async_function(n, io, gens, renames))
                origins.append(mod)
                defined.add(renames[n.name])
            elif isinstance(n, ast.Assign) and not any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets) and any(
                    isinstance(c, ast.Constant) and c.value in renames for c in ast.walk(n)):
                # A TypeVar bound to a class that has a twin: its own.
                body.append(_Rename(renames).visit(copy.deepcopy(n)))
                origins.append(mod)
                defined.update(t.id for t in n.targets if isinstance(t, ast.Name))
    # What the generated code names from the sync modules: each body's
    # names from its own module first (two modules' private helpers of one
    # name are imported under an alias).
    tops = {}
    same = {}  # (module, name) -> its assignment (``Arg = Any`` is one name)
    for mod, t in trees.items():
        for n in t.body:
            if isinstance(n, (ast.ClassDef, ast.FunctionDef)):
                tops.setdefault(mod, set()).add(n.name)
            elif isinstance(n, ast.Assign):
                tops.setdefault(mod, set()).update(
                    x.id for x in n.targets if isinstance(x, ast.Name))
                for x in n.targets:
                    if isinstance(x, ast.Name):
                        same[(mod, x.id)] = ast.unparse(n)
    from_sync = {}  # the name in aspread.py -> (module, its name there)
    for b, mod in zip(body, origins):
        names = {n.id for n in ast.walk(b) if isinstance(n, ast.Name)}
        names |= {n.value for n in ast.walk(b)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and n.value.isidentifier()}
        alias = {}
        for name in sorted(names):
            if name in defined or name in renames:
                continue
            owner = mod if name in tops.get(mod, ()) else next(
                (m for m in SPREAD_MODULES if name in tops.get(m, ())), None)
            if owner is None:
                continue
            local = name
            first = from_sync.get(name, (owner, name))
            if first != (owner, name) and same.get(first) is not None \
                    and same.get(first) == same.get((owner, name)):
                continue
            if first != (owner, name):
                local = f"_{owner}{name}" if name.startswith("_") else f"{owner}_{name}"
                alias[name] = local
            from_sync[local] = (owner, name)
        if alias:
            for n in ast.walk(b):
                if isinstance(n, ast.Name) and n.id in alias:
                    n.id = alias[n.id]
    used = {n.id for b in body for n in ast.walk(b) if isinstance(n, ast.Name)}
    out = [ASPREAD_HEAD, "from __future__ import annotations\n"]
    # The sync modules' imports that the generated code uses.
    lines = []
    for (kind, module, level), aliases in imports.items():
        names = sorted({ast.unparse(a) for a in aliases
                        if (a.asname or a.name).split(".")[0] in used})
        if not names:
            continue
        if kind == "Import":
            lines += [f"import {n}" for n in names]
        else:
            lines.append(f"from {'.' * level}{module or ''} import {', '.join(names)}"
                         .replace("from . import", "from . import"))
    lines.append("from typing import " + ", ".join(sorted(n for n in typing_names if n in used)))
    out += sorted(lines, key=lambda l: (l.startswith("from"), l.startswith("from ."), l))
    for mod in SPREAD_MODULES:
        names = sorted(n if n == orig else f"{orig} as {n}"
                       for n, (m, orig) in from_sync.items() if m == mod)
        if names:
            out.append(f"from .{mod} import " + ", ".join(names))
    out.append("")
    for b in body:
        ast.fix_missing_locations(b)
        out.append("\n" + ast.unparse(b) + "\n")
    public = [renames[n] for n in renames if not n.startswith("_") and n[0].isupper()]
    out.append("\n__all__ = [" + ", ".join(f'"{n}"' for n in public) + "]\n")
    return "\n".join(out)


def main():
    for name, text in ((os.path.join("entities", "__init__.py"), generate_entities()),
                       ("aio.py", generate()), ("aspread.py", generate_spread())):
        path = os.path.join(SRC, name)
        if "--check" in sys.argv:
            try:
                with open(path, encoding="utf-8") as f:
                    current = f.read()
            except FileNotFoundError:
                current = None
            if current != text:
                sys.exit(f"{path} is stale: run python3 clients/python/tools/gen_aio.py")
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


if __name__ == "__main__":
    main()
