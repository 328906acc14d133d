"""REDPACKET.GRAB and REDPACKET.SPLIT against their Lua twins and the native
commands a grab replaces."""

PACKETS = 10
SHARES = 10_000          # the default redpacket-max-count
N = PACKETS * SHARES     # grabs that win a share


def bench(b):
    r = b.r
    grab = b.lua("redpacket/grab.lua")
    split = b.lua("redpacket/split.lua")

    # SPLIT of 10,000 shares, RANDOM (the double-mean draw) and EQUAL.
    ours = b.measure("redpacket.split",
                     (("REDPACKET.SPLIT", f"m{{{i}}}", 1_000_000, SHARES) for i in range(PACKETS)), batch=1)
    lua = b.measure("evalsha",
                    (("EVALSHA", split, 1, f"l{{{i}}}", 1_000_000, SHARES) for i in range(PACKETS)), batch=1)
    b.row("REDPACKET.SPLIT 10,000 shares (RANDOM)", ours, [("Lua twin", lua)], "server µs (report)")
    eq = b.measure("redpacket.split",
                   (("REDPACKET.SPLIT", f"me{{{i}}}", 1_000_000, SHARES, "MODE", "EQUAL") for i in range(PACKETS)),
                   batch=1)
    eq_lua = b.measure("evalsha",
                       (("EVALSHA", split, 1, f"le{{{i}}}", 1_000_000, SHARES, "MODE", "EQUAL")
                        for i in range(PACKETS)), batch=1)
    b.row("REDPACKET.SPLIT 10,000 shares (EQUAL)", eq, [("Lua twin", eq_lua)], "")
    for i in range(PACKETS):
        assert r.llen(f"m{{{i}}}:pool") == SHARES and r.llen(f"l{{{i}}}:pool") == SHARES

    # GRAB that wins a share: every user is new, every packet is drained.
    users = [f"user:{i}" for i in range(SHARES)]
    ours = b.measure("redpacket.grab",
                     (("REDPACKET.GRAB", f"m{{{p}}}", u) for p in range(PACKETS) for u in users))
    lua = b.measure("evalsha",
                    (("EVALSHA", grab, 1, f"l{{{p}}}", u) for p in range(PACKETS) for u in users))
    lpop = b.measure("lpop", (("LPOP", f"me{{{p}}}:pool") for p in range(PACKETS) for _ in users))
    hset = b.measure("hset", (("HSET", f"n{{{p}}}:grabbed", u, 100) for p in range(PACKETS) for u in users))
    for p in range(PACKETS):
        assert r.llen(f"m{{{p}}}:pool") == 0 and r.hlen(f"m{{{p}}}:grabbed") == SHARES
        assert r.llen(f"l{{{p}}}:pool") == 0 and r.hlen(f"l{{{p}}}:grabbed") == SHARES
    b.row("REDPACKET.GRAB (wins a share)", ours,
          [("Lua twin", lua), ("LPOP+HSET", lpop + hset)], "≤ 1/3 of Lua")

    # GRAB by a user who already holds a share (the retry storm).
    dup = b.measure("redpacket.grab",
                    (("REDPACKET.GRAB", f"m{{{p}}}", u) for p in range(PACKETS) for u in users))
    dup_lua = b.measure("evalsha",
                        (("EVALSHA", grab, 1, f"l{{{p}}}", u) for p in range(PACKETS) for u in users))
    b.row("REDPACKET.GRAB (ALREADY)", dup, [("Lua twin", dup_lua)], "")

    # GRAB on a packet with a TTL: the expiry check and the replication
    # with the master's NOW made explicit.
    r.execute_command("REDPACKET.SPLIT", "mt{x}", 1_000_000, SHARES, "TTL", 3600)
    r.execute_command("EVALSHA", split, 1, "lt{x}", 1_000_000, SHARES, "TTL", 3600)
    ttl = b.measure("redpacket.grab", (("REDPACKET.GRAB", "mt{x}", u) for u in users))
    ttl_lua = b.measure("evalsha", (("EVALSHA", grab, 1, "lt{x}", u) for u in users))
    b.row("REDPACKET.GRAB (packet with TTL)", ttl, [("Lua twin", ttl_lua)], "≤ 1/3 of Lua")
    b.note(f"GRAB: {PACKETS} packets of {SHARES} shares drained by {N} new users; "
           "SPLIT: one call per 10,000-share packet, µs per call.")
