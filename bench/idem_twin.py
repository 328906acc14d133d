"""Server time per call of the Lua twins of RATE.CHECK and RANK.INCR
without a token, with a new `IDEM token` per call and with a replayed
token (issue 23), on a redis-server with no module loaded: each twin by
EVALSHA, rounds interleaved, the time being Redis's own (INFO
commandstats usec_per_call of evalsha, reset before every batch).
`python3 bench/idem_twin.py [ROUNDS]` (about 20 s); HOTPATH_SERVER picks
the server (default /usr/bin/redis-server), HOTPATH_TWINS the generated
folder (default lua-compat/generated), or several separated by ':' to
compare versions in one run (each on its own keys, batches interleaved).
`--callgrind` counts instructions per call instead (valgrind's callgrind
inside Redis's `call()`, bench/rate_callgrind.py's counter; 200 calls a
row, about a minute a version): the same rows, machine-independent."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.environ.get("HOTPATH_SERVER", "/usr/bin/redis-server")
TWINS = os.environ.get("HOTPATH_TWINS", os.path.join(ROOT, "lua-compat/generated")).split(":")
BATCH = 2000
KEYS = 300


def start():
    port = common.free_port()
    d = tempfile.mkdtemp()
    p = subprocess.Popen([SERVER, "--port", str(port), "--save", "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(100):
        try:
            r.ping()
            return p, r
        except redis.ConnectionError:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def load(r, twins, path):
    with open(os.path.join(twins, path)) as f:
        return r.script_load(f.read())


def batch(r, sha, calls):
    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for keys, args in calls:
        pipe.evalsha(sha, len(keys), *keys, *args)
    for out in pipe.execute(raise_on_error=False):
        if isinstance(out, Exception):
            raise SystemExit(f"twin error: {out}")
    stats = r.info("commandstats")["cmdstat_evalsha"]
    return stats["usec"] / stats["calls"]


def callgrind():
    import rate_callgrind

    cg = rate_callgrind.Counter()
    n = 200
    try:
        print(f"| twin (instructions per call, {n} calls, 100 keys) | none | new token | replayed token |")
        print("|---|---:|---:|---:|")
        for v, twins in enumerate(TWINS):
            rate = load(cg.r, twins, "rate/check.lua")
            incr = load(cg.r, twins, "rank/incr.lua")
            create = load(cg.r, twins, "rank/create.lua")
            for b in range(10):
                cg.r.evalsha(create, 1, f"v{v}b{b}")
            for name, sha, base in (
                ("RATE.CHECK", rate, lambda k: (f"v{v}r{k}", 1000000, 60000)),
                ("RANK.INCR", incr, lambda k: (f"v{v}b{k % 10}", f"m{k}", 1)),
            ):
                call = lambda i, *extra: ("EVALSHA", sha, 1, *base((i * 7919) % 100), *extra)  # noqa: E731
                cg.run([call(i) for i in range(n)], count=False)
                none = cg.run([call(i) for i in range(n)])
                cg.run([call(i, "IDEM", f"w{name}{i}") for i in range(n)], count=False)
                new = cg.run([call(i, "IDEM", f"t{name}{i}") for i in range(n)])
                replay = cg.run([call(i, "IDEM", f"t{name}{i}") for i in range(n)])
                label = name if len(TWINS) == 1 else f"{name} ({twins})"
                print(f"| {label} | {none:,.0f} | {new:,.0f} | {replay:,.0f} |", flush=True)
    finally:
        cg.stop()


def main():
    if "--callgrind" in sys.argv:
        return callgrind()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    p, r = start()
    try:
        seq = [0]
        sides = []
        for v, twins in enumerate(TWINS):
            shas = {"rate": load(r, twins, "rate/check.lua"), "rank": load(r, twins, "rank/incr.lua")}
            create = load(r, twins, "rank/create.lua")
            for b in range(30):
                r.evalsha(create, 1, f"v{v}b{b}")
            sides.append((v, twins, shas, {"rate": [], "rank": []}))

        def calls(v, used, cmd, kind):
            out = []
            for i in range(BATCH):
                k = (i * 7919) % KEYS
                if cmd == "rate":
                    keys, args = [f"v{v}r{k}"], ["1000000", "60000"]
                else:
                    keys, args = [f"v{v}b{k % 30}"], [f"m{k}", "1"]
                if kind == "new":
                    seq[0] += 1
                    args = args + ["IDEM", f"tok-{seq[0]:08d}"]
                    used[cmd].append((keys, args))
                elif kind == "replay":
                    keys, args = used[cmd][i % len(used[cmd])]
                out.append((keys, args))
            return out

        res = {}
        for _ in range(rounds):
            for cmd in ("rate", "rank"):
                for kind in ("none", "new", "replay"):
                    for v, twins, shas, used in sides:
                        res.setdefault((v, cmd, kind), []).append(batch(r, shas[cmd], calls(v, used, cmd, kind)))
        print(f"| twin ({rounds} x {BATCH} calls, {KEYS} keys, median µs/call) | none | new token | replayed token |")
        print("|---|---:|---:|---:|")
        for v, twins, _, _ in sides:
            for cmd, name in (("rate", "RATE.CHECK"), ("rank", "RANK.INCR")):
                cells = [f"{statistics.median(res[(v, cmd, k)]):.1f}" for k in ("none", "new", "replay")]
                label = name if len(sides) == 1 else f"{name} ({twins})"
                print(f"| {label} | " + " | ".join(cells) + " |")
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
