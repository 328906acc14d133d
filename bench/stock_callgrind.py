"""Instructions per call of STOCK.RESERVE against its native floor
(HSETNX on the orders + DECRBY of the stock + HINCRBY of the user's count
+ ZADD of the lease, each measured alone), the seed-style seckill script
(bench/seeds.py) and, for a sold-out stock, a bare GET; counted by
valgrind's callgrind inside Redis's `call()`, all in the same server and
run. Unlike timings, the counts do not depend on the machine's load:
`python3 bench/stock_callgrind.py [libhotpath.so ...]` (needs valgrind;
about a minute a build). Several builds (or `HOTPATH_SO=<old build>`
before the one given, by default target/release's) are counted one after
the other in one invocation, each in its own server with its own floors,
for before/after tables.

Each row also reports, for the module command, how often per call it
opened a key, went through `RedisModule_Call` and `RedisModule_Replicate`
(callgrind's call counts of those API functions)."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SO, callgrind_calls, free_port  # noqa: E402
from seeds import SECKILL_SEED, SECKILL_SEED_NO_STREAM  # noqa: E402

N = 4000
T0 = 1_700_000_000_000
API = ["RM_OpenKey", "RM_Call", "RM_Replicate", "RM_ReplicateVerbatim"]


def main():
    builds = sys.argv[1:] or [SO]
    if os.environ.get("HOTPATH_SO"):
        builds.insert(0, os.environ["HOTPATH_SO"])
    for k, so in enumerate(builds):
        if len(builds) > 1:
            print(("\n" if k else "") + f"{os.path.abspath(so)}:\n", flush=True)
        count(os.path.abspath(so))


def count(so):
    """Counts every row against the build `so`, in a server of its own."""
    binary = os.environ.get("HOTPATH_SERVER", "redis-server")
    out_dir = tempfile.mkdtemp(prefix="hotpath-callgrind-")
    out = os.path.join(out_dir, "cg.out")
    port = free_port()
    srv = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--toggle-collect=call",
         binary, "--port", str(port), "--save", "", "--dir", out_dir, "--loadmodule", so],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(600):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)

    def phase(cmds):
        """Runs cmds; returns (instructions per call, {api: calls per call})."""
        subprocess.run(["callgrind_control", "-z", str(srv.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise RuntimeError(f"{cmds[0]}: {reply}")
        before = set(glob.glob(out + ".*"))
        subprocess.run(["callgrind_control", "-d", str(srv.pid)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        new = set()
        for _ in range(200):
            new = set(glob.glob(out + ".*")) - before
            if new:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        path = new.pop()
        text = subprocess.run(["callgrind_annotate", path], capture_output=True, text=True).stdout
        total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
        calls = callgrind_calls(path, API)
        return total / len(cmds), {a: n / len(cmds) for a, n in calls.items()}

    seed = r.script_load(SECKILL_SEED)
    seed_ns = r.script_load(SECKILL_SEED_NO_STREAM)

    def row(name, ours, others):
        """ours: a function of the call index i giving one command;
        others: [(label, [functions])], each list measured one by one and
        added. Indices N … 2N−1 warm the structures up first."""
        for fns in [[ours]] + [f for _, f in others]:
            for fn in fns:
                phase_free([fn(i) for i in range(N, 2 * N)])
        o, api = phase([ours(i) for i in range(N)])
        cols = []
        for label, fns in others:
            x = sum(phase([fn(i) for i in range(N)])[0] for fn in fns)
            cols.append(f"{label} {x:,.0f} ({o / x:.2f}×)")
        print(f"| {name} | {o:,.0f} | " + "; ".join(cols) + " | "
              + " ".join(f"{k[3:]} {v:.2f}" for k, v in api.items() if v) + " |", flush=True)

    def phase_free(cmds):
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        pipe.execute(raise_on_error=True)

    print("| command | module instr/call | compared with (instr/call, ratio module ÷ it) | API calls per call |")
    print("|---|---:|---|---|")
    big = 10 ** 12
    r.execute_command("STOCK.CREATE", "sk", big, "LEASE", 900000)

    def floor(p):
        """The native floor on keys `p:*`: what a reservation of one unit
        at NOW T0 + i changes: the order's record as the module writes it
        (R:qty:lease-end:left:user), the stock, the buyer's count and the
        lease, whose ends increase as the module's do (one shared score
        would make every ZADD compare members, which the module's never
        does)."""
        r.set(f"{p}:stock", big)
        return [lambda i: ("HSETNX", f"{p}:orders", f"o{i}", f"R:1:{T0 + i + 900000}:{big - 1 - i}:u{i}"),
                lambda i: ("DECRBY", f"{p}:stock", 1),
                lambda i: ("HINCRBY", f"{p}:users", f"u{i}", 1),
                lambda i: ("ZADD", f"{p}:leases", T0 + i + 900000, f"o{i}")]

    def seed_call(p):
        r.set(f"{p}:stock", big)
        return lambda i: ("EVALSHA", seed, 3, f"{p}:stock", f"{p}:buyers", f"{p}:orders", f"u{i}", 1, f"o{i}")

    r.set("t:stock", big)
    seed_ns_call = lambda i: ("EVALSHA", seed_ns, 2, "t:stock", "t:buyers", f"u{i}", 1)
    row("STOCK.RESERVE, new order",
        lambda i: ("STOCK.RESERVE", "sk", f"u{i}", f"o{i}", 1),
        [("floor HSETNX+DECRBY+HINCRBY+ZADD", floor("n")), ("seckill script", [seed_call("s")]),
         ("seckill script without the stream", [seed_ns_call])])
    row("STOCK.RESERVE, new order, NOW given",
        lambda i: ("STOCK.RESERVE", "sk", f"v{i}", f"p{i}", 1, "NOW", T0 + i),
        [("floor HSETNX+DECRBY+HINCRBY+ZADD", floor("m")), ("seckill script", [seed_call("q")])])
    row("STOCK.RESERVE, repeated order (the first reply again)",
        lambda i: ("STOCK.RESERVE", "sk", f"u{i}", f"o{i}", 1),
        [("HGET of the order", [lambda i: ("HGET", "n:orders", f"o{i}")])])
    # A finished sale: every unit sold, no lease alive.
    r.execute_command("STOCK.CREATE", "done", 1)
    r.execute_command("STOCK.RESERVE", "done", "a", "a1", 1)
    r.execute_command("STOCK.CONFIRM", "done", "a1")
    r.set("g:stock", 0)
    r.set("h:stock", 0)
    row("STOCK.RESERVE, sold out (finished sale)",
        lambda i: ("STOCK.RESERVE", "done", f"u{i}", f"o{i}", 1),
        [("GET", [lambda i: ("GET", "g:stock")]),
         ("seckill script, sold out", [lambda i: ("EVALSHA", seed, 3, "h:stock", "h:buyers", "h:orders",
                                                  f"u{i}", 1, f"o{i}")])])
    # Sold out while leases are alive: the order is looked up (a retry
    # must get its reply), then the earliest lease.
    r.execute_command("STOCK.CREATE", "held", 1, "LEASE", 3_000_000_000_000)
    r.execute_command("STOCK.RESERVE", "held", "a", "a1", 1)
    row("STOCK.RESERVE, sold out, a lease alive",
        lambda i: ("STOCK.RESERVE", "held", f"u{i}", f"o{i}", 1),
        [("GET", [lambda i: ("GET", "g:stock")])])
    # The spread form (docs/stock.md): shard 0 of a SKU spread over 1
    # shard (every user is its), refilled once by a transfer; then a dry
    # shard's SOLDOUT.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                    "python", "src"))
    from hotpath import routing
    k = routing.shard_key("sps", 1, 0)
    r.execute_command("STOCK.CREATE", k, big, "LEASE", 900000, "SPREAD", 1)
    r.execute_command("STOCK.TRANSFER", k, "t", 0, big, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", k, "t", big, "SPREAD", 1)
    r.execute_command("STOCK.SETTLE", k, "t", big, "SPREAD", 1)
    row("STOCK.RESERVE, a shard of a spread SKU, new order, NOW given",
        lambda i: ("STOCK.RESERVE", k, f"w{i}", f"r{i}", 1, "NOW", T0 + i, "SPREAD", 1),
        [("floor HSETNX+DECRBY+HINCRBY+ZADD", floor("f")), ("seckill script", [seed_call("e")])])
    d = routing.shard_key("spd", 1, 0)
    r.execute_command("STOCK.CREATE", d, 0, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", d, "dry", 0, "SPREAD", 1)
    row("STOCK.RESERVE, sold out, a dry shard",
        lambda i: ("STOCK.RESERVE", d, f"u{i}", f"o{i}", 1, "SPREAD", 1),
        [("GET", [lambda i: ("GET", "g:stock")])])
    # A dry shard whose last units are sold (the end of a spread sale).
    e = routing.shard_key("spe", 1, 0)
    r.execute_command("STOCK.CREATE", e, 1, "SPREAD", 1)
    r.execute_command("STOCK.TRANSFER", e, "t", 0, 1, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", e, "t", 1, "SPREAD", 1)
    r.execute_command("STOCK.SETTLE", e, "t", 1, "SPREAD", 1)
    r.execute_command("STOCK.RESERVE", e, "a", "a1", 1, "SPREAD", 1)
    r.execute_command("STOCK.CONFIRM", e, "a1", "SPREAD", 1)
    r.execute_command("STOCK.APPLY", e, "dry", 0, "SPREAD", 1)
    row("STOCK.RESERVE, sold out, a dry shard whose units are sold",
        lambda i: ("STOCK.RESERVE", e, f"u{i}", f"o{i}", 1, "SPREAD", 1),
        [("GET", [lambda i: ("GET", "g:stock")])])
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    srv.wait()


if __name__ == "__main__":
    main()
