"""Tokenizer shared by the TVMScript parser and printer (a Python-expression subset).

One compiled regular expression splits a line into tokens with ``findall`` (no match
objects, so it costs one C call per line). Every token is a plain ``str``; its kind is
decided by its first character:

- a letter or ``_``: a (possibly dotted) name, ``R.builtin.alloc_tensor`` is one token;
- a digit, or ``.`` followed by a digit: a number (``3``, ``1.5``, ``1e-05``, ``.5``);
- ``"`` or ``'``: a complete string literal (an unterminated one is not a string token:
  its quote comes out as a one-character token, which the parser rejects);
- anything else: punctuation or an operator (``//`` and ``->`` are one token), or one
  unexpected character (garbage is reported by the parser, never by the lexer).

Whitespace is Python's source whitespace (space, tab, form feed, CR, LF): it separates tokens
and is otherwise ignored; comments are removed by the caller. Any other character, including
Unicode spaces such as U+00A0 that Python source refuses, is a one-character token the parser
rejects.

Tokenizing is linear in the input, whatever it holds: every whitespace run the pattern skips
is followed by a character the pattern's last alternative accepts, so no match attempt fails
after scanning a run -- except a run at the very end of the text, which :func:`tokenize`
strips first (``findall`` would otherwise rescan that run from each of its positions,
quadratic in its length).
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["TOKEN_RE", "tokenize", "token_columns", "strip_comment", "string_value"]

#: One token (group 1) after optional whitespace.
TOKEN_RE = re.compile(
    r"""[ \t\f\r\n]*("""
    r"""[A-Za-z_][A-Za-z_0-9]*(?:\.[A-Za-z_][A-Za-z_0-9]*)*"""  # dotted name
    r"""|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?"""  # number
    r'''|"(?:[^"\\\n]|\\.)*"'''  # "string"
    r"""|'(?:[^'\\\n]|\\.)*'"""  # 'string'
    r"""|//|->|\*\*|==|!=|<=|>=|<<|>>"""  # two-character operators
    r"""|[^ \t\f\r\n])"""  # any other single character (not \S: see the module docstring)
)

_findall = TOKEN_RE.findall
_WHITESPACE = " \t\f\r\n"


def tokenize(text: str) -> list:
    """Tokens of ``text`` (see the module docstring); linear in ``len(text)``."""
    if text and text[-1] in _WHITESPACE:
        text = text.rstrip(_WHITESPACE)
    return _findall(text)


def token_columns(text: str) -> list:
    """1-based start column of each token of ``text`` (used only to report errors)."""
    return [m.start(1) + 1 for m in TOKEN_RE.finditer(text.rstrip(_WHITESPACE))]


def strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` inside a string is kept)."""
    if "#" not in line:
        return line
    quote = None
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c == '"' or c == "'":
            quote = c
        elif c == "#":
            return line[:i]
        i += 1
    return line


_ESCAPES = {
    "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "\n": "",
}
#: A run of ``\xhh`` escapes (group 1), or any other escape (group 2).
_ESCAPE_RE = re.compile(
    r"((?:\\x[0-9a-fA-F]{2})+)|\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[A-Za-z0-9 \-]+\}|.)", re.S
)


def _bytes_escapes(run: str) -> str:
    """A run of ``\\xhh`` escapes as TVM's printer means it: the bytes of UTF-8 text
    (``support::StrEscape`` writes every byte outside printable ASCII so, ``"glé"`` as
    ``"gl\\xC3\\xA9"``). A byte that is not part of valid UTF-8 keeps Python's meaning, the
    code point of its value (``"\\xe9"`` alone is ``"é"``). TVM's own parser gives every
    escape Python's meaning, so TVM's text of a non-ASCII string does not read back in TVM as
    the string it printed (DIFFERENCES.md, ``utf8-escapes``)."""
    data = bytes(int(run[i + 2:i + 4], 16) for i in range(0, len(run), 4))
    text = data.decode("utf-8", "surrogateescape")
    if not any("\udc80" <= ch <= "\udcff" for ch in text):
        return text
    return "".join(chr(ord(ch) - 0xDC00) if "\udc80" <= ch <= "\udcff" else ch for ch in text)


def _unescape(m):
    run = m.group(1)
    if run is not None:
        return _bytes_escapes(run)
    s = m.group(2)
    c = s[0]
    if c in "uUx" and len(s) > 1:
        return chr(int(s[1:], 16))
    if "0" <= c <= "7":
        return chr(int(s, 8))
    if c == "N" and len(s) > 1:
        try:
            return unicodedata.lookup(s[2:-1])
        except KeyError:
            return "\\" + s
    return _ESCAPES.get(c, "\\" + s)


def string_value(token: str) -> str:
    """The value of a string token: its quotes removed and its escapes resolved as Python
    does (``\\n \\t \\r \\b \\f \\a \\v``, octal, ``\\uhhhh``, ``\\Uhhhhhhhh``,
    ``\\N{name}``; an unknown escape keeps its backslash), except that a run of ``\\xhh``
    escapes is read as the UTF-8 bytes TVM's printer writes them for (:func:`_bytes_escapes`).
    A UTF-16 surrogate pair written as two ``\\u`` escapes (how JSON, and so the printer,
    writes characters beyond U+FFFF) is one character."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    out = _ESCAPE_RE.sub(_unescape, body)
    if any("\ud800" <= ch <= "\udfff" for ch in out):
        out = out.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return out
