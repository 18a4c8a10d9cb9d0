"""The ``memcore`` command line.

Design
------
One module per subcommand, registered in :data:`SUBCOMMANDS` (name -> module path). A
subcommand module provides:

- a module docstring whose first line is the command's one-line help;
- ``add_arguments(parser)``: its arguments on an :class:`argparse.ArgumentParser`;
- ``run(args, out=None) -> int``: does the work, writes results to ``out`` (stdout by
  default) and messages to stderr, and returns the exit status.

Modules are imported lazily (only the one being run), so ``memcore --version`` stays fast
and a broken subcommand cannot break the others. Adding ``memcore foo`` = writing
``memcore_py/cli/foo.py`` and one line in :data:`SUBCOMMANDS`.

Exit status (every subcommand): 0 success, 1 bad input (unreadable file, parse error,
ill-formed module, a pass rejecting the module), 2 usage error (argparse's own exit),
3 internal error (a bug: please report it), 130 interrupted.
Errors are printed as one line, ``memcore <cmd>: error: <message>``, on stderr, never as a
traceback: :func:`main` turns any :class:`~memcore_py.errors.MemcoreError` a subcommand lets
through into status 1, and any other exception into an ``internal error`` line with status
3 (set ``MEMCORE_TRACEBACK=1`` to see the traceback instead).
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

__all__ = ["SUBCOMMANDS", "main", "build_parser"]

#: Subcommand name -> module implementing it (``add_arguments`` / ``run``).
SUBCOMMANDS = {
    "check": "memcore_py.cli.check",
    "diff": "memcore_py.cli.diff",
    "fmt": "memcore_py.cli.fmt",
    "plan": "memcore_py.cli.plan",
    "show": "memcore_py.cli.show",
    "sweep": "memcore_py.cli.sweep",
}


def _summary(module) -> str:
    """First docstring line, without a leading "``memcore cmd ...``: " usage echo."""
    doc = (module.__doc__ or "").strip()
    line = doc.splitlines()[0].rstrip(".") if doc else ""
    if line.startswith("``") and "``: " in line:
        line = line.split("``: ", 1)[1]
        line = line[:1].upper() + line[1:]
    return line


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``memcore`` parser; with ``command``, only that subcommand is imported and set up."""
    from .. import __version__

    parser = argparse.ArgumentParser(prog="memcore", description="Memory planning for Relax-like ML compute graphs.")
    parser.add_argument("--version", action="version", version=f"memcore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, path in SUBCOMMANDS.items():
        if command is not None and name != command:
            sub.add_parser(name, help="")
            continue
        module = importlib.import_module(path)
        p = sub.add_parser(name, help=_summary(module), description=(module.__doc__ or "").strip().split("\n\n")[0])
        module.add_arguments(p)
        p.set_defaults(_module=module)
    return parser


def main(argv=None) -> int:
    """Run ``memcore`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Usage errors (unknown command or option, missing argument) and ``--version`` /
    ``--help`` end through :class:`SystemExit` raised by :mod:`argparse` (status 2, or 0),
    as with any argparse program; everything else returns the status.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in SUBCOMMANDS:
        command = None
    parser = build_parser(command)
    args = parser.parse_args(argv)
    if getattr(args, "command", None) is None:
        parser.print_help(sys.stderr)
        return 2
    return _run_guarded(args)


#: Exit status of an unexpected exception (a bug in memcore, not in the input).
EXIT_INTERNAL = 3


def _run_guarded(args) -> int:
    """``args._module.run(args)``, with every escaping exception reported on one line."""
    from ..errors import MemcoreError
    from ._common import error_text, fail

    try:
        return args._module.run(args)
    except KeyboardInterrupt:
        return fail(args.command, "interrupted", 130)
    except BrokenPipeError:  # e.g. `memcore fmt big.py | head`
        return 1
    except MemcoreError as exc:
        return fail(args.command, error_text(exc), 1)
    except MemoryError:
        return fail(args.command, "out of memory", 1)
    except RecursionError:
        return fail(args.command, "input is nested too deeply", 1)
    except Exception as exc:  # noqa: BLE001 - the command line never shows a traceback
        if os.environ.get("MEMCORE_TRACEBACK"):
            raise
        return fail(
            args.command,
            f"internal error: {type(exc).__name__}: {exc} (a bug in memcore; please report it; "
            f"MEMCORE_TRACEBACK=1 shows the traceback)",
            EXIT_INTERNAL,
        )
