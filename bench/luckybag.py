"""LUCKYBAG.JOIN and LUCKYBAG.DRAW against their Lua twins, and memory per
participant of a 1,000,000-viewer bag."""

N = 100_000
CROWD = 1_000_000
WINNERS = 1000


def bench(b):
    r = b.r
    join = b.lua("luckybag/join.lua")
    draw = b.lua("luckybag/draw.lua")
    create = b.lua("luckybag/create.lua")

    # JOIN: new viewers, then the same viewers again (refused duplicates).
    r.execute_command("LUCKYBAG.CREATE", "jm", "WINNERS", WINNERS)
    r.execute_command("EVALSHA", create, 1, "jl", "WINNERS", WINNERS)
    users = range(N)
    ours = b.measure("luckybag.join", (("LUCKYBAG.JOIN", "jm", u) for u in users))
    lua = b.measure("evalsha", (("EVALSHA", join, 1, "jl", u) for u in users))
    sadd = b.measure("sadd", (("SADD", "n:joined", u) for u in users))
    zadd = b.measure("zadd", (("ZADD", "n:cand", (u % 999983) / 1e6, u) for u in users))
    incr = b.measure("incr", (("INCR", "n:count") for _ in users))
    assert r.execute_command("LUCKYBAG.INFO", "jm")[3] == N
    assert r.get("jl:count") == str(N).encode()
    b.row("LUCKYBAG.JOIN (new viewer)", ours,
          [("Lua twin", lua), ("SADD+ZADD+INCR", sadd + zadd + incr)], "≤ 1/3 of Lua")
    dup = b.measure("luckybag.join", (("LUCKYBAG.JOIN", "jm", u) for u in users))
    dup_lua = b.measure("evalsha", (("EVALSHA", join, 1, "jl", u) for u in users))
    b.row("LUCKYBAG.JOIN (duplicate, refused)", dup, [("Lua twin", dup_lua)], "")
    r.flushall()

    # DRAW: 1,000,000 participants in 16 shards (default POOLCAP 700000,
    # HIGHSCORE 0.99), WINNERS 1000. Both draws read the very same pools:
    # the bag is reopened between runs, and the winners must agree.
    used0 = int(r.info("memory")["used_memory"])
    r.execute_command("LUCKYBAG.CREATE", "d", "WINNERS", WINNERS)
    pipe = r.pipeline(transaction=False)
    for u in range(CROWD):
        pipe.execute_command("LUCKYBAG.JOIN", "d", u)
        if u % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    used1 = int(r.info("memory")["used_memory"])
    info = r.execute_command("LUCKYBAG.INFO", "d")
    participants, pooled = info[3], info[5]
    assert participants == CROWD

    reopen = [("HSET", "d:meta", "state", "open"), ("DEL", "d:winners")]

    def runs(first):
        for _ in range(5):
            yield first
            yield from reopen

    lua_draw = b.measure("evalsha", runs(("EVALSHA", draw, 1, "d")), batch=3)
    lua_winners = r.execute_command("EVALSHA", draw, 1, "d")
    for c in reopen:
        r.execute_command(*c)
    ours_draw = b.measure("luckybag.draw", runs(("LUCKYBAG.DRAW", "d")), batch=3)
    winners = r.execute_command("LUCKYBAG.DRAW", "d")
    assert len(winners) == 2 * WINNERS
    assert winners == lua_winners, "module and Lua twin drew different winners"
    b.row(f"LUCKYBAG.DRAW ({CROWD:,} participants, 16 shards, WINNERS {WINNERS})", ours_draw,
          [("Lua twin (ZREVRANGEBYSCORE per shard + merge)", lua_draw)], "≤ 1/3 of Lua")
    b.note(f"DRAW bag: {participants:,} participants, {pooled:,} in the candidate pools "
           f"(POOLCAP 700000, HIGHSCORE 0.99); both draws returned the same {WINNERS} winners.")
    b.note(f"memory: {(used1 - used0) / CROWD:.1f} bytes per participant "
           f"(used_memory delta {(used1 - used0) / 1e6:.1f} MB for {CROWD:,} participants, "
           f"{pooled:,} pooled: joined Sets + candidate Sorted Sets + count)")
