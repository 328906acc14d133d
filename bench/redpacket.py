"""REDPACKET.GRAB and REDPACKET.SPLIT against their Lua twins and the native
commands a grab replaces.

The machine the figures come from is shared, so every comparison runs in
rounds that alternate the module and the twin on equal work, and each row
reports the median round (µs per call measured by the server)."""

import statistics

PACKETS = 10
SHARES = 10_000          # the default redpacket-max-count


def rounds(b, pairs):
    """Runs [(command, calls_fn), …] in alternation for each round and
    returns the median µs/call of each position."""
    out = [[] for _ in pairs[0]]
    for pair in pairs:
        for i, (command, calls) in enumerate(pair):
            out[i].append(b.measure(command, calls()))
    return [statistics.median(v) for v in out]


def bench(b):
    r = b.r
    grab = b.lua("redpacket/grab.lua")
    split = b.lua("redpacket/split.lua")

    # SPLIT of 10,000 shares, RANDOM (the double-mean draw) and EQUAL.
    def split_pair(p, mode):
        extra = ("MODE", "EQUAL") if mode == "EQUAL" else ()
        return [
            ("redpacket.split",
             lambda: [("REDPACKET.SPLIT", f"m{mode}{{{p}}}", 1_000_000, SHARES) + extra]),
            ("evalsha",
             lambda: [("EVALSHA", split, 1, f"l{mode}{{{p}}}", 1_000_000, SHARES) + extra]),
        ]
    ours, lua = rounds(b, [split_pair(p, "RANDOM") for p in range(PACKETS)])
    b.row("REDPACKET.SPLIT 10,000 shares (RANDOM)", ours, [("Lua twin", lua)], "server µs (report)")
    ours, lua = rounds(b, [split_pair(p, "EQUAL") for p in range(PACKETS)])
    b.row("REDPACKET.SPLIT 10,000 shares (EQUAL)", ours, [("Lua twin", lua)], "")
    for p in range(PACKETS):
        assert r.llen(f"mRANDOM{{{p}}}:pool") == SHARES and r.llen(f"lRANDOM{{{p}}}:pool") == SHARES

    # GRAB that wins a share: every user is new, each packet is drained by
    # 10,000 users; natives: the LPOP + HSET a grab does at its core.
    users = [f"user:{i}" for i in range(SHARES)]

    def grab_pair(p, prefix=""):
        return [
            ("redpacket.grab", lambda: (("REDPACKET.GRAB", f"m{prefix}RANDOM{{{p}}}", u) for u in users)),
            ("evalsha", lambda: (("EVALSHA", grab, 1, f"l{prefix}RANDOM{{{p}}}", u) for u in users)),
            ("lpop", lambda: (("LPOP", f"mEQUAL{{{p}}}:pool") for _ in users)),
            ("hset", lambda: (("HSET", f"n{{{p}}}:grabbed", u, 100) for u in users)),
        ]
    if True:
        ours, lua, lpop, hset = rounds(b, [grab_pair(p) for p in range(PACKETS)])
        for p in range(PACKETS):
            assert r.llen(f"mRANDOM{{{p}}}:pool") == 0 and r.hlen(f"mRANDOM{{{p}}}:grabbed") == SHARES
            assert r.llen(f"lRANDOM{{{p}}}:pool") == 0 and r.hlen(f"lRANDOM{{{p}}}:grabbed") == SHARES
        b.row("REDPACKET.GRAB (wins a share)", ours,
              [("Lua twin", lua), ("LPOP+HSET", lpop + hset)], "≤ 1/3 of Lua")

    # GRAB by a user who already holds a share (the retry storm).
    ours, lua = rounds(b, [grab_pair(p)[:2] for p in range(PACKETS)])
    b.row("REDPACKET.GRAB (ALREADY)", ours, [("Lua twin", lua)], "")

    # GRAB on packets with a TTL: the expiry check, and the replication
    # with the master's NOW made explicit.
    for p in range(PACKETS):
        r.execute_command("REDPACKET.SPLIT", f"mtRANDOM{{{p}}}", 1_000_000, SHARES, "TTL", 3600)
        r.execute_command("EVALSHA", split, 1, f"ltRANDOM{{{p}}}", 1_000_000, SHARES, "TTL", 3600)
    ours, lua = rounds(b, [grab_pair(p, "t")[:2] for p in range(PACKETS)])
    b.row("REDPACKET.GRAB (packet with TTL)", ours, [("Lua twin", lua)], "≤ 1/3 of Lua")

    # Small packets, the common case (WeChat allows up to 100 shares): the
    # grabbed hash stays a listpack.
    small = [(f"ms{{{i}}}", f"ls{{{i}}}") for i in range(1000)]
    for m, lk in small:
        r.execute_command("REDPACKET.SPLIT", m, 10_000, 10)
        r.execute_command("EVALSHA", split, 1, lk, 10_000, 10)
    def small_pair(half):
        part = small[half * 500:(half + 1) * 500]
        return [
            ("redpacket.grab", lambda: (("REDPACKET.GRAB", m, f"u{j}") for m, _ in part for j in range(10))),
            ("evalsha", lambda: (("EVALSHA", grab, 1, lk, f"u{j}") for _, lk in part for j in range(10))),
        ]
    ours, lua = rounds(b, [small_pair(h) for h in range(2)])
    b.row("REDPACKET.GRAB (packets of 10 shares)", ours, [("Lua twin", lua)], "≤ 1/3 of Lua")
    b.note(f"GRAB: {PACKETS} rounds, each draining a {SHARES}-share packet by new users "
           "(module and Lua twin alternate); SPLIT: one call per 10,000-share packet; "
           "every row is the median round.")
