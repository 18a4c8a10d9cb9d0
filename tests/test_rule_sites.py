"""``docs/rules.md`` ("Where each memory-pass rule lives") checked against the code.

(a) Every dotted path in a table of the page resolves: the longest importable prefix is
    imported (compiled modules are the built extensions) and the rest is looked up with
    ``getattr``. A path marked ``(cdef)`` names a Cython ``cdef`` function, method or class that
    Python cannot see: its definition must be in the module's ``.pyx`` or ``.pxd`` source, and
    Python must indeed not see it (else the marker is wrong).
(b) In a rule table (a table whose header has "The one place it lives") that column holds
    exactly one path per row, and no rule is listed twice; every row of the "Rules still
    stated twice" table names at least two places.
(c) The table "Lines of Cython under memcore_py/ before and after" lists every ``.pyx`` and
    ``.pxd`` file under ``memcore_py/`` with its line count in the working tree (``wc -l``),
    and its total; the counts at the "before" commit match ``git show`` when git can tell.

The page is read from :data:`DOC` at each test, so that a test can point it at a copy.
"""
from __future__ import annotations

import importlib
import re
import subprocess
from pathlib import Path

import pytest
from _helpers import REPO_ROOT

#: The page checked (a module constant, so that a copy can be checked instead).
DOC = REPO_ROOT / "docs" / "rules.md"
#: The commit the "before" column is measured at.
BEFORE = "829a003^"
#: The header of the column naming a rule's one place.
ONE_PLACE = "The one place it lives"
#: Headings the page must have: one per pass, the bound kernel, the duplicates, the lines.
HEADINGS = (
    "StaticPlanBlockMemory", "LowerAllocTensor", "KillAfterLastUse", "CanonicalizeBindings",
    "DataflowUseInplaceCalls", "AttachAttrLayoutFreeBuffers", "DeadCodeElimination",
    "The int bound kernel", "Rules still stated twice", "Lines of Cython under memcore_py/ before and after",
)
#: A dotted path in backquotes, with its optional ``(cdef)`` marker.
PATH = re.compile(r"`((?:memcore_py|memcore)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`(\s*\(cdef\))?")
#: A file path in backquotes (the lines table's first column).
FILE = re.compile(r"^`(memcore_py/[^`]+\.(?:pyx|pxd))`$")
NO_VALUE = "—"


# ---------------------------------------------------------------------------- reading the page
def _text() -> str:
    return Path(DOC).read_text(encoding="utf-8")


def _cells(line: str) -> list:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables(text: str) -> list:
    """``[(heading, header cells, [(line number, row cells), ...]), ...]`` of every table,
    ``heading`` the last ``#`` heading above it."""
    tables, heading, current = [], "", None
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|"):
            if current is None:
                current = (heading, _cells(line), [])
                tables.append(current)
            elif not set(line.replace("|", "").strip()) <= set("-: "):
                current[2].append((n, _cells(line)))
        else:
            current = None
    return tables


def _rule_tables(text: str) -> list:
    return [t for t in _tables(text) if ONE_PLACE in t[1]]


def _twice_table(text: str):
    found = [t for t in _tables(text) if t[0] == "Rules still stated twice"]
    assert len(found) == 1, f"{DOC}: expected one table under 'Rules still stated twice'; found {len(found)}"
    return found[0]


def _lines_table(text: str):
    found = [t for t in _tables(text) if t[0].startswith("Lines of Cython under memcore_py/")]
    assert len(found) == 1, f"{DOC}: expected one lines table; found {len(found)}"
    return found[0]


# ---------------------------------------------------------------------------- resolving paths
def _resolve(path: str):
    """The object at the dotted ``path``; LookupError saying where it stops."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not name.startswith(exc.name) and exc.name != name:
                raise  # the module exists but needs what is not installed
            continue
        for attr in parts[i:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                raise LookupError(f"{name} has no {'.'.join(parts[i:])!r} (stops at {attr!r})") from None
        return obj
    raise LookupError(f"no importable module in {path!r}")


def _sources(path: str):
    """``(dotted rest, [.pyx/.pxd files])`` of the longest prefix of ``path`` with a Cython
    source under the repository."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        base = REPO_ROOT.joinpath(*parts[:i])
        files = [f for f in (base.with_suffix(".pyx"), base.with_suffix(".pxd")) if f.is_file()]
        if files:
            return parts[i:], files
    return parts, []


def _cdef_problem(path: str):
    """Why the ``(cdef)`` path is wrong, or None."""
    rest, files = _sources(path)
    if not files:
        return "no .pyx/.pxd source for its module"
    source = "\n".join(f.read_text(encoding="utf-8") for f in files)
    if len(rest) > 2:
        return f"expected a function, a class or a method after the module; got {'.'.join(rest)!r}"
    if len(rest) == 2 and not re.search(rf"^\s*cdef\s+class\s+{rest[0]}\b", source, re.MULTILINE):
        return f"no 'cdef class {rest[0]}' in {', '.join(f.name for f in files)}"
    name = rest[-1]
    defined = (rf"^\s*(?:cdef|cpdef)\b[^\n(]*\b{name}\s*\(", rf"^\s*cdef\s+class\s+{name}\b")
    if not any(re.search(p, source, re.MULTILINE) for p in defined):
        return f"no cdef definition of {name!r} in {', '.join(f.name for f in files)}"
    try:
        _resolve(path)
    except LookupError:
        return None
    return "Python can see it: drop the (cdef) marker"


def _path_problems(text: str) -> list:
    problems = []
    for heading, _header, rows in _tables(text):
        for n, cells in rows:
            for cell in cells:
                for m in PATH.finditer(cell):
                    path, cdef = m.group(1), m.group(2)
                    if cdef:
                        why = _cdef_problem(path)
                    else:
                        try:
                            _resolve(path)
                            why = None
                        except LookupError as exc:
                            why = str(exc)
                    if why:
                        problems.append(f"line {n} ({heading}): {path}{' (cdef)' if cdef else ''}: {why}")
    return problems


# ---------------------------------------------------------------------------- line counts
def _lines(text: str) -> int:
    return text.count("\n")  # as wc -l


def _cython_files() -> dict:
    root = REPO_ROOT / "memcore_py"
    return {p.relative_to(REPO_ROOT).as_posix(): _lines(p.read_text(encoding="utf-8"))
            for p in sorted(root.rglob("*")) if p.suffix in (".pyx", ".pxd") and p.is_file()}


def _column(header: list, words: str) -> int:
    found = [i for i, h in enumerate(header) if words in h]
    assert len(found) == 1, f"{DOC}: the lines table needs one column headed with {words!r}; header {header}"
    return found[0]


def _number(cell: str):
    cell = cell.strip("* ")
    return None if cell == NO_VALUE else int(cell)


def _lines_rows(text: str):
    """``(files {path: (before, now)}, total (before, now))`` of the lines table."""
    _heading, header, rows = _lines_table(text)
    b, w = _column(header, BEFORE), _column(header, "now")
    files, total = {}, None
    for n, cells in rows:
        m = FILE.match(cells[0])
        if m:
            assert m.group(1) not in files, f"{DOC}, line {n}: {m.group(1)} listed twice"
            files[m.group(1)] = (_number(cells[b]), _number(cells[w]))
        elif "Total" in cells[0]:
            total = (_number(cells[b]), _number(cells[w]))
        else:
            raise AssertionError(f"{DOC}, line {n}: neither a file nor the total: {cells[0]!r}")
    assert total is not None, f"{DOC}: the lines table has no total row"
    return files, total


def _git(*args):
    try:
        out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


# ---------------------------------------------------------------------------- tests
def test_the_page_has_every_section():
    text = _text()
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")}
    missing = [h for h in HEADINGS if not any(x.startswith(h) for x in headings)]
    assert not missing, f"{DOC}: no section {missing}"
    assert len(_rule_tables(text)) >= 8, f"{DOC}: expected a rule table per pass"


def test_every_dotted_path_resolves():
    problems = _path_problems(_text())
    assert not problems, f"{DOC}: paths that do not resolve:\n  " + "\n  ".join(problems)


def test_every_rule_names_one_place_once():
    problems, seen = [], {}
    for heading, header, rows in _rule_tables(_text()):
        col = header.index(ONE_PLACE)
        for n, cells in rows:
            if len(cells) != len(header):
                problems.append(f"line {n}: {len(cells)} cells for {len(header)} columns")
                continue
            places = PATH.findall(cells[col])
            if len(places) != 1 or PATH.sub("", cells[col]).strip():
                problems.append(f"line {n} ({heading}): the one place must be one path; got {cells[col]!r}")
            rule = (heading, cells[0])
            if rule in seen:
                problems.append(f"line {n} ({heading}): rule {cells[0]!r} already listed at line {seen[rule]}")
            seen[rule] = n
    assert seen, f"{DOC}: no rule table (a table with a column {ONE_PLACE!r})"
    assert not problems, f"{DOC}:\n  " + "\n  ".join(problems)


def test_every_rule_stated_twice_names_its_places():
    _heading, header, rows = _twice_table(_text())
    col = _column(header, "Places")
    assert rows, f"{DOC}: the 'Rules still stated twice' table is empty"
    single = [f"line {n}: {cells[0]!r}" for n, cells in rows if len(PATH.findall(cells[col])) < 2]
    assert not single, f"{DOC}: rows of 'Rules still stated twice' naming fewer than two places:\n  " + \
        "\n  ".join(single)


def test_lines_table_counts_the_working_tree():
    files, (_total_before, total_now) = _lines_rows(_text())
    now = _cython_files()
    problems = []
    for path, n in now.items():
        if path not in files:
            problems.append(f"{path} ({n} lines) is not in the table")
        elif files[path][1] != n:
            problems.append(f"{path}: the table says {files[path][1]} lines now, the file has {n}")
    for path, (_before, listed) in files.items():
        if path not in now and listed is not None:
            problems.append(f"{path}: listed with {listed} lines now, but there is no such file")
    if sum(now.values()) != total_now:
        problems.append(f"total now: the table says {total_now}, the files have {sum(now.values())}")
    assert not problems, f"{DOC}: the lines table has drifted:\n  " + "\n  ".join(problems)


def test_lines_table_counts_the_commit_before():
    listed = _git("ls-tree", "-r", "--name-only", BEFORE, "memcore_py")
    if listed is None:
        pytest.skip(f"git cannot read {BEFORE} here")
    files, (total_before, _total_now) = _lines_rows(_text())
    before = {}
    for path in listed.split():
        if path.endswith((".pyx", ".pxd")):
            shown = _git("show", f"{BEFORE}:{path}")
            assert shown is not None, f"git show {BEFORE}:{path} failed"
            before[path] = _lines(shown)
    problems = [f"{path}: the table says {files.get(path, (None,))[0]} lines at {BEFORE}, git has {n}"
                for path, n in before.items() if files.get(path, (None,))[0] != n]
    problems += [f"{path}: listed with {b} lines at {BEFORE}, which has no such file"
                 for path, (b, _now) in files.items() if path not in before and b is not None]
    if sum(before.values()) != total_before:
        problems.append(f"total at {BEFORE}: the table says {total_before}, git has {sum(before.values())}")
    assert not problems, f"{DOC}:\n  " + "\n  ".join(problems)
