"""RANK.INCR and RANK.ADD on a 10,000-member board (the `make bench` row
"RANK.INCR (10k board)", issue 27's 1.5× bar): instructions per call
counted by valgrind's callgrind inside Redis's `call()` (as
bench/pollrank_callgrind.py does), for the module with and without `NOW`,
LAYOUT WIDE, and the native floor (`ZSCORE` + `ZADD`, each counted on its
own, on a plain Sorted Set of the same size and packed scores).

    python3 bench/rank_small_callgrind.py [libhotpath.so] [--profile]

`--profile` also prints the module rows' inclusive cost of the functions
that matter (callgrind_annotate --inclusive=yes), to see where the
instructions above the floor go. Needs valgrind; about a minute."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import SO, free_port  # noqa: E402

M = 10_000
N = 4000
T0 = 1_700_000_000_000
SCALE = 10 ** 10


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    profile = "--profile" in sys.argv
    so = os.path.abspath(args[0]) if args else SO
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

    def run(cmds, raise_on_error=True):
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise RuntimeError(f"{cmds[0]}: {reply}")

    def phase(cmds, show=False):
        """Runs cmds; returns the instructions per call."""
        subprocess.run(["callgrind_control", "-z", str(srv.pid)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        run(cmds)
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
        if show:
            inc = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=99.5", path],
                                 capture_output=True, text=True).stdout
            print(f"--- {cmds[0][0]} {' '.join(map(str, cmds[0][1:]))}: inclusive, per call")
            for line in inc.splitlines():
                m = re.match(r"\s*([\d,]+) \([\s\d.]+%\)\s+\S*:(.*)", line)
                if m:
                    n = int(m.group(1).replace(",", "")) / len(cmds)
                    if n >= 80:
                        print(f"{n:9,.0f}  {m.group(2)[:150]}")
        return total / len(cmds)

    def fill(key, layout=()):
        if layout:
            r.execute_command("RANK.CREATE", key, *layout)
        pipe = r.pipeline(transaction=False)
        for start in range(0, M, 1000):
            a = []
            for i in range(start, start + 1000):
                a += [(i % 1000) * SCALE + 5, f"m{i}"]
            pipe.execute_command("ZADD", key, *a)
        pipe.execute()

    fill("rb", ["TIEBREAK", "EARLIER"])  # a created board: B:meta with its layout
    fill("rn")
    r.execute_command("RANK.CREATE", "rw", "LAYOUT", "WIDE")
    run([("RANK.ADD", "rw", f"m{i}", i % 1000, "NOW", T0 + i) for i in range(M)])

    member = lambda i: f"m{(i * 7919) % M}"
    zscore = lambda i: ("ZSCORE", "rn", member(i))
    zadd = lambda i: ("ZADD", "rn", (12345 + i) * SCALE + 7, member(i))
    # Warm up: hash tables grown, every path taken once.
    for fn in (zscore, zadd, lambda i: ("RANK.INCR", "rb", member(i), 3),
               lambda i: ("RANK.INCR", "rw", member(i), 3)):
        run([fn(i) for i in range(N, 2 * N)])
    floor = phase([zscore(i) for i in range(N)]) + phase([zadd(i) for i in range(N)])
    rows = [
        ("RANK.INCR", lambda i: ("RANK.INCR", "rb", member(i), 3)),
        ("RANK.INCR, NOW given", lambda i: ("RANK.INCR", "rb", member(i), 3, "NOW", T0 + i)),
        ("RANK.ADD new points", lambda i: ("RANK.ADD", "rb", member(i), 2000 + i)),
        ("RANK.ADD new points, NOW given", lambda i: ("RANK.ADD", "rb", member(i), 4000 + i, "NOW", T0 + i)),
        ("RANK.INCR LAYOUT WIDE", lambda i: ("RANK.INCR", "rw", member(i), 3)),
        ("RANK.INCR LAYOUT WIDE, NOW given", lambda i: ("RANK.INCR", "rw", member(i), 3, "NOW", T0 + i)),
    ]
    print(f"10,000-member board; native floor ZSCORE + ZADD: {floor:,.0f} instructions per call")
    print("| command | module instr/call | native floor | module ÷ floor |")
    print("|---|---:|---:|---:|")
    results = []
    for name, fn in rows:
        o = phase([fn(i) for i in range(N)])
        results.append((name, o))
        print(f"| {name} | {o:,.0f} | {floor:,.0f} | {o / floor:.2f} |", flush=True)
    if profile:
        for name, fn in rows:
            phase([fn(i) for i in range(N, 2 * N)], show=True)
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    srv.wait()


if __name__ == "__main__":
    main()
