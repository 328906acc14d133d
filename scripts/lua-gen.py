#!/usr/bin/env python3
"""Writes the Lua twins from their sources in lua-compat/src/.

One source tree gives both forms, so that they cannot drift apart; both go
to lua-compat/generated/, which holds nothing else (the generator writes
every file there, its README.md included, and removes any other):

- lua-compat/generated/<family>/<command>.lua, a standalone script for
  EVALSHA (any Redis, 6 included): the shared helpers, the family's
  helpers and the command's body, in one file with nothing to include;
- lua-compat/generated/hotpath.lua, one Redis Functions library (`#!lua
  name=hotpath`, Redis 7+ and Valkey) holding the same helpers once and
  one function per command, hotpath_<family>_<command>.

Sources (lua-compat/src/README.md describes them):
  shared.lua               helpers of every family
  idem_token.lua           `IDEM token` on the twins' writes (shared too)
  spread.lua               the routing of spread entities (docs/spread.md),
                           shared too; its slot-tag table is computed by
                           the Python client's routing spec
                           (clients/python/src/hotpath/routing.py, loaded
                           as a file: standard library only)
  <family>/family.lua      helpers of one family
  <family>/<command>.lua   one command's body, with a header comment and
                           `--@` lines: `--@ keys 1` (the generated code
                           refuses any other numkeys with the module's
                           arity error) or `--@ keys n` (the body checks),
                           and `--@ flags no-writes allow-oom …` (the
                           function's flags in the library).

Usage: scripts/lua-gen.py          write the generated files (`make lua-gen`)
       scripts/lua-gen.py --check  exit 1 when a committed file differs
                                   from a fresh generation, or is not one
                                   (a test runs it; `make lua-gen` too,
                                   after writing)
Standard library only: any python3 runs it.
"""

import importlib.util
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LUA = ROOT / "lua-compat"
SRC = LUA / "src"
GEN = LUA / "generated"
LIBRARY = GEN / "hotpath.lua"
ROUTING = ROOT / "clients" / "python" / "src" / "hotpath" / "routing.py"
FLAGS = {"no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"}


class SourceError(Exception):
    pass


def code_only(text):
    """Returns the text without Lua comments (for the lints)."""
    return re.sub(r"--[^\n]*", "", text)


def top_level_names(text):
    """Returns the names a helper file declares at its top level."""
    names = set()
    for line in text.splitlines():
        m = re.match(r"local function (\w+)", line) or re.match(r"local (\w+)\s*=", line)
        if m:
            names.add(m.group(1))
    return names


def definitions(path, text):
    """Splits a helper file into its top-level definitions, in order: each
    a (names it defines, names it uses, text) triple. Comment lines at the
    left margin belong to the definition after them. A helper file holds
    nothing else at its top level: only `local` definitions (and the
    `end` or `}` closing one), so that the split is exact."""
    defs = []
    pending = []
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\n")
        if stripped.startswith("--") or not stripped.strip():
            if defs and not stripped.startswith("--"):
                defs[-1][2].append(line)
            else:
                pending.append(line)
            continue
        m = re.match(r"local function (\w+)", stripped) or re.match(r"local ([\w, ]+?)\s*=", stripped)
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            defs.append([names, None, pending + [line]])
            pending = []
        elif stripped[0] in " \t" or stripped in ("end", "}", "})"):
            if not defs:
                raise SourceError(f"{path.relative_to(ROOT)}: code before the first definition: {stripped!r}")
            defs[-1][2].append(line)
        else:
            raise SourceError(f"{path.relative_to(ROOT)}: a helper file holds only `local` definitions: {stripped!r}")
    if pending:
        defs.append([[], None, pending])
    out = []
    for names, _, lines in defs:
        body = "".join(lines)
        out.append((names, set(re.findall(r"[A-Za-z_]\w*", code_only(body))), body))
    return out


def needed(defs, code):
    """The definitions that `code` uses, directly or through another
    definition, in their order. A standalone script carries only these:
    each helper is a closure made at every call of a script, so unused
    ones would cost every call (a library makes them once, at load)."""
    want = set(re.findall(r"[A-Za-z_]\w*", code_only(code)))
    keep = [False] * len(defs)
    changed = True
    while changed:
        changed = False
        for i, (names, uses, _) in enumerate(defs):
            if not keep[i] and names and any(n in want for n in names):
                keep[i] = True
                want |= uses
                changed = True
    return "".join(d[2] for d, k in zip(defs, keep) if k)


def helper_file(path, shared_names=frozenset()):
    text = path.read_text()
    if not text.endswith("\n"):
        text += "\n"
    definitions(path, text)
    # A helper lives outside the function that FCALL calls: the library has
    # no KEYS or ARGV there, so helpers take them as arguments.
    if re.search(r"\b(KEYS|ARGV)\b", code_only(text)):
        raise SourceError(f"{path.relative_to(ROOT)}: a helper must take KEYS/ARGV as arguments")
    clash = top_level_names(text) & shared_names
    if clash:
        raise SourceError(f"{path.relative_to(ROOT)}: redefines shared {sorted(clash)}")
    return text


class Command:
    def __init__(self, family, path):
        self.family = family
        self.name = path.stem
        self.source = path
        self.command = f"{family.upper()}.{self.name.upper()}"
        self.function = f"hotpath_{family}_{self.name}"
        lines = path.read_text().split("\n")
        self.header = []
        self.keys = None
        self.flags = []
        self.idem = None
        i = 0
        while i < len(lines) and lines[i].startswith("--"):
            line = lines[i]
            if line.startswith("--@"):
                parts = line[3:].split()
                if parts[:1] == ["keys"] and parts[1:] in (["1"], ["n"]):
                    self.keys = parts[1]
                elif parts[:1] == ["flags"] and parts[1:] and set(parts[1:]) <= FLAGS:
                    self.flags = parts[1:]
                elif parts[:1] == ["idem"] and len(parts) >= 2 and re.fullmatch(r"-?\d+", parts[1]):
                    self.idem = (abs(int(parts[1])), 0, [])
                    rest = parts[2:]
                    if rest[:1] == ["configs"] and len(rest) >= 2 and rest[1].isdigit():
                        self.idem = (self.idem[0], int(rest[1]), [])
                        rest = rest[2:]
                    if rest[:1] == ["record"] and len(rest) >= 2 and all(re.fullmatch(r"\w+", n) for n in rest[1:]):
                        self.idem = (self.idem[0], self.idem[1], rest[1:])
                        rest = []
                    if rest:
                        raise SourceError(f"{path.relative_to(ROOT)}: bad line {line!r}")
                else:
                    raise SourceError(f"{path.relative_to(ROOT)}: bad line {line!r}")
            else:
                self.header.append(line)
            i += 1
        if self.keys is None:
            raise SourceError(f"{path.relative_to(ROOT)}: no `--@ keys` line")
        if not self.header:
            raise SourceError(f"{path.relative_to(ROOT)}: no header comment")
        if (self.idem is not None) != self.header[0].endswith(" [IDEM token]"):
            raise SourceError(f"{path.relative_to(ROOT)}: `--@ idem` goes with a syntax ending in [IDEM token]")
        body = "\n".join(lines[i:]).lstrip("\n")
        if not body.endswith("\n"):
            body += "\n"
        self.body = body
        # The first header line is the syntax (`-- RATE.CHECK B limit …`),
        # continued on lines indented past the `--`.
        syntax = [self.header[0][2:].strip()]
        for line in self.header[1:]:
            if not line.startswith("--   "):
                break
            syntax.append(line[2:].strip())
        self.syntax = " ".join(syntax)

    def guard(self):
        """The numkeys check the generator adds, so that no twin forgets it:
        another numkeys is the module's error for a missing base key."""
        if self.keys == "1":
            return f"if #KEYS ~= 1 then return arity('{self.command.lower()}') end\n"
        return ""

    def idem_call(self, run):
        """The call of idem_token() that runs the body `run` with the
        module's `IDEM token` rules (lua-compat/src/idem_token.lua)."""
        arity, configs, record = self.idem
        nk = 1 if self.keys == "n" else 0
        names = "{" + ", ".join(lua_string(n) for n in record) + "}" if record else "nil"
        return (
            f"return idem_token('{self.command.lower()}', {arity}, {nk}, {configs}, {names},\n"
            f"  KEYS, ARGV, {run})\n"
        )


class Family:
    def __init__(self, path, shared_names):
        self.name = path.name
        self.helpers = helper_file(path / "family.lua", shared_names)
        self.definitions = definitions(path / "family.lua", self.helpers)
        self.commands = [
            Command(self.name, p) for p in sorted(path.glob("*.lua")) if p.name != "family.lua"
        ]
        if not self.commands:
            raise SourceError(f"{path.relative_to(ROOT)}: no command")


def slot_tags_literal():
    """The slot-tag table (docs/spread.md) as one Lua string: TAG[s] for
    every slot, padded to three characters with spaces (49,152 characters).
    Computed by the Python client's routing spec, the one Python
    implementation of the table's definition; a test compares the string
    with the Rust crate's table (route/)."""
    spec = importlib.util.spec_from_file_location("hotpath_routing", ROUTING)
    routing = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(routing)
    tags = routing.slot_tags()
    if len(tags) != 16384 or not all(re.fullmatch(r"[0-9A-Za-z]{1,3}", t) for t in tags):
        raise SourceError(f"{ROUTING.relative_to(ROOT)}: not 16384 tags of 1 to 3 alphanumerics")
    return "'" + "".join(t.ljust(3) for t in tags) + "'"


def shared_source():
    """shared.lua, then spread.lua (the routing of spread entities) with
    the slot-tag table put in: the helpers every family may use."""
    shared = helper_file(SRC / "shared.lua")
    spread = helper_file(SRC / "spread.lua", top_level_names(shared))
    if "'@SLOT_TAGS@'" not in spread:
        raise SourceError("lua-compat/src/spread.lua: no '@SLOT_TAGS@' placeholder")
    idem = helper_file(SRC / "idem_token.lua", top_level_names(shared + spread))
    return shared + spread.replace("'@SLOT_TAGS@'", slot_tags_literal()) + idem


def load():
    shared = shared_source()
    names = top_level_names(shared)
    families = [Family(p, names) for p in sorted(SRC.iterdir()) if (p / "family.lua").exists()]
    return shared, families


def script(shared, fam, cmd):
    """The standalone EVALSHA script of one command: the helpers its body
    needs, then the body."""
    if cmd.idem:
        code = cmd.guard() + "local function run(KEYS, ARGV)\n" + cmd.body + "end\n" + cmd.idem_call("run")
    else:
        code = cmd.guard() + cmd.body
    own = needed(fam.definitions, code)
    common = needed(definitions(SRC / "shared.lua", shared), own + code)
    out = ["\n".join(cmd.header) + "\n"]
    out.append(
        "--\n"
        f"-- Generated by scripts/lua-gen.py from lua-compat/src/ (shared.lua,\n"
        f"-- {fam.name}/family.lua, {fam.name}/{cmd.name}.lua): edit those, then run\n"
        f"-- `make lua-gen`. The same code is FCALL {cmd.function} in\n"
        f"-- lua-compat/generated/hotpath.lua.\n\n"
    )
    out.append("-- Shared helpers (lua-compat/src/shared.lua), those this script uses.\n" + common)
    out.append(
        f"-- {fam.name.upper()} helpers (lua-compat/src/{fam.name}/family.lua), those this script uses.\n"
        + own
    )
    out.append(f"-- {cmd.command} (lua-compat/src/{fam.name}/{cmd.name}.lua).\n")
    out.append(code)
    return "".join(out)


def lua_string(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def library(shared, families):
    """The Functions library: the helpers once, one function per command."""
    width = max(len(c.function) for f in families for c in f.commands)
    index = []
    for fam in families:
        for c in fam.commands:
            ro = "  (no-writes: FCALL_RO)" if "no-writes" in c.flags else ""
            index.append(f"--   {c.function.ljust(width)}  {c.command}{ro}\n")
    out = [
        "#!lua name=hotpath\n",
        "-- hotpath's Lua twins as one Redis Functions library (Redis 7 and\n"
        "-- later, Valkey): the same replies, errors and data as the module's\n"
        "-- commands, for servers that cannot load it.\n"
        "--\n"
        "-- Load it with scripts/lua-load.sh URL (FUNCTION LOAD REPLACE) and\n"
        "-- call FCALL <function> numkeys key... arg..., exactly as EVALSHA\n"
        "-- with the standalone script of the same command\n"
        "-- (lua-compat/generated/<family>/<command>.lua; lua-compat/README.md).\n"
        "--\n"
        "-- Generated by scripts/lua-gen.py from lua-compat/src/: edit those\n"
        "-- sources, then run `make lua-gen`.\n"
        "--\n"
        "-- Functions:\n",
        *index,
        "\n-- Shared helpers (lua-compat/src/shared.lua).\n",
        shared,
    ]
    for fam in families:
        # A block per family: its helpers are locals of the block, so the
        # main chunk stays far below Lua's 200 locals whatever the number
        # of families.
        out.append(f"\ndo -- {fam.name.upper()} (lua-compat/src/{fam.name}/)\n")
        out.append(fam.helpers)
        for c in fam.commands:
            local = f"{fam.name}_{c.name}"
            out.append(f"\n-- {c.command} (lua-compat/src/{fam.name}/{c.name}.lua)\n")
            if c.idem:
                out.append(f"local function {local}_run(KEYS, ARGV)\n{c.body}end\n")
                out.append(f"local function {local}(KEYS, ARGV)\n{c.guard()}{c.idem_call(local + '_run')}end\n")
            else:
                out.append(f"local function {local}(KEYS, ARGV)\n{c.guard()}{c.body}end\n")
            flags = ""
            if c.flags:
                flags = ", flags = {" + ", ".join(lua_string(f) for f in c.flags) + "}"
            out.append(
                "redis.register_function{function_name = "
                f"{lua_string(c.function)}, callback = {local}{flags},\n"
                f"  description = {lua_string(c.syntax)}}}\n"
            )
        out.append("end\n")
    return "".join(out)


README = """# Generated: do not edit

Everything in this folder is generated by `scripts/lua-gen.py` from
`lua-compat/src/`: edit those sources, then run `make lua-gen` (it writes
this folder, removes any file here that it did not write, and checks the
result; a test runs `scripts/lua-gen.py --check`).

- `hotpath.lua`: the Functions library (`FUNCTION LOAD`, then `FCALL
  hotpath_<family>_<command>`; `scripts/lua-load.sh` loads it).
- `<family>/<command>.lua`: the standalone script of each command
  (`SCRIPT LOAD`, then `EVALSHA`).

How to use them: `lua-compat/README.md`, and `lua-compat/docs/<family>.md`
for each family's commands, keys and arguments.
"""


def outputs():
    shared, families = load()
    files = {GEN / "README.md": README, LIBRARY: library(shared, families)}
    for fam in families:
        for c in fam.commands:
            files[GEN / fam.name / f"{c.name}.lua"] = script(shared, fam, c)
    # The folder holds only what the generator writes: any other file is
    # stray (a twin whose source is gone, a hand edit), and goes.
    stray = sorted(p for p in GEN.rglob("*") if p.is_file() and p not in files)
    return files, stray


def main(argv):
    check = "--check" in argv[1:]
    try:
        files, stray = outputs()
    except SourceError as e:
        print(f"lua-gen: {e}", file=sys.stderr)
        return 2
    stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    if check:
        for p in stale:
            print(f"lua-gen: {p.relative_to(ROOT)} differs from its sources", file=sys.stderr)
        for p in stray:
            print(f"lua-gen: {p.relative_to(ROOT)} is not generated from lua-compat/src/", file=sys.stderr)
        if stale or stray:
            print("lua-gen: run `make lua-gen` (scripts/lua-gen.py) and commit the result", file=sys.stderr)
            return 1
        return 0
    for p in stale:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(files[p])
        print(f"lua-gen: wrote {p.relative_to(ROOT)}")
    for p in stray:
        p.unlink()
        print(f"lua-gen: removed {p.relative_to(ROOT)} (not generated from lua-compat/src/)")
    for d in sorted((d for d in GEN.rglob("*") if d.is_dir()), reverse=True):
        if not any(d.iterdir()):
            d.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
