"""Instructions per call of RATE against its native floors, the scripts
users write today and redis-cell's CL.THROTTLE, counted by valgrind's
callgrind inside Redis's `call()` (the whole command as the server runs
it). Unlike timings, the counts barely depend on the machine's load:
`python3 bench/rate_callgrind.py` (needs valgrind; a few minutes). Set
REDIS_CELL_SO to a built libredis_cell.so for the CL.THROTTLE row.

Each row runs 1,500 calls over 300 limiters that already hold state
(every call allowed, so every call writes), after a warm-up pass that
creates them; the natives run the same pattern on their own keys.
"""
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
from rate import SEED  # noqa: E402

CELL = os.environ.get("REDIS_CELL_SO", "")
CALLS = 1500
KEYS = 300


class Counter:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hotpath-callgrind-")
        self.out = os.path.join(self.dir, "cg.out")
        port = free_port()
        args = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}", "--toggle-collect=call",
                os.environ.get("HOTPATH_SERVER", "redis-server"), "--port", str(port), "--save", "", "--dir", self.dir,
                "--loadmodule", SO]
        self.cell = bool(CELL) and os.path.exists(CELL)
        if self.cell:
            args += ["--loadmodule", CELL]
        self.srv = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.r = redis.Redis(port=port, protocol=2)
        for _ in range(600):
            try:
                self.r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)

    def run(self, cmds, count=True):
        """Runs `cmds` pipelined (in batches of 100, so that replies stay in
        the client's buffer) and returns instructions per call."""
        if count:
            subprocess.run(["callgrind_control", "-z", str(self.srv.pid)], stdout=subprocess.DEVNULL)
        for i in range(0, len(cmds), 100):
            pipe = self.r.pipeline(transaction=False)
            for c in cmds[i:i + 100]:
                pipe.execute_command(*c)
            pipe.execute(raise_on_error=True)
        if not count:
            return None
        path = self.dump()
        text = subprocess.run(["callgrind_annotate", path], capture_output=True, text=True).stdout
        os.unlink(path)
        total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
        return total / len(cmds)

    def dump(self):
        """Has callgrind write what it counted since the last zeroing;
        returns the file's path (the caller removes it)."""
        before = set(glob.glob(self.out + ".*"))
        subprocess.run(["callgrind_control", "-d", str(self.srv.pid)], stdout=subprocess.DEVNULL)
        new = set()
        for _ in range(100):
            new = set(glob.glob(self.out + ".*")) - before
            if new:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        return new.pop()

    def stop(self):
        try:
            self.r.execute_command("SHUTDOWN", "NOSAVE")
        except redis.ConnectionError:
            pass
        self.srv.wait()


def main():
    cg = Counter()
    rng = random.Random(1)
    keys = [rng.randrange(KEYS) for _ in range(CALLS)]
    seeds = {a: cg.r.script_load(s) for a, s in SEED.items()}
    twin = cg.r.script_load(open(os.path.join(ROOT, "lua-compat", "generated", "rate", "check.lua")).read())
    now = int(time.time() * 1e6)
    at = now // 1000 + 3_600_000
    nat = {}

    def native(name, cmds, warm=None):
        if warm:
            cg.run(warm, count=False)
        nat[name] = cg.run(cmds)
        return nat[name]

    value = "gcra:1764720060000:12000:20000"
    warm_str = [("SET", f"s{k}", value, "PX", 60000) for k in range(KEYS)]
    native("GET", [("GET", f"s{k}") for k in keys], warm_str)
    native("SET PX", [("SET", f"s{k}", value, "PX", 60000) for k in keys])
    native("SET KEEPTTL", [("SET", f"s{k}", value, "KEEPTTL") for k in keys])
    warm_z = [("ZADD", f"z{k}", now - 1000 * i, f"{now - 1000 * i:016d}-0") for k in range(KEYS) for i in range(3)]
    native("ZCOUNT", [("ZCOUNT", f"z{k}", f"({now - 60_000_000}", "+inf") for k in keys], warm_z)
    native("ZADD", [("ZADD", f"z{k}", now + i, f"{now + i:016d}-0") for i, k in enumerate(keys)])
    native("PEXPIREAT", [("PEXPIREAT", f"z{k}", at + i) for i, k in enumerate(keys)])
    floors = {
        "GCRA": ("GET + SET PX", nat["GET"] + nat["SET PX"]),
        "FIXED": ("GET + SET PX", nat["GET"] + nat["SET PX"]),
        "SLIDING": ("GET + SET PX", nat["GET"] + nat["SET PX"]),
        "LOG": ("ZCOUNT + ZADD + PEXPIREAT", nat["ZCOUNT"] + nat["ZADD"] + nat["PEXPIREAT"]),
        "BUCKET": ("GET + SET PX", nat["GET"] + nat["SET PX"]),
    }
    strict = nat["GET"] + nat["SET KEEPTTL"]
    print("| command | module instr/call | native floor | module ÷ floor | seed script | Lua twin |")
    print("|---|---:|---|---:|---:|---:|")
    for algo in ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"]:
        rate = 100 if algo != "LOG" else 20
        cmd = lambda k: ("RATE.CHECK", f"m{algo}{k}", rate, 60000, "ALGO", algo)  # noqa: E731
        cg.run([cmd(k) for k in range(KEYS)], count=False)
        ours = cg.run([cmd(k) for k in keys])
        s = lambda k: ("EVALSHA", seeds[algo], 1, f"s{algo}{k}", rate, 60000)  # noqa: E731
        cg.run([s(k) for k in range(KEYS)], count=False)
        seed = cg.run([s(k) for k in keys])
        t = lambda k: ("EVALSHA", twin, 1, f"l{algo}{k}", rate, 60000, "ALGO", algo)  # noqa: E731
        cg.run([t(k) for k in range(KEYS)], count=False)
        lua = cg.run([t(k) for k in keys])
        label, floor = floors[algo]
        extra = f"; GET + SET KEEPTTL {strict:,.0f} ({ours / strict:.2f}×)" if algo in ("FIXED", "SLIDING") else ""
        print(f"| RATE.CHECK {algo} | {ours:,.0f} | {label} {floor:,.0f}{extra} | {ours / floor:.2f} "
              f"| {seed:,.0f} | {lua:,.0f} |", flush=True)
    thr = lambda k: ("RATE.THROTTLE", f"t{k}", 15, 30, 60)  # noqa: E731
    cg.run([thr(k) for k in range(KEYS)], count=False)
    ours = cg.run([thr(k) for k in keys])
    line = f"| RATE.THROTTLE | {ours:,.0f} | GET + SET PX {floors['GCRA'][1]:,.0f} | {ours / floors['GCRA'][1]:.2f} | | |"
    print(line)
    if cg.cell:
        cl = lambda k: ("CL.THROTTLE", f"c{k}", 15, 30, 60)  # noqa: E731
        cg.run([cl(k) for k in range(KEYS)], count=False)
        cell = cg.run([cl(k) for k in keys])
        print(f"| CL.THROTTLE (redis-cell, same server) | {cell:,.0f} | | | | |")
        print(f"\nRATE.THROTTLE ÷ CL.THROTTLE = {ours / cell:.2f}")
    else:
        print("\nredis-cell not loaded (set REDIS_CELL_SO to a built libredis_cell.so)")
    print("natives: " + ", ".join(f"{k} {v:,.0f}" for k, v in nat.items()))
    cg.stop()


if __name__ == "__main__":
    main()
