"""RANK's LAYOUT WIDE against the packed layout (issue 27): memory per
member, instructions per call of INCR, ADD, GET, TOP and POSITION counted
by valgrind's callgrind inside Redis's `call()` (as
bench/pollrank_callgrind.py does), on boards of 100,000 members, and the
server CPU of a MERGE of two such boards and of an IMPORT of one (no
valgrind: MERGE works in slices outside `call()`).

    python3 bench/rank_wide.py [libhotpath.so]

Needs valgrind; takes about two minutes. Every write gives NOW (verbatim
replication, the form a hot board should use), so the rows compare the
layouts and not the replication."""
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

M = 100_000
N = 2000
T0 = 1_700_000_000_000


def memory(binary, so):
    """Bytes per member of a board of M members in each layout (members
    `m0` … `m99999`, points below 800 (every layout holds them), distinct times): used_memory
    before and after, and MEMORY USAGE of each key."""
    d = tempfile.mkdtemp(prefix="hotpath-wide-mem-")
    port = free_port()
    srv = subprocess.Popen([binary, "--port", str(port), "--save", "", "--dir", d, "--loadmodule", so],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)
    out = []
    for name, opts in [("packed (default)", []), ("packed UNIT MS DIGITS 13", ["UNIT", "MS", "DIGITS", "13"]),
                       ("WIDE", ["LAYOUT", "WIDE"])]:
        r.flushall()
        time.sleep(0.2)
        r.execute_command("RANK.CREATE", "b", *opts, "NOW", T0)
        before = r.info("memory")["used_memory"]
        pipe = r.pipeline(transaction=False)
        for i in range(M):
            pipe.execute_command("RANK.ADD", "b", f"m{i}", (i * 7919) % 800, "NOW", T0 + i * 1000)
            if i % 5000 == 4999:
                pipe.execute()
        pipe.execute()
        after = r.info("memory")["used_memory"]
        keys = {k: r.memory_usage(k, samples=0) for k in ("b", "b:time") if r.exists(k)}
        out.append((name, (after - before) / M, keys))
    srv.terminate()
    srv.wait()
    return out


def cpu(r):
    i = r.info("cpu")
    return i["used_cpu_user"] + i["used_cpu_sys"]


def merge_import(binary, so):
    """Server CPU seconds of RANK.MERGE (SUM) of two boards of M members
    (half of them shared) and of RANK.IMPORT of a plain board of M members
    (COUNT 1000 per call), packed against WIDE: best of three."""
    d = tempfile.mkdtemp(prefix="hotpath-wide-merge-")
    port = free_port()
    srv = subprocess.Popen([binary, "--port", str(port), "--save", "", "--dir", d, "--loadmodule", so],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port, socket_timeout=300)
    for _ in range(100):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)
    rows = []
    for name, opts in [("packed (default)", []), ("WIDE", ["LAYOUT", "WIDE"])]:
        r.flushall()
        for key, off in (("a", 0), ("b", M // 2)):
            r.execute_command("RANK.CREATE", key, *opts, "NOW", T0)
            pipe = r.pipeline(transaction=False)
            for i in range(M):
                pipe.execute_command("RANK.ADD", key, f"m{i + off}", i % 1000, "NOW", T0 + i)
                if i % 5000 == 4999:
                    pipe.execute()
            pipe.execute()
        r.execute_command("RANK.CREATE", "d", *opts, "NOW", T0)
        merge = []
        for _ in range(3):
            c0 = cpu(r)
            n = r.execute_command("RANK.MERGE", "d", 2, "a", "b")
            merge.append(cpu(r) - c0)
        assert n == M + M // 2, n
        imp = []
        for _ in range(3):
            r.delete("g", "g:meta", "g:time", "g:import")
            pipe = r.pipeline(transaction=False)
            for start in range(0, M, 1000):
                pipe.zadd("g", {f"m{i}": i % 1000 for i in range(start, start + 1000)})
            pipe.execute()
            c0 = cpu(r)
            left = r.execute_command("RANK.IMPORT", "g", *opts, "COUNT", 1000, "NOW", T0)
            while left:
                left = r.execute_command("RANK.IMPORT", "g", "COUNT", 1000)
            imp.append(cpu(r) - c0)
        rows.append((name, min(merge), min(imp)))
    srv.terminate()
    srv.wait()
    return rows


def main():
    so = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else SO
    binary = os.environ.get("HOTPATH_SERVER", "redis-server")
    print("| layout | used_memory per member | MEMORY USAGE |")
    print("|---|---:|---|")
    for name, per, keys in memory(binary, so):
        print(f"| {name} | {per:.1f} B | " + ", ".join(f"`{k}` {v / M:.1f} B/member" for k, v in keys.items()) + " |",
              flush=True)
    print()
    print(f"| layout | RANK.MERGE SUM, 2 × {M:,} → {M + M // 2:,} members, server CPU | "
          f"RANK.IMPORT of {M:,} (COUNT 1000), server CPU |")
    print("|---|---:|---:|")
    for name, m, i in merge_import(binary, so):
        print(f"| {name} | {m:.2f} s | {i:.2f} s |", flush=True)

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

    def run(cmds):
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise RuntimeError(f"{cmds[0]}: {reply}")

    def phase(cmds):
        """Runs cmds; returns instructions per call."""
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
        text = subprocess.run(["callgrind_annotate", new.pop()], capture_output=True, text=True).stdout
        total = int(re.search(r"([\d,]+) \(100.0%\)\s+PROGRAM TOTALS", text).group(1).replace(",", ""))
        return total / len(cmds)

    for key, opts in [("p", []), ("w", ["LAYOUT", "WIDE"])]:
        r.execute_command("RANK.CREATE", key, *opts, "NOW", T0)
        for start in range(0, M, 2000):
            run([("RANK.ADD", key, f"m{i}", i % 1000, "NOW", T0 + i) for i in range(start, start + 2000)])
    member = lambda i: f"m{(i * 7919) % M}"
    # The position of each member as RANK.POSITION answers it: (score,
    # member) on the packed board, (points, stored name) on the wide one.
    at = {}
    for key in ("p", "w"):
        pipe = r.pipeline(transaction=False)
        for i in range(2 * N):
            pipe.execute_command("RANK.POSITION", key, 0, "MEMBER", member(i))
        at[key] = [(e[1][2], e[1][0]) if key == "p" else (e[1][1], e[1][2]) for e in pipe.execute()]
    rows = [
        ("RANK.INCR", lambda k, i: ("RANK.INCR", k, member(i), 3, "NOW", T0 + M + i)),
        ("RANK.ADD new points", lambda k, i: ("RANK.ADD", k, member(i), 5000 + i, "NOW", T0 + 2 * M + i)),
        ("RANK.ADD new member", lambda k, i: ("RANK.ADD", k, f"n{i}", 10, "NOW", T0 + 3 * M + i)),
        ("RANK.ADD GT, kept", lambda k, i: ("RANK.ADD", k, member(i), 0, "GT", "NOW", T0 + 4 * M + i)),
        ("RANK.GET", lambda k, i: ("RANK.GET", k, member(i))),
        ("RANK.TOP 10", lambda k, i: ("RANK.TOP", k, 10)),
        ("RANK.POSITION 10 (the top)", lambda k, i: ("RANK.POSITION", k, 10)),
        ("RANK.POSITION 10 MEMBER", lambda k, i: ("RANK.POSITION", k, 10, "MEMBER", member(i))),
        ("RANK.POSITION 10 AT", lambda k, i: ("RANK.POSITION", k, 10, "AT", *at[k][i])),
    ]
    print()
    print("| command (100k board, NOW given) | packed instr/call | WIDE instr/call | WIDE ÷ packed |")
    print("|---|---:|---:|---:|")
    for name, fn in rows:
        got = []
        for key in ("p", "w"):
            run([fn(key, N + i) for i in range(N)])  # warm up
            got.append(phase([fn(key, i) for i in range(N)]))
        print(f"| {name} | {got[0]:,.0f} | {got[1]:,.0f} | {got[1] / got[0]:.2f} |", flush=True)
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    srv.wait()


if __name__ == "__main__":
    main()
