"""The least a module command can cost: for the three bars that stay
missed (issues 22, 23 and 27), what the Redis module API itself charges
for the calls any implementation of the command must make, against the
bar, all counted by callgrind inside Redis's `call()` in one server:
`python3 bench/api_floor.py` (needs valgrind; about 15 s;
`HOTPATH_SERVER=<valkey-server>` for Valkey, whose API functions are
named `VM_*`).

For each command the script reads, from callgrind's inclusive counts:
- the server's own part: `call()` around the command (everything
  outside `RedisModuleCommandDispatcher`) and the dispatcher around the
  module's entry point (the context it creates and frees);
- each module API function the command goes through (`RM_OpenKey`,
  `RM_CloseKey`, the `RM_ReplyWith*` functions, `RM_Call` with the
  command it runs, `RM_Replicate`, the Hash API), per call.

The floor of a module implementation is the server's part plus the API
calls that no implementation can avoid (listed per row); the module's
own Rust code is not in it. When that floor is above the bar, no
implementation of the same contract through the module API meets the
bar.

- STOCK.RESERVE on a finished sale must open `B`, read it and reply a
  3-element array. Bar: 1.2x a bare GET.
- LIKE.TOGGLE that unlikes a post in set form must learn whether the
  user is a member and remove it: modules have no Set API, and no Set
  command both answers membership and toggles it, so two `RM_Call`s
  (SADD answers 0, then SREM) or, taken the other way round, two for
  every like. It also opens `B:count` and replies [liked, count]. Bar:
  2.5x SREM + DECR.
- A write with a new `IDEM token`, over the same write without one: the
  token store is opened, looked up, written and its write replicated
  (`RM_Replicate` of an HSET; replicas and AOF replay must hold the same
  record and expiry). Bar: 0.2x the write, plus a native HSET of the
  record.
"""
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import callgrind_calls  # noqa: E402
from rate_callgrind import Counter  # noqa: E402

N = 2000
FUNCS = ["RedisModuleCommandDispatcher", "RM_OpenKey", "RM_CloseKey", "RM_Call", "RM_Replicate",
         "RM_ReplicateVerbatim", "RM_HashGet", "RM_HashSet", "RM_StringDMA", "RM_ReplyWithArray",
         "RM_ReplyWithLongLong", "RM_ReplyWithStringBuffer", "RM_ReplyWithSimpleString"]


def canonical(name):
    """Valkey's names of the same functions (`VM_OpenKey`,
    `ValkeyModuleCommandDispatcher`) as Redis's."""
    if name.startswith("VM_"):
        return "RM_" + name[3:]
    return name.replace("ValkeyModule", "RedisModule")


class Profiler(Counter):
    """A callgrind server whose runs also return inclusive counts per
    function."""

    def profile(self, cmds):
        """Runs `cmds` and returns (instructions per call, {function:
        inclusive instructions per call}) for the functions in FUNCS and
        the module's entry points (`...::cb`)."""
        subprocess.run(["callgrind_control", "-z", str(self.srv.pid)], stdout=subprocess.DEVNULL)
        self.run(cmds, count=False)
        path = self.dump()
        text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                              capture_output=True, text=True).stdout
        total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
        per = {}
        for m in re.finditer(r"^\s*([\d,]+) \([\d. ]+%\)\s+\S*?:(\S+) \[", text, re.M):
            name = canonical(m.group(2))
            if name in FUNCS or name.endswith("::COMMANDS::cb"):
                key = "cb" if name.endswith("::cb") else name
                per[key] = per.get(key, 0) + int(m.group(1).replace(",", "")) / len(cmds)
        calls = {f: n / len(cmds) for f, n in callgrind_calls(path, FUNCS, canonical).items() if n}
        os.unlink(path)
        return total / len(cmds), per, calls


def server_part(total, per):
    """`call()` and the dispatcher around the module's own entry point."""
    return total - per.get("cb", 0)


def unit(per, calls, f):
    """Instructions per call of API function `f` (inclusive)."""
    return per.get(f, 0) / calls[f] if calls.get(f) else 0.0


def floor_of(per, calls, needed):
    """The API calls that cannot be avoided, `needed` {function: calls},
    at the unit costs measured in this command."""
    for f, n in needed.items():
        if n and not calls.get(f):
            raise RuntimeError(f"{f} was not called: the row measures the wrong path")
    return sum(n * unit(per, calls, f) for f, n in needed.items())


def needed_text(per, calls, needed):
    return ", ".join(f"{n} {f} {n * unit(per, calls, f):,.0f}" for f, n in needed.items())


def verdict(floor, bar):
    return "**above the bar**: no implementation meets it" if floor > bar else "under the bar"


def main():
    cg = Profiler()
    r = cg.r
    print("| command | module instr/call | server's part | API calls it cannot avoid (instr/call) "
          "| floor of any module implementation | bar | |")
    print("|---|---:|---:|---|---:|---|---|")

    # ---- STOCK: a finished sale, against GET.
    r.execute_command("STOCK.CREATE", "done", 1)
    r.execute_command("STOCK.RESERVE", "done", "a", "a1", 1)
    r.execute_command("STOCK.CONFIRM", "done", "a1")
    r.set("g", 0)
    get = cg.run([("GET", "g")] * N)
    cmds = [("STOCK.RESERVE", "done", f"u{i}", f"o{i}", 1) for i in range(N)]
    cg.run(cmds, count=False)
    total, per, calls = cg.profile(cmds)
    needed = {"RM_OpenKey": 1, "RM_CloseKey": 1, "RM_StringDMA": 1, "RM_ReplyWithArray": 1,
              "RM_ReplyWithStringBuffer": 1, "RM_ReplyWithLongLong": 2}
    floor = server_part(total, per) + floor_of(per, calls, needed)
    print(f"| STOCK.RESERVE, sold out (finished sale) | {total:,.0f} | {server_part(total, per):,.0f} | "
          f"{needed_text(per, calls, needed)} | {floor:,.0f} | 1.2x GET ({get:,.0f}): {1.2 * get:,.0f} | "
          f"{verdict(floor, 1.2 * get)} |", flush=True)

    # ---- LIKE: unlikes in set form (a post of 20,000 likers over 4e9 ids).
    rng = random.Random(3)
    ids = rng.sample(range(4_000_000_000), 20_000 + N)
    for i in range(0, len(ids), 2000):
        pipe = r.pipeline(transaction=False)
        for u in ids[i:i + 2000]:
            pipe.execute_command("LIKE.ADD", "hs", u)
            pipe.execute_command("SADD", "hn", u)
        pipe.execute()
    r.set("hn:count", len(ids))
    assert r.execute_command("LIKE.INFO", "hs")[1] == b"set"
    total, per, calls = cg.profile([("LIKE.TOGGLE", "hs", u) for u in ids[20_000:]])
    srem = cg.run([("SREM", "hn", u) for u in ids[20_000:]])
    decr = cg.run([("DECR", "hn:count")] * N)
    needed = {"RM_Call": 2, "RM_OpenKey": 1, "RM_CloseKey": 1, "RM_StringDMA": 1,
              "RM_ReplyWithArray": 1, "RM_ReplyWithLongLong": 2, "RM_ReplicateVerbatim": 1}
    floor = server_part(total, per) + floor_of(per, calls, needed)
    bar = 2.5 * (srem + decr)
    print(f"| LIKE.TOGGLE, an unlike in set form | {total:,.0f} | {server_part(total, per):,.0f} | "
          f"{needed_text(per, calls, needed)} | {floor:,.0f} | 2.5x SREM + DECR ({srem + decr:,.0f}): "
          f"{bar:,.0f} | {verdict(floor, bar)} |", flush=True)

    # ---- IDEM tokens, each write against itself, on stores of the
    # shape steady traffic leaves (and a native HSET into hashes of the
    # same number of fields).
    for label, write, stores in [
        ("RANK.INCR", lambda k, *x: ("RANK.INCR", f"b{k % 300}{{x}}", f"m{k % 3000}", 1, *x), 300),
        ("RATE.CHECK GCRA", lambda k, *x: ("RATE.CHECK", f"r{k % 300}{{x}}", 1000000, 60000, *x), 300),
    ]:
        cg.run([write(k) for k in range(3000)], count=False)
        plain, per0, calls0 = cg.profile([write(k) for k in range(N)])
        cg.run([write(k, "IDEM", f"warm{k}") for k in range(stores)], count=False)
        total, per, calls = cg.profile([write(k, "IDEM", f"t{k}") for k in range(N)])
        h = label.split(".")[0]
        cg.run([("HSET", f"{h}{k % stores}", f"warm{k}", "x" * 48) for k in range(stores)], count=False)
        hset = cg.run([("HSET", f"{h}{k % stores}", f"t{k}", "x" * 48) for k in range(N)])
        # What the token adds through the API, at the unit cost of the
        # calls it adds: one store opened and closed, looked up, written,
        # and the write replicated.
        added = {f: per.get(f, 0) - per0.get(f, 0) for f in FUNCS}
        added_calls = {f: calls.get(f, 0) - calls0.get(f, 0) for f in FUNCS}
        needed = {"RM_OpenKey": 1, "RM_CloseKey": 1, "RM_HashGet": 1, "RM_HashSet": 1, "RM_Replicate": 1}
        extra = floor_of(added, added_calls, needed)
        bar = 0.2 * plain + hset
        print(f"| {label}, new IDEM token, over the write without one ({plain:,.0f}) | +{total - plain:,.0f} | "
              f"— | {needed_text(added, added_calls, needed)} | +{extra:,.0f} | 0.2x the write + HSET "
              f"({hset:,.0f}): +{bar:,.0f} | {verdict(extra, bar)} |", flush=True)
    cg.stop()


if __name__ == "__main__":
    main()
