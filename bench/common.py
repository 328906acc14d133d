"""Shared benchmark helpers: one server, one run, server-side cost per call.

Every figure is read from the server itself (`INFO commandstats`,
usec_per_call), so client and network time do not count, and the module,
its Lua twin and the native commands are measured in the same run on the
same server.
"""
import os
import socket
import subprocess
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SO = os.path.join(ROOT, "target", "release", "libhotpath.so")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def callgrind_calls(path, names, rename=lambda name: name):
    """How often each function of `names` was called in the callgrind dump
    at `path` ({name: calls}; `rename` maps a dump's function names first,
    e.g. Valkey's `VM_*` to Redis's `RM_*`). A dump's "calls=<n> <target>"
    lines follow the "cfn=(id) name" line of the function called."""
    import re
    calls = {n: 0 for n in names}
    ids = {}
    cfn = None
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?)fn=\((\d+)\)(?: (\S+))?", line)
            if m:
                if m.group(3):
                    ids[m.group(2)] = rename(m.group(3))
                if m.group(1):
                    cfn = ids.get(m.group(2))
                continue
            m = re.match(r"calls=(\d+)", line)
            if m and cfn in calls:
                calls[cfn] += int(m.group(1))
    return calls


class Server:
    """A redis-server with the module loaded, no persistence."""

    def __init__(self, binary="redis-server"):
        self.dir = tempfile.mkdtemp(prefix="hotpath-bench-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir,
             "--loadmodule", SO],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # RESP2: the benchmarks read the flat replies the scripts they
        # replace answer (redis-py 8 would speak RESP3 and get maps).
        self.r = redis.Redis(port=self.port, protocol=2)
        for _ in range(200):
            try:
                self.r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Bench:
    """What a family's `bench(b)` gets: a client, Lua loading, measuring."""

    def __init__(self, server):
        self.server = server
        self.r = server.r
        self.rows = []
        self.notes = []
        self._shas = {}

    def lua(self, path):
        """Returns the SHA of lua-compat/generated/<path>, loaded into the server."""
        if path not in self._shas:
            with open(os.path.join(ROOT, "lua-compat", "generated", path)) as f:
                self._shas[path] = self.r.script_load(f.read())
        return self._shas[path]

    def stats(self):
        """Returns {command: (calls, usec_per_call)} from INFO commandstats."""
        out = {}
        for k, v in self.r.info("commandstats").items():
            name = k[len("cmdstat_"):]
            out[name] = (int(v["calls"]), float(v["usec_per_call"]))
        return out

    def measure(self, command, calls, batch=1000, chunk=10_000):
        """Runs `calls` (an iterable of argument tuples, the command name
        first) pipelined, and returns the server µs per call of `command`
        (lower-case name as in commandstats, e.g. "poll.vote", "evalsha").

        The calls are measured in chunks of `chunk` (stats reset before
        each) and the best chunk is returned: on a shared machine, other
        processes only ever add time, so the least disturbed chunk is the
        closest to the command's own cost. Errors in replies fail the
        benchmark: a fast error is no result."""
        best = None
        pipe = self.r.pipeline(transaction=False)
        n = 0
        self.r.config_resetstat()
        for args in calls:
            pipe.execute_command(*args)
            n += 1
            if n % batch == 0:
                self._flush(pipe)
            if n % chunk == 0:
                best = self._best(command, best)
                self.r.config_resetstat()
        self._flush(pipe)
        if n % chunk != 0 or best is None:
            best = self._best(command, best)
        if best is None:
            raise RuntimeError(f"no calls of {command} were recorded")
        return best

    def _best(self, command, best):
        calls_seen, usec = self.stats().get(command, (0, 0.0))
        if calls_seen == 0:
            return best
        return usec if best is None else min(best, usec)

    @staticmethod
    def _flush(pipe):
        for reply in pipe.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise RuntimeError(f"benchmark command failed: {reply}")

    def row(self, name, ours, others, target=""):
        """Records a table row: our µs/call against [(label, µs), …]."""
        self.rows.append((name, ours, others, target))

    def note(self, text):
        self.notes.append(text)
