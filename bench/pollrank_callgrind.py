"""Instructions per call of the hot POLL and RANK writes against the seed
scripts users write today and the native floor, counted by valgrind's
callgrind inside Redis's `call()` (the command itself, as `INFO
commandstats` times it). Unlike timings, the counts do not depend on the
machine's load: `python3 bench/pollrank_callgrind.py [libhotpath.so]`
(needs valgrind; takes about two minutes; give an older build's .so to
compare).

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
from seeds import POLL_SEED, RANK_SEED  # noqa: E402

N = 4000
T0 = 1_700_000_000_000
API = ["RM_OpenKey", "RM_Call", "RM_Replicate", "RM_ReplicateVerbatim"]


def main():
    so = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else SO
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

    poll_seed = r.script_load(POLL_SEED)
    rank_seed = r.script_load(RANK_SEED)

    def row(name, ours, seed, floor):
        """Each argument is a function of the call index i giving one
        command (floor: a list of them, measured one by one and added).
        Indices N … 2N−1 warm the structures up first (the hash tables
        grow, the listpacks convert), indices 0 … N−1 are counted."""
        for fns in [[ours], [seed], floor]:
            for fn in fns:
                phase_free([fn(i) for i in range(N, 2 * N)])
        o, api = phase([ours(i) for i in range(N)])
        s, _ = phase([seed(i) for i in range(N)])
        f = sum(phase([fn(i) for i in range(N)])[0] for fn in floor)
        print(f"| {name} | {o:,.0f} | {s:,.0f} | {f:,.0f} | {o / f:.2f} | "
              + " ".join(f"{k[3:]} {v:.2f}" for k, v in api.items() if v) + " |", flush=True)

    def phase_free(cmds):
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        pipe.execute(raise_on_error=True)

    print("| command | module instr/call | seed script | native floor | module ÷ floor | API calls per call |")
    print("|---|---:|---:|---:|---:|---|")
    cand = lambda i: f"c{i % 50}"
    r.execute_command("POLL.CREATE", "po")
    r.execute_command("POLL.CREATE", "pm", "CANDIDATES", 50, *[f"c{i}" for i in range(50)])
    seed = lambda tag: lambda i: ("EVALSHA", poll_seed, 3, f"s{tag}:voters", f"s{tag}:board", f"s{tag}:audit",
                                  f"u{i}", cand(i), T0 + i)
    hsetnx = lambda tag: lambda i: ("HSETNX", f"n{tag}:voted", f"u{i}", f"{cand(i)}:{T0 + i}")
    zincrby = lambda tag: lambda i: ("ZINCRBY", f"n{tag}:board", 1, cand(i))
    row("POLL.VOTE ONCE, new voter",
        lambda i: ("POLL.VOTE", "po", f"u{i}", cand(i)), seed("o"), [hsetnx("o"), zincrby("o")])
    row("POLL.VOTE ONCE, new voter, NOW given",
        lambda i: ("POLL.VOTE", "po", f"v{i}", cand(i), "NOW", T0 + i), seed("v"), [hsetnx("v"), zincrby("v")])
    row("POLL.VOTE ONCE with CANDIDATES, new voter",
        lambda i: ("POLL.VOTE", "pm", f"u{i}", cand(i)), seed("m"), [hsetnx("m"), zincrby("m")])
    row("POLL.VOTE ONCE, duplicate",
        lambda i: ("POLL.VOTE", "po", f"u{i}", cand(i)), seed("o"), [hsetnx("o")])
    r.execute_command("POLL.CREATE", "mm", "MODE", "MULTI", "MAXVOTES", 3)
    row("POLL.VOTE MULTI, new vote",
        lambda i: ("POLL.VOTE", "mm", f"u{i}", cand(i)),
        lambda i: ("EVALSHA", poll_seed, 3, "ms:voters", "ms:board", "ms:audit", f"u{i}:{cand(i)}", cand(i), T0),
        [lambda i: ("HSETNX", "mn:voted", f"u{i}:{cand(i)}", f"{cand(i)}:{T0 + i}"),
         zincrby("mn"),
         lambda i: ("HSET", "mn:uservotes", f"u{i}", f'["{cand(i)}"]')])

    # A shard of a spread poll (shard 0 of 1: every voter is its own), with
    # NOW and SPREAD given as the client libraries send them; the floor is
    # the single-slot vote's.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                    "python", "src"))
    from hotpath import routing  # noqa: E402
    shard = routing.shard_key("ps", 1, 0).decode()
    r.execute_command("POLL.CREATE", shard, "SPREAD", 1)
    row("POLL.VOTE ONCE on a spread poll's shard, NOW given",
        lambda i: ("POLL.VOTE", shard, f"v{i}", cand(i), "NOW", T0 + i, "SPREAD", 1), seed("w"),
        [hsetnx("w"), zincrby("w")])

    # RANK on a 100,000-member created board.
    M = 100_000
    r.execute_command("RANK.CREATE", "rb")
    for key in ("rb", "rs", "rn"):
        pipe = r.pipeline(transaction=False)
        for start in range(0, M, 1000):
            args = []
            for i in range(start, start + 1000):
                args += [(i % 1000) * 10 ** 10 + 5, f"m{i}"]
            pipe.execute_command("ZADD", key, *args)
        pipe.execute()
    member = lambda i: f"m{(i * 7919) % M}"
    rseed = lambda delta: lambda i: ("EVALSHA", rank_seed, 1, "rs", member(i), delta, T0 // 1000 + i)
    zscore = lambda i: ("ZSCORE", "rn", member(i))
    row("RANK.INCR (100k board)",
        lambda i: ("RANK.INCR", "rb", member(i), 3), rseed(3),
        [zscore, lambda i: ("ZADD", "rn", (12345 + i) * 10 ** 10 + 7, member(i))])
    row("RANK.ADD new points (100k board)",
        lambda i: ("RANK.ADD", "rb", member(i), 2000 + i), rseed(0),
        [zscore, lambda i: ("ZADD", "rn", (22345 + i) * 10 ** 10 + 7, member(i))])
    row("RANK.ADD new member (100k board)",
        lambda i: ("RANK.ADD", "rb", f"n{i}", 10), lambda i: ("EVALSHA", rank_seed, 1, "rs", f"n{i}", 10, T0 // 1000),
        [lambda i: ("ZSCORE", "rn", f"n{i}"), lambda i: ("ZADD", "rn", 10 * 10 ** 10 + 7, f"n{i}")])
    # With NOW given, RANK.ADD and RANK.INCR replicate verbatim (issue 27).
    row("RANK.INCR (100k board), NOW given",
        lambda i: ("RANK.INCR", "rb", member(i), 3, "NOW", T0 + i), rseed(3),
        [zscore, lambda i: ("ZADD", "rn", (32345 + i) * 10 ** 10 + 7, member(i))])
    row("RANK.ADD new member (100k board), NOW given",
        lambda i: ("RANK.ADD", "rb", f"w{i}", 10, "NOW", T0 + i),
        lambda i: ("EVALSHA", rank_seed, 1, "rs", f"w{i}", 10, T0 // 1000),
        [lambda i: ("ZSCORE", "rn", f"w{i}"), lambda i: ("ZADD", "rn", 10 * 10 ** 10 + 7, f"w{i}")])
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    srv.wait()


if __name__ == "__main__":
    main()
