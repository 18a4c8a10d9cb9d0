"""The table "Lines of Cython under memcore_py/ before and after" of ``docs/rules.md``.

Usage::

    python tools/cython_lines.py            # print the table
    python tools/cython_lines.py --write    # put it between the page's lines-table markers

Every ``.pyx`` and ``.pxd`` file under ``memcore_py/``: its line count (as ``wc -l``) at
:data:`BEFORE`, the commit before issue 27's binding table, and in the working tree.
``tests/test_rule_sites.py`` checks the page's table against the files.
"""
from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The commit the "before" column is measured at (the parent of the first binding-table commit).
BEFORE = "829a003^"
DOC = ROOT / "docs" / "rules.md"
MARKERS = re.compile(r"(<!-- lines-table:start -->\n).*?(\n<!-- lines-table:end -->)", re.S)


def _git(*args) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _count(text: str) -> int:
    return text.count("\n")


def table() -> str:
    """The table as Markdown lines."""
    before = {
        p: _count(_git("show", f"{BEFORE}:{p}"))
        for p in _git("ls-tree", "-r", "--name-only", BEFORE, "memcore_py").split()
        if p.endswith((".pyx", ".pxd"))
    }
    now = {p.relative_to(ROOT).as_posix(): _count(p.read_text(encoding="utf-8"))
           for p in sorted((ROOT / "memcore_py").rglob("*")) if p.suffix in (".pyx", ".pxd") and p.is_file()}
    lines = [f"| File | Lines at {BEFORE} | Lines now | Change | Status |", "|---|---:|---:|---:|---|"]
    total_before = total_now = 0
    for path in sorted(set(before) | set(now)):
        b, n = before.get(path), now.get(path)
        status = "added" if b is None else "removed" if n is None else "kept"
        total_before += b or 0
        total_now += n or 0
        cell = lambda v: "—" if v is None else str(v)  # noqa: E731
        lines.append(f"| `{path}` | {cell(b)} | {cell(n)} | {(n or 0) - (b or 0):+d} | {status} |")
    lines.append(f"| **Total** | {total_before} | {total_now} | {total_now - total_before:+d} | "
                 f"{len(before)} files before, {len(now)} now |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"replace the table in {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    text = table()
    if args.write:
        page = DOC.read_text(encoding="utf-8")
        if not MARKERS.search(page):
            parser.error(f"{DOC} has no lines-table markers")
        DOC.write_text(MARKERS.sub(lambda m: m.group(1) + text + m.group(2), page), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
