"""hotpath from Python (redis-py): a poll with a live board.

Run: REDIS_URL=redis://127.0.0.1:6379 python3 examples/quickstart.py
"""
import os

import redis

r = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379"))
r.delete("poll:{py}:meta", "poll:{py}:voted", "poll:{py}:board", "poll:{py}:uservotes")

r.execute_command("POLL.CREATE", "poll:{py}", "MODE", "MULTI", "MAXVOTES", 2,
                  "CANDIDATES", 3, "rust", "go", "zig")
assert r.execute_command("POLL.VOTE", "poll:{py}", "user:1", "rust") == 1
assert r.execute_command("POLL.VOTE", "poll:{py}", "user:2", "rust") == 1
assert r.execute_command("POLL.VOTE", "poll:{py}", "user:2", "rust") == 0  # duplicate
assert r.execute_command("POLL.VOTE", "poll:{py}", "user:2", "zig") == 1
try:
    r.execute_command("POLL.VOTE", "poll:{py}", "user:1", "cobol")
except redis.ResponseError as e:
    assert str(e) == "poll: unknown candidate"

print(r.execute_command("POLL.TOP", "poll:{py}", 2))  # [[b'rust', 2], [b'zig', 1]] (RESP3 pairs)
print(r.execute_command("POLL.RANK", "poll:{py}", "zig"))  # [1, 1]
