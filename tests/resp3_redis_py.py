"""Map-like replies through redis-py: dicts with protocol=3 (redis-py 8's
default), flat lists with protocol=2. Run by tests/reference.rs with the
port of a server that has the module loaded."""
import sys

import redis

port = int(sys.argv[1])
r2 = redis.Redis(port=port, protocol=2)
r3 = redis.Redis(port=port, protocol=3)
NOW = 1767225600000

r2.execute_command("POLL.VOTE", "p", "u1", "a", "NOW", NOW)
r2.execute_command("RANK.ADD", "b", "zed", 120, "NOW", NOW)
r2.execute_command("REDPACKET.SPLIT", "rp", 100, 2, "MODE", "EQUAL")
r2.execute_command("REDPACKET.GRAB", "rp", "alice")

info = [b"mode", b"ONCE", b"maxvotes", 1, b"start", 0, b"end", 0, b"ballots", 1, b"votes", 1]
assert r2.execute_command("POLL.INFO", "p") == info, r2.execute_command("POLL.INFO", "p")
assert r3.execute_command("POLL.INFO", "p") == dict(zip(info[0::2], info[1::2]))

assert r2.execute_command("RANK.GET", "b", "zed") == [120, 0, NOW]
assert r3.execute_command("RANK.GET", "b", "zed") == {b"points": 120, b"rank": 0, b"achieved_ms": NOW}
assert r3.execute_command("RANK.GET", "b", "nobody") is None

assert r2.execute_command("REDPACKET.GRABBED", "rp") == [b"alice", 50]
assert r3.execute_command("REDPACKET.GRABBED", "rp") == {b"alice": 50}
assert r2.execute_command("REDPACKET.INFO", "none") == []
assert r3.execute_command("REDPACKET.INFO", "none") == {}

names = [b"allowed", b"limit", b"remaining", b"retry_after_ms", b"reset_after_ms"]
assert r2.execute_command("RATE.CHECK", "k2", 10, 60000, "NOW", NOW) == [1, 10, 9, -1, 6000]
assert r3.execute_command("RATE.CHECK", "k3", 10, 60000, "NOW", NOW) == dict(zip(names, [1, 10, 9, -1, 6000]))
multi = ["LIMITS", 1, 1000, 5, 1000, "NOW", NOW]
assert r2.execute_command("RATE.MULTI", 2, "a2", "b2", *multi) == [1, 1, 0, -1, 1000]
assert r3.execute_command("RATE.MULTI", 2, "a3", "b3", *multi) == dict(zip(names, [1, 1, 0, -1, 1000]))
# redis-cell's reply stays an array in both protocols.
assert r2.execute_command("RATE.THROTTLE", "t2", 15, 30, 60, "NOW", NOW) == [0, 16, 15, -1, 2]
assert r3.execute_command("RATE.THROTTLE", "t3", 15, 30, 60, "NOW", NOW) == [0, 16, 15, -1, 2]
# LOCK.INFO: owner -> {token, count, ttl_ms}; DELAYQ.INFO: a field map.
r2.execute_command("LOCK.ACQUIRE", "lk", "o1", 10000, "LIMIT", 2, "NOW", NOW)
r2.execute_command("LOCK.ACQUIRE", "lk", "o2", 20000, "NOW", NOW)
assert r2.execute_command("LOCK.INFO", "lk", "NOW", NOW) == [b"o1", 1, 1, 10000, b"o2", 2, 1, 20000]
assert r3.execute_command("LOCK.INFO", "lk", "NOW", NOW) == {
    b"o1": {b"token": 1, b"count": 1, b"ttl_ms": 10000},
    b"o2": {b"token": 2, b"count": 1, b"ttl_ms": 20000},
}
assert r3.execute_command("LOCK.INFO", "none") == {}
r2.execute_command("DELAYQ.ADD", "dq", "j1", "p", "NOW", NOW)
dq = [b"jobs", 1, b"ready", 1, b"scheduled", 0, b"dead", 0]
assert r2.execute_command("DELAYQ.INFO", "dq", "NOW", NOW) == dq
assert r3.execute_command("DELAYQ.INFO", "dq", "NOW", NOW) == dict(zip(dq[0::2], dq[1::2]))
# STOCK.INFO: a field map; STOCK.RESERVE stays the [status, left, lease-end] array.
r2.execute_command("STOCK.CREATE", "st", 3, "LEASE", 1000)
assert r3.execute_command("STOCK.RESERVE", "st", "u", "o1", 1, "NOW", NOW) == [b"OK", 2, NOW + 1000]
assert r2.execute_command("STOCK.RESERVE", "st", "u", "o1", 1, "NOW", NOW) == [b"OK", 2, NOW + 1000]
st = [b"total", 3, b"available", 2, b"reserved", 1, b"sold", 0, b"limit", 0, b"lease_ms", 1000, b"orders", 1]
assert r2.execute_command("STOCK.INFO", "st") == st
assert r3.execute_command("STOCK.INFO", "st") == dict(zip(st[0::2], st[1::2]))
assert r3.execute_command("STOCK.INFO", "none") == {}
print("resp3 ok")
