"""Runs the side-by-side benchmark: `python3 bench/run.py [family …]`.

Each family's `bench/<family>.py` defines `bench(b)` (see common.Bench).
The families, in the module's order, are asked of the module itself (its
commands' prefixes, in the order INFO hotpath lists its counters, which
is FAMILIES in src/lib.rs); tests/families.rs checks that every family has
its bench file.
Prints one markdown table (µs per call measured by the server, and the
ratio of each comparison to ours) and writes it to bench/results.md.
"""
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Bench, Server  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def families():
    """The module's families, in registration order: the prefixes of its
    commands (COMMAND LIST), ordered as INFO hotpath lists their counters
    (a family without counters comes last)."""
    server = Server()
    try:
        names = server.r.command_list(module="hotpath")
        fams = {(n.decode() if isinstance(n, bytes) else n).split(".")[0].lower() for n in names}
        order = []
        for field in server.r.info("hotpath"):
            fam = field[len("hotpath_"):].split("_")[0]
            if fam in fams and fam not in order:
                order.append(fam)
        return order + sorted(fams - set(order))
    finally:
        server.stop()


def main():
    wanted = sys.argv[1:] or families()
    lines = ["| benchmark | hotpath µs/call | compared with (µs/call, ratio hotpath ÷ it) | target |",
             "|---|---:|---|---|"]
    notes = []
    started = time.gmtime()
    loads = [os.getloadavg()[0]]
    version = None
    for fam in wanted:
        mod = importlib.import_module(fam)
        server = Server()
        try:
            version = version or server.r.info("server")["redis_version"]
            b = Bench(server)
            mod.bench(b)
        finally:
            server.stop()
        for name, ours, others, target in b.rows:
            cmp = "; ".join(f"{label} {us:.2f} ({ours / us:.2f}×)" if us else f"{label} {us}"
                            for label, us in others)
            lines.append(f"| {name} | {ours:.2f} | {cmp} | {target} |")
            print(lines[-1], flush=True)
        notes.extend(f"- {fam}: {n}" for n in b.notes)
        loads.append(os.getloadavg()[0])
    # When and on what: the table says it itself, so that a regenerated
    # README never keeps an older run's date beside newer figures.
    stamp = (f"Measured by `make bench` on redis-server {version}, "
             f"{time.strftime('%Y-%m-%d %H:%M', started)}–{time.strftime('%H:%M', time.gmtime())} UTC, "
             f"{os.cpu_count()} CPUs, load average (1 min) {min(loads):.1f}–{max(loads):.1f} "
             f"over the run; families: {', '.join(wanted)}.")
    table = "\n".join([stamp, ""] + lines + [""] + notes) + "\n"
    print()
    print(table)
    with open(os.path.join(os.path.dirname(__file__), "results.md"), "w") as f:
        f.write(table)


if __name__ == "__main__":
    main()
