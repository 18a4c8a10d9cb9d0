"""Helpers shared by subcommands: reading input files and reporting errors.

Every error the command line reports is one line on stderr, ``memcore <cmd>: error: <what>``:
a parse error reads ``FILE:LINE:COLUMN: message`` (the compiler convention, so editors can
jump to it), and any multi-line message is folded onto one line by :func:`one_line`.
"""
from __future__ import annotations

import gzip
import sys

__all__ = ["SPBM", "DEFAULT_PASSES", "InputError", "UsageError", "read_text", "parse_text", "fail", "one_line",
           "error_text"]


#: The pass ``memcore plan`` measures, and its default pipeline (kebab-case pass names).
SPBM = "static-plan-block-memory"
DEFAULT_PASSES = (SPBM, "lower-alloc-tensor", "kill-after-last-use")


class InputError(Exception):
    """Bad input (exit status 1): unreadable file, parse error, ill-formed module."""


class UsageError(Exception):
    """Bad command-line usage found after argparse (exit status 2)."""


def read_text(path: str) -> str:
    """Text of ``path``; ``-`` is stdin and ``*.gz`` files are decompressed."""
    try:
        if path == "-":
            return sys.stdin.read()
        if path.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                return fh.read()
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read {path!r}: {reason}") from exc


def parse_text(text: str, label: str):
    """Parse TVMScript ``text``; a :class:`~memcore_py.errors.ParseError` becomes an
    :class:`InputError` naming ``label``."""
    from .. import parse
    from ..errors import MemcoreError

    try:
        return parse(text)
    except MemcoreError as exc:
        text = error_text(exc)
        raise InputError(f"{label}:{text}" if getattr(exc, "line", 0) else f"{label}: {text}") from exc


def error_text(exc: BaseException) -> str:
    """One-line text of ``exc``: a :class:`~memcore_py.errors.ParseError` as
    ``LINE:COLUMN: message`` (without the source excerpt), anything else as its message."""
    from ..errors import ParseError

    if isinstance(exc, ParseError) and exc.line:
        return f"{exc.line}:{exc.column}: {one_line(exc.msg)}"
    return one_line(str(exc))


def one_line(message: str) -> str:
    """``message`` on one line: line breaks and the indentation after them become one space."""
    if "\n" not in message and "\r" not in message:
        return message
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


def fail(command: str, message: str, status: int = 1) -> int:
    """Print ``memcore <command>: error: <message>`` (on one line) to stderr and return
    ``status``."""
    print(f"memcore {command}: error: {one_line(message)}", file=sys.stderr)
    return status
