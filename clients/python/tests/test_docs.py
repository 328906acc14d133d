"""The Python examples of clients/python/README.md and docs/clients.md
(its Python section), run against a real server (``HOTPATH_URL``).

Each document's ```python blocks run in order in one namespace, after a
FLUSHDB (the examples use fixed keys), except a block right after an
``<!-- not run … -->`` line (it needs a cluster). A line ending in
``# → <value>`` is checked: its expression (or, for ``name = …``, the
name) must equal ``<value>``, evaluated with the package's public names.
The examples connect with ``redis.Redis()`` / ``redis.asyncio.Redis()``;
the test points those at ``HOTPATH_URL`` and changes nothing else.
"""
import os
import re
import unittest

import redis

import hotpath

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
URL = os.environ.get("HOTPATH_URL")

CHECKED = re.compile(r"^(\s*)(.*?)\s*# → (.*)$")
ASSIGNED = re.compile(r"^([A-Za-z_]\w*) = (.+)$")
BLOCK = re.compile(r"(<!-- not run[^\n]*-->\n)?```python\n(.*?)```", re.DOTALL)


def blocks(text):
    """The blocks to run: (first line number, source)."""
    out = []
    for m in BLOCK.finditer(text):
        if m.group(1):
            continue
        out.append((text[:m.start(2)].count("\n") + 1, m.group(2)))
    return out


def instrument(source, first_line):
    """The block with each ``# → value`` line turned into a check."""
    lines = []
    for i, line in enumerate(source.split("\n")):
        m = CHECKED.match(line)
        if not m:
            lines.append(line)
            continue
        indent, code, value = m.groups()
        where = first_line + i
        a = ASSIGNED.match(code)
        if a:
            lines.append(f"{indent}{code}")
            code = a.group(1)
        lines.append(f"{indent}__check__(({code}), {value!r}, {where})")
    source = "\n".join(lines)
    source = source.replace("redis.asyncio.Redis()", "redis.asyncio.Redis.from_url(__url__)")
    return source.replace("redis.Redis()", "redis.Redis.from_url(__url__)")


@unittest.skipUnless(URL, "HOTPATH_URL not set")
class Examples(unittest.TestCase):
    def run_document(self, path, section=None):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if section is not None:
            start = text.index(section)
            end = text.find("\n## ", start + len(section))
            text = text[:start].count("\n") * "\n" + text[start:end if end >= 0 else None]
        found = blocks(text)
        self.assertGreaterEqual(len(found), 3, path)
        r = redis.Redis.from_url(URL)
        r.flushdb()
        checked = []
        names = {n: getattr(hotpath, n) for n in hotpath.__all__}

        def check(actual, expected, line):
            want = eval(expected, dict(names))  # noqa: S307 (the document's own text)
            self.assertEqual(actual, want, f"{os.path.basename(path)}:{line}")
            checked.append(line)

        ns = {"__check__": check, "__url__": URL, "__name__": "__docs__"}
        for line, source in found:
            code = compile(instrument(source, line), f"{path}:{line}", "exec")
            exec(code, ns)  # noqa: S102
        r.close()
        return checked

    def test_the_readme(self):
        checked = self.run_document(os.path.join(ROOT, "clients", "python", "README.md"))
        self.assertGreaterEqual(len(checked), 20)

    def test_the_python_section_of_docs_clients(self):
        checked = self.run_document(os.path.join(ROOT, "docs", "clients.md"), "## Python")
        self.assertGreaterEqual(len(checked), 12)

    def test_a_wrong_output_fails(self):
        # The checker itself: a wrong value is a failure.
        ns = {"__check__": lambda a, e, line: self.assertNotEqual(a, eval(e)),
              "__url__": URL}
        exec(compile(instrument("1 + 1  # → 3\n", 1), "x", "exec"), ns)  # noqa: S102


if __name__ == "__main__":
    unittest.main()
