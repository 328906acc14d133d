"""Instructions per call of LIKE's writes against their native floors,
counted by valgrind's callgrind inside Redis's `call()` (the whole command
as the server runs it, dispatch and propagation included). Unlike timings,
the counts barely depend on the machine's load:
`python3 bench/like_callgrind.py` (needs valgrind; about a minute).

- Bitmap form: posts of 256,000 dense ids (4 chunks, built with native
  commands), 2,000 random toggles each, under base keys of every shape:
  `x`, `m{c}`, `post:{7}` (no `{` first: one byte to rule out a shard key),
  `{bm}` (a bare hash tag: never a shard key, the base would be empty) and
  `{42}x` (the shape of a shard key: one `{42}x:meta` lookup). Floor:
  `SETBIT` + `INCR` on the same pattern.
- Set form: a post of 300 likers (an intset), 2,000 toggles of ids below
  600 (so about half like, half unlike); ADD and REM of ids not held /
  held. Floor: `SADD` + `INCR` / `SREM` + `DECR`.
- Set form as `bench/like.py` runs it: a post of 20,000 likers spread
  over 4e9 ids (a hashtable, every call a different range), 2,000 new ids
  liked by TOGGLE then unliked by TOGGLE, then liked by ADD and unliked by
  REM; the floor on a Set of the same ids. Bitmap form ADD and REM of
  2,000 new ids of the 4-chunk post.

Set `HOTPATH_SO` to measure another build of the module.
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
CALLS = 2000
RANGES = 4
IDS = RANGES * 64_000


def bitmap_post(cg, base):
    """A post in bitmap form, settled: its chunk index, 4 chunks, a count."""
    setup = [("SETBIT", f"{base}:chunks", k, 1) for k in range(RANGES)]
    setup += [("SETRANGE", f"{base}:bits:{k}", 7999, b"\0") for k in range(RANGES)]
    setup += [("SET", f"{base}:count", 0)]
    cg.run(setup, count=False)


def main():
    cg = rate_callgrind.Counter()
    # No promotion check plans during the run: the set-form posts stay Sets.
    cg.r.execute_command("CONFIG", "SET", "hotpath.like-promote-at", 1_000_000)
    rng = random.Random(7)
    ids = [rng.randrange(IDS) for _ in range(CALLS)]
    out = {}
    # Native floor, bitmap form: SETBIT of the same offsets + INCR.
    cg.run([("SETRANGE", f"nb:{k}", 7999, b"\0") for k in range(RANGES)], count=False)
    out["SETBIT"] = cg.run([("SETBIT", f"nb:{i // 64000}", i % 64000, 1) for i in ids])
    out["INCR"] = cg.run([("INCR", "nb:count") for _ in ids])
    floor_bm = out["SETBIT"] + out["INCR"]
    print("| call | module instr/call | floor | ÷ floor | over floor |")
    print("|---|---:|---:|---:|---:|")
    for base in ["x", "m{c}", "post:{7}", "{bm}", "{42}x"]:
        bitmap_post(cg, base)
        # Warm-up: the post's names kept, every chunk touched once.
        cg.run([("LIKE.TOGGLE", base, k * 64000) for k in range(RANGES)] * 2, count=False)
        v = cg.run([("LIKE.TOGGLE", base, i) for i in ids])
        out[f"TOGGLE {base}"] = v
        print(f"| TOGGLE bitmap `{base}` | {v:,.0f} | SETBIT + INCR {floor_bm:,.0f} | "
              f"{v / floor_bm:.2f}× | {v - floor_bm:,.0f} |", flush=True)
    # Set form.
    small = [rng.randrange(600) for _ in range(CALLS)]
    held = list(range(0, 600, 2))
    cg.run([("SADD", "ns", *held)], count=False)
    sadd = cg.run([("SADD", "ns2", 1000 + i) for i in range(CALLS)])
    srem = cg.run([("SREM", "ns2", 1000 + i) for i in range(CALLS)])
    incr = cg.run([("INCR", "nc") for _ in range(CALLS)])
    decr = cg.run([("DECR", "nc") for _ in range(CALLS)])
    f_add, f_rem = sadd + incr, srem + decr
    for base, cmds, label, floor in [
        ("sp1", lambda: [("LIKE.ADD", "sp1", 1000 + i) for i in range(CALLS)], "SADD + INCR", f_add),
        ("sp1", lambda: [("LIKE.REM", "sp1", 1000 + i) for i in range(CALLS)], "SREM + DECR", f_rem),
        ("sp2", lambda: [("LIKE.TOGGLE", "sp2", i) for i in small], "avg of the two", (f_add + f_rem) / 2),
    ]:
        cg.run([("LIKE.ADD", base, u) for u in held], count=False)
        c = cmds()
        v = cg.run(c)
        print(f"| {c[0][0]} set form `{base}` | {v:,.0f} | {label} {floor:,.0f} | {v / floor:.2f}× | "
              f"{v - floor:,.0f} |", flush=True)
    # Set form, a hashtable and random ids (bench/like.py's shape).
    big = rng.sample(range(4_294_967_295), 20_000)
    for i in range(0, len(big), 5000):
        cg.run([("SADD", "hs:set", *big[i:i + 5000]), ("SADD", "hn", *big[i:i + 5000])], count=False)
    cg.run([("SET", "hs:count", len(big))], count=False)
    fresh = [rng.randrange(4_294_967_295) for _ in range(CALLS)]
    h_sadd = cg.run([("SADD", "hn", u) for u in fresh])
    h_srem = cg.run([("SREM", "hn", u) for u in fresh])
    hf = h_sadd + incr, h_srem + decr
    for label, c, floor, fl in [
        ("TOGGLE (a like)", [("LIKE.TOGGLE", "hs", u) for u in fresh], hf[0], "SADD + INCR"),
        ("TOGGLE (an unlike)", [("LIKE.TOGGLE", "hs", u) for u in fresh], hf[1], "SREM + DECR"),
        ("ADD", [("LIKE.ADD", "hs", u) for u in fresh], hf[0], "SADD + INCR"),
        ("REM", [("LIKE.REM", "hs", u) for u in fresh], hf[1], "SREM + DECR"),
    ]:
        v = cg.run(c)
        print(f"| {label} set form, 20k hashtable | {v:,.0f} | {fl} {floor:,.0f} | {v / floor:.2f}× | "
              f"{v - floor:,.0f} |", flush=True)
    # Bitmap form ADD and REM of new ids (the post `x` of the toggles).
    toggled = set(ids)
    fresh = [i for i in rng.sample(range(IDS), 3 * CALLS) if i not in toggled][:CALLS]
    for label, c, native in [
        ("ADD", [("LIKE.ADD", "x", i) for i in fresh], "INCR"),
        ("REM", [("LIKE.REM", "x", i) for i in fresh], "DECR"),
    ]:
        v = cg.run(c)
        bit = 1 if label == "ADD" else 0
        sb = cg.run([("SETBIT", f"nb:{i // 64000}", i % 64000, bit) for i in fresh])
        n = cg.run([(native, "nb:count") for _ in fresh])
        print(f"| {label} bitmap form `x` | {v:,.0f} | SETBIT + {native} {sb + n:,.0f} | "
              f"{v / (sb + n):.2f}× | {v - sb - n:,.0f} |", flush=True)
    print("natives: " + ", ".join(f"{k} {v:,.0f}" for k, v in out.items() if " " not in k)
          + f", SADD {sadd:,.0f}, SREM {srem:,.0f}, INCR {incr:,.0f}, DECR {decr:,.0f}")
    cg.stop()


if __name__ == "__main__":
    main()
