"""Instructions of a whole LIKE promotion, counted by valgrind's callgrind
inside Redis's `call()`: a post of 100,000 likers below 10M (its Set filled
with native commands, its count set) driven by 12,000 LIKE.ADD/LIKE.REM
pairs of new ids, which carry the promotion's steps. Prints instructions
per write, the total, and the steps run (`like_promotion_steps`).
`python3 bench/like_promotion_callgrind.py` (needs valgrind; a minute).

The Set's iteration order follows the server's random hash seed, so the
sample, the plan and the step count vary from run to run: compare builds
on totals per step over a few runs. Set `HOTPATH_SO` to measure another
build of the module.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

if os.environ.get("HOTPATH_SO"):
    common.SO = os.environ["HOTPATH_SO"]
import rate_callgrind  # noqa: E402

rate_callgrind.SO = common.SO


def main():
    cg = rate_callgrind.Counter()
    r = cg.r
    rng = random.Random(5)
    ids = rng.sample(range(10_000_000), 100_000)
    for i in range(0, len(ids), 5000):
        r.sadd("p{1}:set", *ids[i:i + 5000])
    r.set("p{1}:count", len(ids))
    writes = []
    for _ in range(12_000):
        u = rng.randrange(10_000_000)
        writes += [("LIKE.ADD", "p{1}", u), ("LIKE.REM", "p{1}", u)]
    per = cg.run(writes)
    info = r.info("hotpath")
    steps = info["hotpath_like_promotion_steps"]
    total = per * len(writes)
    enc = r.execute_command("LIKE.INFO", "p{1}")[1].decode()
    print(f"{len(writes):,} writes: {per:,.0f} instructions per write, {total / 1e6:,.1f}M in all; "
          f"{steps:,} steps ({total / steps / 1e3:,.0f}k per step, writes included), "
          f"{info['hotpath_like_promoted']} promotion(s) finished; the post is {enc}")
    cg.stop()


if __name__ == "__main__":
    main()
