"""Helpers shared by subcommands: reading input files and reporting errors."""
from __future__ import annotations

import gzip
import sys

__all__ = ["InputError", "read_text", "fail"]


class InputError(Exception):
    """Bad input (exit status 1): unreadable file, parse error, ill-formed module."""


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
        raise InputError(f"{label}: {exc}") from exc


def fail(command: str, message: str, status: int = 1) -> int:
    """Print ``memcore <command>: error: <message>`` to stderr and return ``status``."""
    print(f"memcore {command}: error: {message}", file=sys.stderr)
    return status
