"""Instructions per call of REDPACKET commands and their Lua twins, counted
by valgrind's callgrind inside Redis's `call()` (the command itself, as
`INFO commandstats` times it). Unlike timings, the counts do not depend on
the machine's load: `python3 bench/redpacket_callgrind.py` (needs valgrind;
takes a minute)."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, SO, free_port  # noqa: E402

N = 3000


def main():
    out_dir = tempfile.mkdtemp(prefix="hotpath-callgrind-")
    out = os.path.join(out_dir, "cg.out")
    port = free_port()
    srv = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--toggle-collect=call",
         "redis-server", "--port", str(port), "--save", "", "--dir", out_dir, "--loadmodule", SO],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port, protocol=2)
    for _ in range(300):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)
    lua = lambda name: r.script_load(open(os.path.join(ROOT, "lua-compat", "generated", "redpacket", name)).read())
    grab, split = lua("grab.lua"), lua("split.lua")
    counts = {}

    def phase(name, cmds):
        subprocess.run(["callgrind_control", "-z", str(srv.pid)], stdout=subprocess.DEVNULL)
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        pipe.execute(raise_on_error=True)
        before = set(glob.glob(out + ".*"))
        subprocess.run(["callgrind_control", "-d", str(srv.pid)], stdout=subprocess.DEVNULL)
        for _ in range(100):
            new = set(glob.glob(out + ".*")) - before
            if new:
                break
            time.sleep(0.1)
        time.sleep(0.5)
        text = subprocess.run(["callgrind_annotate", new.pop()], capture_output=True, text=True).stdout
        total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
        counts[name] = total / len(cmds)

    users = [f"user:{i}" for i in range(N)]
    for m, lk, extra in (("m{1}", "l{1}", ()), ("mt{1}", "lt{1}", ("TTL", 3600))):
        r.execute_command("REDPACKET.SPLIT", m, 10**6, N, *extra)
        r.execute_command("EVALSHA", split, 1, lk, 10**6, N, *extra)
    for i in range(300):
        r.execute_command("REDPACKET.SPLIT", f"ms{{{i}}}", 10_000, 10)
        r.execute_command("EVALSHA", split, 1, f"ls{{{i}}}", 10_000, 10)
    rows = [
        ("GRAB, wins (3000-share packet)",
         [("REDPACKET.GRAB", "m{1}", u) for u in users], [("EVALSHA", grab, 1, "l{1}", u) for u in users]),
        ("GRAB, ALREADY",
         [("REDPACKET.GRAB", "m{1}", u) for u in users], [("EVALSHA", grab, 1, "l{1}", u) for u in users]),
        ("GRAB, wins (packet with TTL)",
         [("REDPACKET.GRAB", "mt{1}", u) for u in users], [("EVALSHA", grab, 1, "lt{1}", u) for u in users]),
        ("GRAB, wins (300 packets of 10 shares)",
         [("REDPACKET.GRAB", f"ms{{{i}}}", f"u{j}") for i in range(300) for j in range(10)],
         [("EVALSHA", grab, 1, f"ls{{{i}}}", f"u{j}") for i in range(300) for j in range(10)]),
        ("SPLIT 10,000 shares RANDOM",
         [("REDPACKET.SPLIT", f"sm{i}", 10**6, 10_000) for i in range(3)],
         [("EVALSHA", split, 1, f"sl{i}", 10**6, 10_000) for i in range(3)]),
        ("SPLIT 10,000 shares EQUAL",
         [("REDPACKET.SPLIT", f"se{i}", 10**6, 10_000, "MODE", "EQUAL") for i in range(3)],
         [("EVALSHA", split, 1, f"sle{i}", 10**6, 10_000, "MODE", "EQUAL") for i in range(3)]),
    ]
    print("| command | module instructions/call | Lua twin | ratio |")
    print("|---|---:|---:|---:|")
    for name, ours, twin in rows:
        phase(name, ours)
        phase(name + " (Lua)", twin)
        a, b = counts[name], counts[name + " (Lua)"]
        print(f"| {name} | {a:,.0f} | {b:,.0f} | {a / b:.2f} |", flush=True)
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    srv.wait()


if __name__ == "__main__":
    main()
