"""POLL.VOTE against its Lua twin and the native commands it replaces."""

N = 100_000


def bench(b):
    r = b.r
    vote = b.lua("poll/vote.lua")
    users = [f"u{i}" for i in range(N)]
    cands = [f"c{i % 50}" for i in range(N)]
    ours = b.measure("poll.vote", (("POLL.VOTE", "pm", u, c) for u, c in zip(users, cands)))
    lua = b.measure("evalsha", (("EVALSHA", vote, 1, "pl", u, c) for u, c in zip(users, cands)))
    hset = b.measure("hset", (("HSET", "n:voted", u, c) for u, c in zip(users, cands)))
    zincr = b.measure("zincrby", (("ZINCRBY", "n:board", 1, c) for c in cands))
    sadd = b.measure("sadd", (("SADD", "n:set", u) for u in users))
    assert r.execute_command("POLL.INFO", "pm")[-1] == N
    b.row("POLL.VOTE (ONCE, new voters)", ours,
          [("Lua twin", lua), ("HSET+ZINCRBY", hset + zincr), ("SADD", sadd)],
          "≤ 1/3 of Lua; ≤ 1.5× HSET+ZINCRBY")
    dup = b.measure("poll.vote", (("POLL.VOTE", "pm", u, "other") for u in users))
    dup_lua = b.measure("evalsha", (("EVALSHA", vote, 1, "pl", u, "other") for u in users))
    b.row("POLL.VOTE (duplicate, refused)", dup, [("Lua twin", dup_lua)], "")
    r.execute_command("POLL.CREATE", "mm", "MODE", "MULTI", "MAXVOTES", "3")
    r.execute_command("EVALSHA", b.lua("poll/create.lua"), 1, "ml", "MODE", "MULTI", "MAXVOTES", "3")
    multi = b.measure("poll.vote", (("POLL.VOTE", "mm", u, c) for u, c in zip(users, cands)))
    multi_lua = b.measure("evalsha", (("EVALSHA", vote, 1, "ml", u, c) for u, c in zip(users, cands)))
    b.row("POLL.VOTE (MULTI)", multi, [("Lua twin", multi_lua)], "≤ 1/3 of Lua")
    b.note("POLL.VOTE against HSET+ZINCRBY: the board increment and the ballot set-if-absent are the same work as the natives; the difference (~1.4 µs quiet) is reading the poll's rules from B:meta, opening three keys and RM_Replicate of `POLL.VOTE … NOW <ms>` (callgrind: ~5k of ~29k instructions per vote, mostly the server looking the command name up), which natives avoid by replicating their own argv. The ballot records the vote time, so the NOW cannot be dropped.")
