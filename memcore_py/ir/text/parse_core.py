"""Parser core: source lines, errors located in the source, and the token stream.

Design
------
The TVMScript parser (:mod:`memcore_py.ir.text.parser`) is one class, ``_Parser``, assembled
from mixins that each do one job; this module holds the ground they all stand on:

- :class:`_Line`, a logical line (physical lines joined inside open brackets, comment
  removed), and :meth:`_SourceReader.logical_lines`, which makes them;
- :class:`_Err`, the light internal error raised with a token index, and
  :meth:`_SourceReader.error` / :meth:`_SourceReader._located`, which turn it (or an
  :class:`~memcore_py.errors.IRError`, or anything else) into a
  :class:`~memcore_py.errors.ParseError` at the right line and column;
- the token stream of the segment being parsed (:meth:`_SourceReader.set_segment`,
  ``peek``, ``expect``, ``at_end``), tokenized by :mod:`memcore_py.ir.text.lexer`;
- :data:`MAX_DEPTH`, the nesting limit of expressions and statements.

The mixins keep no state of their own: ``_Parser.__init__`` sets every attribute they read.
"""
from __future__ import annotations

import re
import unicodedata

from ...errors import IRError, ParseError
from .lexer import strip_comment, token_columns, tokenize


#: Maximum nesting of brackets/calls in one expression, and of statements (``if`` in ``if``).
MAX_DEPTH = 64

_tokenize = tokenize


#: A character other than printable ASCII and tab (then the line is checked token by token).
_UNUSUAL_CHAR = re.compile(r"[^\t -~]")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")


def _tok(tok: str) -> str:
    """A token for an error message: quoted, or ``U+00A0 (NO-BREAK SPACE)`` for a character
    that is not printable ASCII (Python source refuses those outside strings, and so do we)."""
    if len(tok) == 1 and not (" " < tok <= "~"):
        name = unicodedata.name(tok, None) or (
            "a control character" if unicodedata.category(tok) == "Cc" else "unnamed"
        )
        return f"character U+{ord(tok):04X} ({name})"
    return repr(tok)


class _Err(Exception):
    """Internal: an error at token ``pos`` of the expression being parsed."""

    def __init__(self, msg, pos=None):
        super().__init__(msg)
        self.msg = msg
        self.pos = pos


def _reserved_prim_message(name: str) -> str:
    return (f"symbolic var {name!r} has a name the printed text uses itself (a module alias, "
            f"a header name or a Python keyword); rename it")


# ------------------------------------------------------------------------------ lines
class _Line:
    """One logical line: ``indent`` columns, ``text`` (comment removed, stripped),
    1-based ``lineno``, and ``col`` (column where ``text`` starts)."""

    __slots__ = ("indent", "text", "lineno", "col", "parts")

    def __init__(self, indent, text, lineno, col, parts=None):
        self.indent = indent
        self.text = text
        self.lineno = lineno
        self.col = col
        #: For a line joined from several physical lines: ``[(offset in text, lineno,
        #: column of that piece)]``, used to report errors on the right physical line.
        self.parts = parts


def _balance(text):
    """Bracket depth change of a line (strings skipped only when needed)."""
    d = text.count("(") - text.count(")") + text.count("[") - text.count("]") + text.count("{") - text.count("}")
    if d == 0 and '"' not in text and "'" not in text:
        return 0
    depth = 0
    for tok in _tokenize(text):
        if len(tok) == 1:
            if tok in "([{":
                depth += 1
            elif tok in ")]}":
                depth -= 1
    return depth


# ------------------------------------------------------------------------------ source reader
class _SourceReader:
    """Source lines, errors located in them, and the token stream of one segment (a mixin of
    the parser)."""

    # ================================================================== errors
    def error(self, msg, line=None, col=None):
        line = line if line is not None else self.cur
        if line is None:
            return ParseError(msg, 0, 0, "")
        lineno = line.lineno
        if col is None:
            col = line.col
        elif line.parts is not None:
            # a joined line: find the physical line the column falls on
            offset = col - line.col
            for start, part_lineno, part_col in reversed(line.parts):
                if offset >= start:
                    lineno = part_lineno
                    col = part_col + offset - start
                    break
        src = self.raw[lineno - 1] if 0 < lineno <= len(self.raw) else ""
        return ParseError(msg, lineno, col, src.rstrip("\r"))

    def _token_col(self, pos):
        """Source column of token ``pos`` of the current segment."""
        cols = token_columns(self.seg_text)
        base = self.seg_col
        if pos is None:
            return base
        if pos < len(cols):
            col = base + cols[pos] - 1
        else:
            col = base + len(self.seg_text.rstrip())
        return col

    def _located(self, exc):
        """Convert an internal error into a ParseError at the current line."""
        if isinstance(exc, ParseError):
            return exc
        if isinstance(exc, _Err):
            err = self.error(exc.msg, col=self._token_col(exc.pos))
            err.__suppress_context__ = True  # the internal exception is noise
            return err
        if isinstance(exc, IRError):
            msg = str(exc)
        elif isinstance(exc, RecursionError):
            msg = "input is nested too deeply"
        else:
            msg = f"cannot parse this line ({type(exc).__name__}: {exc})"
        err = self.error(msg)
        err.__cause__ = exc
        return err

    # ================================================================== lines
    def logical_lines(self, start, end):
        """``_Line`` objects for physical lines ``[start, end)`` (0-based), skipping blank and
        comment lines and joining lines inside open brackets."""
        raw = self.raw
        out = []
        append = out.append
        i = start
        while i < end:
            line = raw[i]
            i += 1
            if "\t" in line:
                line = line.expandtabs(8)
            stripped = line.lstrip(" ")
            if not stripped or stripped[0] == "#":
                continue
            indent = len(line) - len(stripped)
            if "#" in stripped:
                stripped = strip_comment(stripped)
            stripped = stripped.rstrip()
            if not stripped:
                continue
            lineno = i
            parts = None
            if (
                stripped.count("(") != stripped.count(")")
                or stripped.count("[") != stripped.count("]")
                or "{" in stripped
            ):
                depth = _balance(stripped)
                while depth > 0:
                    if i >= end:
                        raise self.error(
                            "unexpected end of input: a bracket opened on this line is never closed",
                            _Line(indent, stripped, lineno, indent + 1),
                        )
                    nxt = raw[i]
                    i += 1
                    if "#" in nxt:
                        nxt = strip_comment(nxt)
                    lead = len(nxt) - len(nxt.lstrip())
                    nxt = nxt.strip()
                    if nxt:
                        if parts is None:
                            parts = [(0, lineno, indent + 1)]
                        parts.append((len(stripped) + 1, i, lead + 1))
                        stripped = stripped + " " + nxt
                        depth += _balance(nxt)
                if depth < 0:
                    raise self.error("unbalanced closing bracket", _Line(indent, stripped, lineno, indent + 1))
            if _UNUSUAL_CHAR.search(stripped) is not None:
                self._check_characters(stripped, lineno, indent + 1, parts)
            append(_Line(indent, stripped, lineno, indent + 1, parts))
        return out

    def _check_characters(self, text, lineno, col, parts):
        """Refuse a character outside strings that Python source refuses: a control
        character or a non-ASCII space such as U+00A0 (where ``text`` has characters other
        than printable ASCII and tabs; rare, so the line is tokenized again here)."""
        cols = token_columns(text)
        for tok, c in zip(_tokenize(text), cols):
            if len(tok) == 1 and not (" " < tok <= "~"):
                line = _Line(0, text, lineno, col, parts)
                raise self.error(f"invalid {_tok(tok)}", line, col + c - 1)

    # ================================================================== tokens
    def set_segment(self, text, col):
        self.seg_text = text
        self.seg_col = col
        toks = _tokenize(text)
        self.toks = toks
        self.pos = 0
        self.depth = 0
        return toks

    def peek(self):
        pos = self.pos
        toks = self.toks
        return toks[pos] if pos < len(toks) else ""

    def expect(self, tok):
        pos = self.pos
        toks = self.toks
        if pos >= len(toks):
            raise _Err(f"expected {tok!r} but the line ends", pos)
        if toks[pos] != tok:
            raise _Err(f"expected {tok!r}; got {toks[pos]!r}", pos)
        self.pos = pos + 1

    def at_end(self):
        if self.pos != len(self.toks):
            raise _Err(f"unexpected {_tok(self.toks[self.pos])}", self.pos)
