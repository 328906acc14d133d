"""IDEM against the native floor and the script users write today, in one
run: IDEM.BEGIN of a new key against `SET NX PX` (the usual in-progress
marker: no fingerprint, no fence, no stored result) and a Powertools-style
claim script (a Hash with status, fingerprint and expiry, read then
written, no fence); IDEM.BEGIN of a done key (the retry that gets the
stored result) against `HMGET`; IDEM.COMPLETE against `HSET` + `PEXPIRE`
in one script. The Lua twins are measured too.

Each figure is the best 10,000-call chunk (common.Bench.measure).

`IDEM token` on the module's own writes (docs/idem.md, "IDEM tokens on
writes"), for RATE.CHECK, RANK.INCR and STOCK.RESERVE: the write with a
new token against the same write without one and the native floor (the
natives that make the write's change, as bench/rate.py, bench/rank.py and
bench/stock.py count them, plus an `HSET` of a record of the same size
into a Hash per entity, the store a token needs at the least); and the
retry whose token is found (the stored reply replayed) against the write
without a token and an `HGET` of the record. The sides of a row run
interleaved (bench/stock.py's `side_by_side`), each on its own fresh
keys, over E entities, so that a store ends with N / E tokens."""

N = 50_000

# The claim most idempotency layers over Redis run: read the record, take
# it when absent or expired, else report it.
CLAIM = """
local v = redis.call('hmget', KEYS[1], 'status', 'fp', 'expiry', 'result')
if v[1] == false or (v[1] == 'INPROGRESS' and tonumber(v[3]) < tonumber(ARGV[3])) then
  redis.call('hset', KEYS[1], 'status', 'INPROGRESS', 'fp', ARGV[1], 'expiry', ARGV[3] + ARGV[2])
  redis.call('pexpire', KEYS[1], 86400000)
  return {'NEW'}
end
if v[2] ~= ARGV[1] then return {'MISMATCH'} end
return {v[1], v[4]}
"""

# The completion of that layer: store the result and the TTL.
SAVE = """
redis.call('hset', KEYS[1], 'status', 'COMPLETED', 'result', ARGV[1])
redis.call('pexpire', KEYS[1], 86400000)
return 1
"""

NOW = 1893456000000  # 2030-01-01: records expire a TTL after NOW.

# IDEM tokens: entities, calls per side (interleaved in ROUNDS rounds).
E = 500
TN = 30_000
ROUNDS = 6
BIG = 10 ** 12
LEASE = 900_000


def bench(b):
    r = b.r
    claim, save = r.script_load(CLAIM), r.script_load(SAVE)
    tb, tc = b.lua("idem/begin.lua"), b.lua("idem/complete.lua")
    keys = range(N)
    ours = b.measure("idem.begin", (("IDEM.BEGIN", f"ik:{i}", "sha-a", 30000, "NOW", NOW)
                                    for i in keys))
    native = b.measure("set", (("SET", f"sn:{i}", "1", "NX", "PX", 30000) for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", claim, 1, f"cl:{i}", "sha-a", 30000, NOW)
                                  for i in keys))
    twin = b.measure("evalsha", (("EVALSHA", tb, 1, f"tw:{i}", "sha-a", 30000, "NOW", NOW)
                                 for i in keys))
    b.row("IDEM.BEGIN (new key)", ours,
          [("SET NX PX", native), ("claim script", usual), ("Lua twin", twin)],
          "≤ ½ of the claim script")
    res = '200:{"id":1}'
    ours = b.measure("idem.complete", (("IDEM.COMPLETE", f"ik:{i}", NOW, res, "NOW", NOW)
                                       for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", save, 1, f"cl:{i}", res) for i in keys))
    twin = b.measure("evalsha", (("EVALSHA", tc, 1, f"tw:{i}", NOW, res, "NOW", NOW)
                                 for i in keys))
    b.row("IDEM.COMPLETE", ours, [("save script", usual), ("Lua twin", twin)],
          "≤ the save script")
    ours = b.measure("idem.begin", (("IDEM.BEGIN", f"ik:{i}", "sha-a", 30000, "NOW", NOW)
                                    for i in keys))
    native = b.measure("hmget", (("HMGET", f"cl:{i}", "status", "fp", "expiry", "result")
                                 for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", claim, 1, f"cl:{i}", "sha-a", 30000, NOW)
                                  for i in keys))
    b.row("IDEM.BEGIN (done: the stored result replayed)", ours,
          [("HMGET", native), ("claim script", usual)], "")
    b.note("IDEM.BEGIN also checks the fingerprint, issues a fence and replicates the instants it "
           "used; SET NX PX does none of that. The module's own RM_Replicate is inside its "
           "measured time; a native command's propagation is not.")

    tokens(b)


def record_of(r, store, token):
    """The stored record (bytes) of `token` in `store`: what the native
    floor's HSET writes, the same size."""
    v = r.hget(store, token)
    if v is None:
        raise RuntimeError(f"no token {token} in {store}")
    return v


def tokens(b):
    """The rows of `IDEM token` on writes (see the module's docstring)."""
    from stock import side_by_side

    r = b.r
    n = TN

    def stored(prefix, count):
        # Every call with a new token must have stored it (N / E per store).
        got = sum(r.hlen(f"{prefix}{j}:idem") - 1 for j in range(E) if r.exists(f"{prefix}{j}:idem"))
        if got != count:
            raise RuntimeError(f"{prefix}*:idem: {got} tokens after {count} calls")

    def bar(got):
        # Issue 23's bar for a write with a new token: 1.2× the write
        # without one, plus the native store of its record.
        return ("bar: 1.2× without + HSET", 1.2 * got["plain"] + got["hset"])

    def replayed():
        return int(r.info("hotpath")["hotpath_idem_tokens_replayed"])

    # RATE.CHECK GCRA: the natives GET + SET PX of the state (bench/rate.py).
    rc = ("RATE.CHECK",)
    lim = (10 ** 9, 60000, "NOW", NOW)
    r.execute_command(*rc, "probe", *lim, "IDEM", "t0")
    rec = record_of(r, "probe:idem", "t0")
    gcra = "gcra:1764720060000:12000:20000"
    sides = [
        ("token", [("rate.check", lambda i: (*rc, f"rt{i % E}", *lim, "IDEM", f"t{i}"))]),
        ("plain", [("rate.check", lambda i: (*rc, f"rp{i % E}", *lim))]),
        ("floor", [("get", lambda i: ("GET", f"rn{i % E}")),
                   ("set", lambda i: ("SET", f"rn{i % E}", gcra, "PX", 60000)),
                   ("hset", lambda i: ("HSET", f"rn{i % E}:idem", f"t{i}", rec))]),
        ("hset", [("hset", lambda i: ("HSET", f"rh{i % E}:idem", f"t{i}", rec))]),
    ]
    tw = b.lua("rate/check.lua")
    sides.append(("twin", [("evalsha", lambda i: ("EVALSHA", tw, 1, f"rl{i % E}", *lim, "IDEM", f"t{i}"))]))
    got = side_by_side(b, sides, n, ROUNDS)
    stored("rt", n)
    b.row("RATE.CHECK GCRA, new IDEM token", got["token"],
          [("without the token", got["plain"]), ("natives GET + SET PX + HSET of the record", got["floor"]),
           bar(got), ("Lua twin with the token", got["twin"])], "≤ the bar")
    before = replayed()
    got = side_by_side(b, [
        ("replay", [("rate.check", lambda i: (*rc, f"rt{i % E}", *lim, "IDEM", f"t{i}"))]),
        ("plain", [("rate.check", lambda i: (*rc, f"rp{i % E}", *lim))]),
        ("hget", [("hget", lambda i: ("HGET", f"rn{i % E}:idem", f"t{i}"))]),
    ], n, ROUNDS)
    if replayed() - before != n:
        raise RuntimeError(f"RATE.CHECK: {replayed() - before} of {n} retries replayed")
    b.row("RATE.CHECK GCRA, IDEM token replayed", got["replay"],
          [("the write without a token", got["plain"]), ("HGET of the record", got["hget"])], "≤ the write")

    # RANK.INCR on E boards of 10 members, each member incremented again
    # and again (the first call of a member adds it): the natives
    # ZSCORE + ZADD.
    for j in range(E):
        for p in ("kt", "kp"):
            r.execute_command("RANK.CREATE", f"{p}{j}")
    r.execute_command("RANK.CREATE", "kprobe")
    r.execute_command("RANK.INCR", "kprobe", "m0", 3, "NOW", NOW, "IDEM", "t0")
    rec = record_of(r, "kprobe:idem", "t0")
    member = lambda i: f"m{(i // E) % 10}"  # noqa: E731
    sides = [
        ("token", [("rank.incr", lambda i: ("RANK.INCR", f"kt{i % E}", member(i), 3, "NOW", NOW,
                                             "IDEM", f"t{i}"))]),
        ("plain", [("rank.incr", lambda i: ("RANK.INCR", f"kp{i % E}", member(i), 3, "NOW", NOW))]),
        ("floor", [("zscore", lambda i: ("ZSCORE", f"kn{i % E}", member(i))),
                   ("zadd", lambda i: ("ZADD", f"kn{i % E}", 30_000_000_000 + i, member(i))),
                   ("hset", lambda i: ("HSET", f"kn{i % E}:idem", f"t{i}", rec))]),
        ("hset", [("hset", lambda i: ("HSET", f"kh{i % E}:idem", f"t{i}", rec))]),
    ]
    got = side_by_side(b, sides, n, ROUNDS)
    stored("kt", n)
    b.row(f"RANK.INCR, new IDEM token ({E} boards of 10)", got["token"],
          [("without the token", got["plain"]), ("natives ZSCORE + ZADD + HSET of the record", got["floor"]),
           bar(got)], "≤ the bar")
    before = replayed()
    got = side_by_side(b, [
        ("replay", [("rank.incr", lambda i: ("RANK.INCR", f"kt{i % E}", member(i), 3, "NOW", NOW,
                                              "IDEM", f"t{i}"))]),
        ("plain", [("rank.incr", lambda i: ("RANK.INCR", f"kp{i % E}", member(i), 3, "NOW", NOW))]),
        ("hget", [("hget", lambda i: ("HGET", f"kn{i % E}:idem", f"t{i}"))]),
    ], n, ROUNDS)
    if replayed() - before != n:
        raise RuntimeError(f"RANK.INCR: {replayed() - before} of {n} retries replayed")
    b.row("RANK.INCR, IDEM token replayed", got["replay"],
          [("the write without a token", got["plain"]), ("HGET of the record", got["hget"])], "≤ the write")

    # STOCK.RESERVE of a new order: HSETNX + DECRBY + HINCRBY + ZADD
    # (bench/stock.py's floor).
    for j in range(E):
        for p in ("st", "sp"):
            r.execute_command("STOCK.CREATE", f"{p}{j}", BIG, "LEASE", LEASE)
        r.set(f"sn{j}:stock", BIG)
    r.execute_command("STOCK.CREATE", "sprobe", BIG, "LEASE", LEASE)
    r.execute_command("STOCK.RESERVE", "sprobe", "u0", "o0", 1, "NOW", NOW, "IDEM", "t0")
    rec = record_of(r, "sprobe:idem", "t0")
    sides = [
        ("token", [("stock.reserve", lambda i: ("STOCK.RESERVE", f"st{i % E}", f"u{i}", f"o{i}", 1,
                                                 "NOW", NOW + i, "IDEM", f"t{i}"))]),
        ("plain", [("stock.reserve", lambda i: ("STOCK.RESERVE", f"sp{i % E}", f"u{i}", f"o{i}", 1,
                                                 "NOW", NOW + i))]),
        ("floor", [("hsetnx", lambda i: ("HSETNX", f"sn{i % E}:orders", f"o{i}",
                                         f"R:1:{NOW + i + LEASE}:{BIG - 1 - i}:u{i}")),
                   ("decrby", lambda i: ("DECRBY", f"sn{i % E}:stock", 1)),
                   ("hincrby", lambda i: ("HINCRBY", f"sn{i % E}:users", f"u{i}", 1)),
                   ("zadd", lambda i: ("ZADD", f"sn{i % E}:leases", NOW + i + LEASE, f"o{i}")),
                   ("hset", lambda i: ("HSET", f"sn{i % E}:idem", f"t{i}", rec))]),
        ("hset", [("hset", lambda i: ("HSET", f"sh{i % E}:idem", f"t{i}", rec))]),
    ]
    got = side_by_side(b, sides, n, ROUNDS)
    stored("st", n)
    b.row("STOCK.RESERVE, new IDEM token (new order)", got["token"],
          [("without the token", got["plain"]),
           ("natives HSETNX+DECRBY+HINCRBY+ZADD + HSET of the record", got["floor"]), bar(got)],
          "≤ the bar")
    before = replayed()
    got = side_by_side(b, [
        ("replay", [("stock.reserve", lambda i: ("STOCK.RESERVE", f"st{i % E}", f"u{i}", f"o{i}", 1,
                                                  "NOW", NOW + i, "IDEM", f"t{i}"))]),
        ("plain", [("stock.reserve", lambda i: ("STOCK.RESERVE", f"sp{i % E}", f"u{n + i}", f"o{n + i}", 1,
                                                 "NOW", NOW + i))]),
        ("hget", [("hget", lambda i: ("HGET", f"sn{i % E}:idem", f"t{i}"))]),
    ], n, ROUNDS)
    if replayed() - before != n:
        raise RuntimeError(f"STOCK.RESERVE: {replayed() - before} of {n} retries replayed")
    b.row("STOCK.RESERVE, IDEM token replayed", got["replay"],
          [("a new order without a token", got["plain"]), ("HGET of the record", got["hget"])], "≤ the write")
    b.note(f"IDEM token rows: {E} entities, {TN // E} tokens per store at the end of a row; a "
           "token's record is stored in <key>:idem and replicated with HSET (and PEXPIREAT when the "
           "store's expiry moves) inside the command's measured time. The floor's HSET writes a "
           "record of the module's size into a Hash per entity (RANK's and STOCK's short records "
           "keep it a listpack, as the module's stores are).")
