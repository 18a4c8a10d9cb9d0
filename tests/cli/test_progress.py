"""The CLI progress line (memcore_py.cli.progress): only on a terminal, only after the delay,
erased at the end."""
import io

import time

from memcore_py.cli.progress import Progress, busy


class _Terminal(io.StringIO):
    def isatty(self):
        return True


class _Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_nothing_before_the_delay_nor_when_piped():
    clock = _Clock()
    term, piped = _Terminal(), io.StringIO()
    for stream in (term, piped):
        with Progress(4, "planning", stream, delay=1.0, clock=clock) as bar:
            bar.start("a.py")
            bar.advance()
    assert term.getvalue() == "" and piped.getvalue() == ""
    clock.t += 5  # long run, but piped: still nothing
    with Progress(2, "planning", piped, clock=clock) as bar:
        clock.t += 5
        bar.start("b.py")
        bar.advance()
    assert piped.getvalue() == ""


def test_draws_after_the_delay_and_erases_at_the_end():
    clock = _Clock()
    term = _Terminal()
    bar = Progress(4, "planning", term, delay=1.0, width=8, clock=clock)
    bar.start("a.py")
    bar.advance()
    assert term.getvalue() == ""
    clock.t += 1.5
    bar.start("long_name.py")
    assert term.getvalue() == "\rplanning [##......] 1/4 1.5s long_name.py"
    bar.advance(2)
    bar.start("c.py")  # shorter: padded over the previous text
    last = term.getvalue().split("\r")[-1]
    assert last.startswith("planning [######..] 3/4 1.5s c.py") and len(last) == len("planning [##......] 1/4 1.5s long_name.py")
    bar.advance(5)  # never past the total
    assert bar.done == 4
    on_screen = bar.drawn
    assert on_screen == len(term.getvalue().split("\r")[-1])
    bar.close()
    assert term.getvalue().endswith("\r" + " " * on_screen + "\r")
    before = term.getvalue()
    bar.close()  # idempotent
    assert term.getvalue() == before


def test_busy_line_while_a_long_call_runs():
    term, piped = _Terminal(), io.StringIO()
    with busy("searching offsets of p.csv", term, delay=0.05, interval=0.02):
        time.sleep(0.3)
    drawn = term.getvalue()
    assert "\rsearching offsets of p.csv ... 0." in drawn and drawn.endswith("\r")  # drawn, then erased
    with busy("searching", piped, delay=0.0, interval=0.01):
        time.sleep(0.05)
    assert piped.getvalue() == ""
    quick = _Terminal()
    with busy("searching", quick, delay=5.0, interval=0.01):
        time.sleep(0.05)
    assert quick.getvalue() == ""
