"""The command line's error contract, as a check the fuzzers run on any input.

``memcore <cmd> FILE`` exits 0, or exits non-zero having written exactly one line to stderr,
``memcore <cmd>: error: ...``, with no traceback and never an ``internal error`` (a bug). The
check runs the command in-process on ``text`` written to a temporary file and returns None
when the contract holds, else what was violated (``tests/fuzz``, ``tools/fuzz.py``).
"""
from __future__ import annotations

import io
import os
import tempfile
from contextlib import redirect_stderr, redirect_stdout

__all__ = ["check_cli"]


def check_cli(text: str, command: str = "check", extra: tuple = ()) -> str | None:
    """``memcore <command> FILE`` on ``text`` (in-process); None when the CLI contract holds."""
    from . import main

    fd, path = tempfile.mkstemp(suffix=".py", text=True)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        out, err = io.StringIO(), io.StringIO()
        try:
            with redirect_stdout(out), redirect_stderr(err):
                status = main([command, *extra, path])
        except SystemExit as exc:
            status = exc.code
        except BaseException as exc:  # noqa: BLE001 - the invariant under test
            return f"memcore {command} raised {type(exc).__name__}: {exc}"
    finally:
        os.unlink(path)
    message = err.getvalue()
    if status == 0:
        return None
    if "Traceback" in message:
        return f"memcore {command} printed a traceback"
    if message.count("\n") != 1 or not message.startswith(f"memcore {command}: error: "):
        return f"memcore {command} exited {status} with {message.count(chr(10))} stderr lines: {message[:200]!r}"
    if "internal error" in message:
        return f"memcore {command}: {message.strip()}"
    return None
