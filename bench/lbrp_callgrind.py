"""Instructions per call of the LUCKYBAG and REDPACKET hot writes, the
seed-style scripts users write today, and the native floor, counted by
valgrind's callgrind inside Redis's `call()` (the command itself, as `INFO
commandstats` times it). Unlike timings, the counts do not depend on the
machine's load.

    python3 bench/lbrp_callgrind.py [luckybag] [redpacket] [--annotate NAME]

`--annotate NAME` also prints callgrind_annotate's function list for the
phase NAME (e.g. "JOIN new"), to see where a command's instructions go.
`HOTPATH_SO=<path>` counts another build of the module instead of
target/release's; `HOTPATH_SO_BEFORE=<path>` also counts that build (an
older one, say) in the same run, on a server of its own fed the same
commands, and adds its count of each module row as a "before" column.
Needs valgrind; takes a few minutes."""
import glob
import os
import random
import re
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, SO, free_port  # noqa: E402

if os.environ.get("HOTPATH_SO"):
    SO = os.environ["HOTPATH_SO"]
BEFORE_SO = os.environ.get("HOTPATH_SO_BEFORE")

N = 2000
CROWD = 100_000

# The scripts users write today (SEEDS.md), in their shortest form.
SEED_JOIN = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return redis.call('INCR', KEYS[3])
"""
SEED_LEAVE = """
local s = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not s or s == '-1' then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], s)
redis.call('ZADD', KEYS[1], -1, ARGV[1])
return 1
"""
SEED_ENTER = """
local s = redis.call('HGET', KEYS[2], ARGV[1])
if not s then return 0 end
redis.call('ZADD', KEYS[1], s, ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
"""
SEED_GRAB = """
local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then return {'ALREADY', held} end
local share = redis.call('LPOP', KEYS[1])
if not share then return {'EMPTY', 0} end
redis.call('HSET', KEYS[2], ARGV[1], share)
return {'OK', share}
"""


class Counter:
    def __init__(self, so=None):
        self.dir = tempfile.mkdtemp(prefix="hotpath-callgrind-")
        self.out = os.path.join(self.dir, "cg.out")
        port = free_port()
        self.srv = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}",
             "--toggle-collect=call", "redis-server", "--port", str(port), "--save", "",
             "--dir", self.dir, "--loadmodule", os.path.abspath(so or SO)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.r = redis.Redis(port=port, socket_timeout=600)
        for _ in range(600):
            try:
                self.r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        self.counts = {}
        self.annotate = set()
        # The same family's counts on another build (HOTPATH_SO_BEFORE),
        # or None; a counter that only collects them prints nothing.
        self.before = None
        self.quiet = False

    def fill(self, cmds, batch=2000):
        pipe = self.r.pipeline(transaction=False)
        for i, c in enumerate(cmds):
            pipe.execute_command(*c)
            if i % batch == batch - 1:
                pipe.execute(raise_on_error=True)
        pipe.execute(raise_on_error=True)

    def phase(self, name, cmds):
        subprocess.run(["callgrind_control", "-z", str(self.srv.pid)], stdout=subprocess.DEVNULL)
        self.fill(cmds)
        before = set(glob.glob(self.out + ".*"))
        subprocess.run(["callgrind_control", "-d", str(self.srv.pid)], stdout=subprocess.DEVNULL)
        new = set()
        for _ in range(200):
            new = set(glob.glob(self.out + ".*")) - before
            if new:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        dump = new.pop()
        text = subprocess.run(["callgrind_annotate", dump], capture_output=True, text=True).stdout
        total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
        self.counts[name] = total / len(cmds)
        if name in self.annotate:
            text = subprocess.run(["callgrind_annotate", "--inclusive=yes", dump],
                                  capture_output=True, text=True).stdout
            path = os.path.join(tempfile.gettempdir(), "cg-" + re.sub(r"\W+", "_", name) + ".txt")
            with open(path, "w") as f:
                f.write(f"{name}: {len(cmds)} calls\n" + text)
            print(f"{name}: callgrind_annotate --inclusive=yes written to {path}")
        return self.counts[name]

    def stop(self):
        try:
            self.r.execute_command("SHUTDOWN", "NOSAVE")
        except redis.ConnectionError:
            pass
        self.srv.wait()


def header(c, *rest):
    if c.quiet:
        return
    before = ["before"] if c.before else []
    cols = ["command", "module"] + before + list(rest)
    print("| " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * (len(cols) - 1))


def row(c, name, module, script=None, floor=None):
    if c.quiet:
        return
    a = c.counts[module]
    cells = [f"{a:,.0f}"]
    if c.before:
        cells.append(f"{c.before.counts[module]:,.0f}")
    for k in (script, floor):
        if k is None:
            cells.append("—")
        else:
            b = sum(c.counts[x] for x in k) if isinstance(k, tuple) else c.counts[k]
            cells.append(f"{b:,.0f} ({a / b:.2f}×)")
    print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


def luckybag(c):
    r = c.r
    seed_join = r.script_load(SEED_JOIN)
    seed_leave = r.script_load(SEED_LEAVE)
    seed_enter = r.script_load(SEED_ENTER)
    r.execute_command("LUCKYBAG.CREATE", "b{1}", "WINNERS", 1000, "TTL", 86400)
    c.fill(("LUCKYBAG.JOIN", "b{1}", u) for u in range(CROWD))
    c.fill(("LUCKYBAG.JOIN", "b{1}", u, "TASK", "PENDING") for u in range(10**7, 10**7 + N))
    new = [str(CROWD + i) for i in range(N)]
    c.phase("JOIN new", [("LUCKYBAG.JOIN", "b{1}", u) for u in new])
    c.phase("JOIN duplicate", [("LUCKYBAG.JOIN", "b{1}", u) for u in new])
    c.phase("LEAVE", [("LUCKYBAG.LEAVE", "b{1}", u) for u in new])
    c.phase("ENTER", [("LUCKYBAG.ENTER", "b{1}", u) for u in new])
    c.phase("TASK", [("LUCKYBAG.TASK", "b{1}", u) for u in range(10**7, 10**7 + N)])
    c.phase("RESULT", [("LUCKYBAG.RESULT", "b{1}", u) for u in new])
    c.phase("INFO", [("LUCKYBAG.INFO", "b{1}") for _ in new])
    # Native: the same data as the bag's (16 shard ZSets with random scores,
    # a 100k Set, a counter), the same random scores.
    rnd = random.Random(7)
    score = {u: rnd.randrange(10**6) / 1e6 for u in range(CROWD + N)}
    cand = lambda u: f"n{{1}}:cand:{int(u) & 15}"
    c.fill(("SADD", "n{1}:joined", u) for u in range(CROWD))
    c.fill(("ZADD", cand(u), score[u], u) for u in range(CROWD))
    r.set("n{1}:count", CROWD)
    c.phase("SADD", [("SADD", "n{1}:joined", u) for u in new])
    c.phase("ZADD NX", [("ZADD", cand(u), "NX", score[int(u)], u) for u in new])
    c.phase("INCR", [("INCR", "n{1}:count") for _ in new])
    c.phase("ZSCORE", [("ZSCORE", cand(u), u) for u in new])
    c.phase("HSET", [("HSET", "n{1}:stored", u, "0.500000") for u in new])
    c.phase("ZADD -1", [("ZADD", cand(u), "XX", -1, u) for u in new])
    c.phase("ZADD back", [("ZADD", cand(u), "XX", score[int(u)], u) for u in new])
    c.phase("HGET", [("HGET", "n{1}:stored", u) for u in new])
    c.phase("HDEL", [("HDEL", "n{1}:stored", u) for u in new])
    c.fill(("SREM", "n{1}:joined", u) for u in new)
    c.fill(("ZREM", cand(u), u) for u in new)
    c.phase("seed JOIN", [("EVALSHA", seed_join, 3, "n{1}:joined", cand(u), "n{1}:count", u, score[int(u)])
                          for u in new])
    c.phase("seed LEAVE", [("EVALSHA", seed_leave, 2, cand(u), "n{1}:stored", u) for u in new])
    c.phase("seed ENTER", [("EVALSHA", seed_enter, 2, cand(u), "n{1}:stored", u) for u in new])
    header(c, "seed-style script", "native floor")
    row(c, "LUCKYBAG.JOIN (new)", "JOIN new", "seed JOIN", ("ZADD NX", "INCR"))
    row(c, "LUCKYBAG.JOIN (duplicate)", "JOIN duplicate", None, "ZSCORE")
    row(c, "LUCKYBAG.LEAVE", "LEAVE", "seed LEAVE", ("ZSCORE", "HSET", "ZADD -1"))
    row(c, "LUCKYBAG.ENTER", "ENTER", "seed ENTER", ("HGET", "ZADD back", "HDEL"))
    row(c, "LUCKYBAG.TASK", "TASK", None, "ZADD back")
    row(c, "LUCKYBAG.RESULT", "RESULT", None, "ZSCORE")
    row(c, "LUCKYBAG.INFO", "INFO")


def redpacket(c):
    r = c.r
    seed_grab = r.script_load(SEED_GRAB)
    shares = 10_000
    r.execute_command("REDPACKET.SPLIT", "p{1}", 10**7, shares, "TTL", 86400)
    r.execute_command("REDPACKET.SPLIT", "p{2}", 10**7, shares, "TTL", 86400)
    r.execute_command("REDPACKET.SPLIT", "p{3}", 10**7, shares, "TTL", 86400)
    # A packet whose only share is gone, for EMPTY.
    r.execute_command("REDPACKET.SPLIT", "e{1}", 100, 1, "TTL", 86400)
    r.execute_command("REDPACKET.GRAB", "e{1}", "first")
    users = [f"user:{i}" for i in range(N)]
    # Half-full grabbed hashes, as in the middle of a big packet.
    c.fill(("REDPACKET.GRAB", "p{1}", f"warm:{i}") for i in range(N))
    c.fill(("HSET", "n{2}:grabbed", f"warm:{i}", 100) for i in range(N))
    c.fill(("HSET", "s{3}:grabbed", f"warm:{i}", 100) for i in range(N))
    c.fill(("RPUSH", "s{3}:pool", *range(100, 100 + 1000)) for _ in range(10))
    # The running total natively: a meta of SPLIT's five fields in SPLIT's
    # order (a listpack), its left_cents counted down by each share.
    r.hset("n{2}:meta", mapping={"expires": 0, "left_cents": 10**7, "state": "open",
                                 "total": 10**7, "count": shares})
    c.phase("GRAB wins", [("REDPACKET.GRAB", "p{1}", u) for u in users])
    c.phase("GRAB already", [("REDPACKET.GRAB", "p{1}", u) for u in users])
    c.phase("GRAB empty", [("REDPACKET.GRAB", "e{1}", u) for u in users])
    c.phase("HEXISTS", [("HEXISTS", "n{2}:grabbed", "new:" + u) for u in users])
    c.phase("LPOP", [("LPOP", "p{2}:pool") for _ in users])
    c.phase("HSET grabbed", [("HSET", "n{2}:grabbed", u, 100) for u in users])
    c.phase("HINCRBY left_cents", [("HINCRBY", "n{2}:meta", "left_cents", -100) for _ in users])
    c.phase("LPOP (nil)", [("LPOP", "e{2}:pool") for _ in users])
    c.phase("seed GRAB", [("EVALSHA", seed_grab, 2, "s{3}:pool", "s{3}:grabbed", u) for u in users])
    c.phase("INFO", [("REDPACKET.INFO", "p{1}") for _ in range(20)])
    header(c, "seed-style script", "native floor")
    # Issue 27, decision 4: the floor includes the running total (HINCRBY
    # left_cents), which keeps INFO and REFUND O(1); the bar is 1.5x.
    row(c, "REDPACKET.GRAB (wins)", "GRAB wins", "seed GRAB",
        ("HEXISTS", "LPOP", "HSET grabbed", "HINCRBY left_cents"))
    row(c, "REDPACKET.GRAB (wins), floor without the running total", "GRAB wins", None,
        ("HEXISTS", "LPOP", "HSET grabbed"))
    row(c, "REDPACKET.GRAB (ALREADY)", "GRAB already", None, "HEXISTS")
    row(c, "REDPACKET.GRAB (EMPTY)", "GRAB empty", None, ("HEXISTS", "LPOP (nil)"))
    row(c, "REDPACKET.INFO (10k-share pool)", "INFO")


def main():
    args = sys.argv[1:]
    annotate = set()
    while "--annotate" in args:
        i = args.index("--annotate")
        annotate.add(args[i + 1])
        del args[i:i + 2]
    families = args or ["luckybag", "redpacket"]
    for fam in families:
        before = None
        if BEFORE_SO:
            before = Counter(BEFORE_SO)
            before.quiet = True
            try:
                globals()[fam](before)
            finally:
                before.stop()
        c = Counter()
        c.annotate = annotate
        c.before = before
        try:
            globals()[fam](c)
        finally:
            c.stop()


if __name__ == "__main__":
    main()
