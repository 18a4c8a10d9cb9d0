"""Reprint a TVMScript module in memcore's canonical form.

``memcore fmt FILE`` parses ``FILE`` (``-`` = stdin, ``*.gz`` decompressed) and writes the
module as :meth:`~memcore_py.ir.IRModule.script` prints it (text Apache TVM 0.27 accepts) to
stdout, or to ``-o OUT``. A parse error is printed on stderr with its line and column, and
the exit status is 1.
"""
from __future__ import annotations

import sys

from ._common import InputError, fail, parse_text, read_text

__all__ = ["add_arguments", "run"]


def add_arguments(parser) -> None:
    parser.add_argument("file", metavar="FILE", help="TVMScript module ('-' = stdin)")
    parser.add_argument("-o", "--output", metavar="OUT", help="write here instead of stdout")


def run(args, out=None) -> int:
    try:
        mod = parse_text(read_text(args.file), args.file)
    except InputError as exc:
        return fail("fmt", str(exc))
    text = mod.script()
    if not text.endswith("\n"):
        text += "\n"
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            return fail("fmt", f"cannot write {args.output!r}: {exc.strerror or exc}")
        return 0
    (out or sys.stdout).write(text)
    return 0
