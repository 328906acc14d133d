"""Instructions per call of LOCK and DELAYQ against their native floors, the
usual Lua scripts and the Lua twins, counted by valgrind's callgrind inside
Redis's `call()` (the command and what it propagates). Unlike timings, the
counts do not depend on the machine's load:
`python3 bench/lockdq_callgrind.py` (needs valgrind; takes a few minutes).

The scripts in USUAL are the ones users write today (see bench/lock.py and
bench/delayq.py); the native floors are the fewest plain commands that make
the same change, summed."""
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
from lock import REDISSON_LOCK, COMPARE_AND_DELETE  # noqa: E402
from delayq import ZSET_CONSUME, ADD_ONCE, LEASE_CONSUME  # noqa: E402

N = 2000
T = 1764720000000


def main():
    out_dir = tempfile.mkdtemp(prefix="hotpath-callgrind-")
    out = os.path.join(out_dir, "cg.out")
    port = free_port()
    srv = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--toggle-collect=call",
         "redis-server", "--port", str(port), "--save", "", "--dir", out_dir, "--loadmodule", SO],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port)
    for _ in range(300):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)

    def lua(path):
        return r.script_load(open(os.path.join(ROOT, "lua-compat", "generated", path)).read())

    counts = {}

    def run(cmds):
        pipe = r.pipeline(transaction=False)
        for c in cmds:
            pipe.execute_command(*c)
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise RuntimeError(reply)

    def phase(name, cmds):
        subprocess.run(["callgrind_control", "-z", str(srv.pid)], stdout=subprocess.DEVNULL)
        run(cmds)
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
        return counts[name]

    rl, cad = r.script_load(REDISSON_LOCK), r.script_load(COMPARE_AND_DELETE)
    consume, add_once = r.script_load(ZSET_CONSUME), r.script_load(ADD_ONCE)
    lease_consume = r.script_load(LEASE_CONSUME)
    t_acq, t_rel = lua("lock/acquire.lua"), lua("lock/release.lua")
    t_add, t_poll, t_ack = lua("delayq/add.lua"), lua("delayq/poll.lua"), lua("delayq/ack.lua")
    ids = range(N)
    rows = []

    # LOCK: acquire a free lock, release it.
    ours = phase("acq", [("LOCK.ACQUIRE", f"lk{i}", "owner-1", 30000) for i in ids])
    native = phase("setnx", [("SET", f"sn{i}", "owner-1", "NX", "PX", 30000) for i in ids])
    usual = phase("rl", [("EVALSHA", rl, 1, f"rl{i}", 30000, "owner-1") for i in ids])
    twin = phase("tacq", [("EVALSHA", t_acq, 1, f"tl{i}", "owner-1", 30000) for i in ids])
    rows.append(("LOCK.ACQUIRE (free lock)", ours, ("SET NX PX", native), ("Redisson lock script", usual), twin))
    ours = phase("acq2", [("LOCK.ACQUIRE", f"lk{i}", "owner-2", 30000) for i in ids])
    rows.append(("LOCK.ACQUIRE (held: refused)", ours, ("SET NX PX, refused",
                 phase("setnx2", [("SET", f"sn{i}", "owner-2", "NX", "PX", 30000) for i in ids])),
                 ("Redisson lock script", phase("rl2", [("EVALSHA", rl, 1, f"rl{i}", 30000, "owner-2") for i in ids])),
                 phase("tacq2", [("EVALSHA", t_acq, 1, f"tl{i}", "owner-2", 30000) for i in ids])))
    ours = phase("rel", [("LOCK.RELEASE", f"lk{i}", "owner-1") for i in ids])
    native = phase("del", [("DEL", f"sn{i}") for i in ids])
    run([("SET", f"sn{i}", "owner-1", "NX", "PX", 30000) for i in ids])
    usual = phase("cad", [("EVALSHA", cad, 1, f"sn{i}", "owner-1") for i in ids])
    twin = phase("trel", [("EVALSHA", t_rel, 1, f"tl{i}", "owner-1") for i in ids])
    rows.append(("LOCK.RELEASE", ours, ("DEL", native), ("compare-and-delete script", usual), twin))
    ours = phase("acq3", [("LOCK.ACQUIRE", f"lk{i}", "owner-3", 30000) for i in ids])
    native = phase("setnx3", [("SET", f"sn{i}", "owner-3", "NX", "PX", 30000) for i in ids])
    rows.append(("LOCK.ACQUIRE (released lock, fence kept)", ours, ("SET NX PX", native), ("", 0), 0))

    # DELAYQ: add N jobs, poll them one by one, ack each.
    ours = phase("add", [("DELAYQ.ADD", "q{1}", f"job{i}", "payload", "AT", T + i) for i in ids])
    hsetnx = phase("hsetnx", [("HSETNX", "n{1}:jobs", f"job{i}", "0:5:0:payload") for i in ids])
    zadd = phase("zadd", [("ZADD", "n{1}:due", T + i, f"job{i}") for i in ids])
    usual = phase("addonce", [("EVALSHA", add_once, 2, "u{1}:jobs", "u{1}:due", f"job{i}", "payload", T + i)
                              for i in ids])
    twin = phase("tadd", [("EVALSHA", t_add, 1, "t{1}", f"job{i}", "payload", "AT", T + i) for i in ids])
    rows.append(("DELAYQ.ADD", ours, ("HSETNX+ZADD", hsetnx + zadd), ("add-once script", usual), twin))
    now = T + 10 * N
    ours = phase("poll", [("DELAYQ.POLL", "q{1}", 60000) for i in ids])
    zr = phase("zrange", [("ZRANGEBYSCORE", "n{1}:due", "-inf", now, "LIMIT", 0, 1) for i in ids])
    zadd2 = phase("zadd2", [("ZADD", "n{1}:due", now + 60000, f"job{i}") for i in ids])
    hset = phase("hset", [("HSET", "n{1}:jobs", f"job{i}", f"{i + 1}:1:5:1:payload") for i in ids])
    run([("ZADD", "p{1}", T + i, f"payload{i}") for i in ids])
    zr2 = phase("zrange2", [("ZRANGEBYSCORE", "p{1}", "-inf", now, "LIMIT", 0, 1) for i in ids])
    zrem = phase("zrem", [("ZREM", "p{1}", f"payload{i}") for i in ids])
    run([("ZADD", "c{1}", T + i, f"payload{i}") for i in ids])
    usual = phase("consume", [("EVALSHA", consume, 1, "c{1}", now, 1) for i in ids])
    run([x for i in ids for x in (("ZADD", "lc{1}:due", T + i, f"job{i}"), ("HSET", "lc{1}:p", f"job{i}", "payload"))])
    leasing = phase("leasing", [("EVALSHA", lease_consume, 3, "lc{1}:due", "lc{1}:n", "lc{1}:p", now, 60000)
                                for i in ids])
    twin = phase("tpoll", [("EVALSHA", t_poll, 1, "t{1}", 60000) for i in ids])
    rows.append(("DELAYQ.POLL (1 job)", ours, ("ZRANGEBYSCORE+ZREM (no lease)", zr2 + zrem),
                 ("ZSet consume script (no lease)", usual), twin))
    rows.append(("DELAYQ.POLL (1 job), same change", ours,
                 ("ZRANGEBYSCORE+ZADD+HSET (lease, attempt)", zr + zadd2 + hset),
                 ("leasing consume script", leasing), 0))
    ours = phase("ack", [("DELAYQ.ACK", "q{1}", f"job{i}", (i + 1) * 1_000_000 + 1) for i in ids])
    zrem2 = phase("zrem2", [("ZREM", "n{1}:due", f"job{i}") for i in ids])
    hdel = phase("hdel", [("HDEL", "n{1}:jobs", f"job{i}") for i in ids])
    twin = phase("tack", [("EVALSHA", t_ack, 1, "t{1}", f"job{i}", (i + 1) * 1_000_000 + 1) for i in ids])
    rows.append(("DELAYQ.ACK", ours, ("ZREM+HDEL", zrem2 + hdel), ("", 0), twin))
    assert r.hlen("q{1}:jobs") == 0 and r.hlen("t{1}:jobs") == 0

    print("| command | module instr/call | native floor | usual Lua script | Lua twin |")
    print("|---|---:|---|---|---:|")
    for name, ours, (nl, nv), (ul, uv), tv in rows:
        u = f"{ul} {uv:,.0f} ({ours / uv:.2f}×)" if uv else ""
        t = f"{tv:,.0f} ({ours / tv:.2f}×)" if tv else ""
        print(f"| {name} | {ours:,.0f} | {nl} {nv:,.0f} ({ours / nv:.2f}×) | {u} | {t} |", flush=True)
    try:
        r.execute_command("SHUTDOWN", "NOSAVE")
    except redis.ConnectionError:
        pass
    srv.wait()


if __name__ == "__main__":
    main()
