"""A progress line on stderr for long CLI runs (planning many files, a long offset search).

Design
------
:class:`Progress` counts finished items. It draws nothing unless its stream is a terminal
(piped or redirected output stays clean, so scripts and logs never see it) and nothing
before ``delay`` seconds have passed (a run that ends quickly prints nothing); after that it
redraws one line in place (``\\r``): a bar, ``done/total``, the elapsed time and the item
being worked on, and :meth:`Progress.close` erases it, so the table that follows starts
on a clean line. The clock is injectable for tests. :func:`busy` is the same line for one
long call without steps (the engine's offset search): a background thread redraws the
elapsed time until the call returns.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

__all__ = ["Progress", "busy"]


class Progress:
    """Progress of ``total`` items on ``stream`` (default ``sys.stderr``).

    Parameters
    ----------
    total : int
        Number of items.
    label : str
        What is being done (``"planning"``).
    stream : file, optional
        Where to draw; nothing is drawn when it is not a terminal.
    delay : float, default 1.0
        Seconds before the first drawing.
    width : int, default 24
        Characters of the bar.
    clock : callable, optional
        Returns seconds (``time.monotonic``).

    Examples
    --------
    >>> with Progress(3, "planning") as bar:  # doctest: +SKIP
    ...     for name in ("a.py", "b.py", "c.py"):
    ...         bar.start(name)
    ...         plan(name)
    ...         bar.advance()
    """

    def __init__(self, total: int, label: str, stream=None, *, delay: float = 1.0, width: int = 24, clock=None):
        self.total = max(int(total), 0)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.delay = delay
        self.width = width
        self.clock = clock or time.monotonic
        self.t0 = self.clock()
        self.done = 0
        self.current = ""
        self.drawn = 0  # length of the line on screen (0: nothing drawn)
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = bool(isatty is not None and isatty())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def start(self, item: str) -> None:
        """``item`` is being worked on now."""
        self.current = str(item)
        self._draw()

    def advance(self, n: int = 1) -> None:
        """``n`` more items are finished."""
        self.done = min(self.done + n, self.total)
        self._draw()

    def line(self) -> str:
        """The text of the progress line at this moment."""
        frac = self.done / self.total if self.total else 1.0
        full = int(round(frac * self.width))
        elapsed = self.clock() - self.t0
        return (f"{self.label} [{'#' * full}{'.' * (self.width - full)}] {self.done}/{self.total} "
                f"{elapsed:.1f}s {self.current}").rstrip()

    def _draw(self) -> None:
        if not self.enabled or self.clock() - self.t0 < self.delay:
            return
        text = self.line()
        pad = max(self.drawn - len(text), 0)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self.drawn = len(text)

    def close(self) -> None:
        """Erase the line (if one was drawn)."""
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()
            self.drawn = 0


@contextlib.contextmanager
def busy(label: str, stream=None, *, delay: float = 1.0, interval: float = 0.25):
    """While the ``with`` block runs, redraw ``label ... 1.3s`` on ``stream`` (default
    ``sys.stderr``) every ``interval`` seconds once ``delay`` has passed; only on a terminal;
    the line is erased when the block ends.

    Examples
    --------
    >>> with busy("searching offsets of p.csv"):  # doctest: +SKIP
    ...     memcore.plan_offsets(start, end, size, time_limit=30)
    """
    line = Progress(0, label, stream, delay=delay)
    if not line.enabled:
        yield
        return
    line.line = lambda: f"{label} ... {line.clock() - line.t0:.1f}s"  # no count: one call
    stop = threading.Event()

    def redraw():
        while not stop.wait(interval):
            line._draw()

    thread = threading.Thread(target=redraw, name="memcore-busy", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        line.close()
