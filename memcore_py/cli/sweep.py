"""Plan many variants of models (shapes, modes) with one command.

``memcore sweep MODEL... [--bind NAME=VALUES]... [--mode tvm,arena] [--fused] [--jobs N]
[--executor serial|process|ray] [--cache FILE] [--out results.json|results.csv] [--plot OUT.png]``
plans every combination of a ``MODEL`` (a shipped model name, a TVMScript file, a ``.pt2`` or an
``.onnx`` file; a graph-executor ``.json`` planned by Relay's GraphPlanMemory, its TVM-mode bytes
Relay's; a MiniMalloc ``.csv`` problem, arena mode only), a value of each ``--bind`` dimension
(their product) and a ``--mode`` with
:func:`memcore_py.sweep.plan_many`, and prints one row per variant: TVM-mode bytes, arena bytes
and the max-live lower bound (summed over the module's Relax functions; a figure still symbolic
at the bound values is printed as its expression). ``--bind`` evaluates the plan at the values,
as ``memcore plan --bind`` does.

``VALUES`` is ``128`` (one value), ``1,2,4`` (a list), ``128:4096:x2`` (128 to 4096, times 2 each
step) or ``128:1024:128`` (128 to 1024 in steps of 128). ``--out`` writes every result as JSON
(what ``memcore diff`` compares) or CSV, by the file's extension; ``--plot`` draws the bytes of
each model and mode, and the lower bound, against the one swept dimension (the ``plot`` extra).
``--cache FILE`` keeps results on disk by content (an SQLite file), so a second run plans only
what changed. A progress line is drawn on a terminal's stderr.

Exit status: 0 when every variant was planned, 1 when one failed (its row says why; the others
are still printed and written), 2 usage error.
"""
from __future__ import annotations

import csv
import itertools
import sys

from ._common import UsageError, fail

__all__ = ["add_arguments", "run", "parse_values"]

#: Most values one ``--bind`` range may give (a guard against a typo like ``1:1000000000:1``).
MAX_VALUES = 100_000


def add_arguments(parser) -> None:
    """Add ``sweep``'s arguments to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("models", nargs="+", metavar="MODEL",
                        help="shipped model names or files (TVMScript, .pt2, .onnx, graph-executor .json, .csv)")
    parser.add_argument("--bind", action="append", default=[], metavar="NAME=VALUES",
                        help="a symbolic dimension and its values: 128, 1,2,4, 128:4096:x2 or 128:1024:128 "
                             "(repeatable: the product of all)")
    parser.add_argument("--mode", default="tvm,arena", metavar="MODES",
                        help="comma-separated: tvm, arena (default: both, one variant each)")
    parser.add_argument("--fused", action="store_true",
                        help="lower high-level modules with LowerForPlanning(fuse=True)")
    parser.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                        help="arena mode's search time per pool beyond the heuristics (default: none, deterministic)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N", help="workers (default: the machine's cores)")
    parser.add_argument("--executor", choices=("serial", "process", "ray"), default="process",
                        help="where batches run (default: process)")
    parser.add_argument("--cache", default=None, metavar="FILE", help="result cache (SQLite file, created if missing)")
    parser.add_argument("--out", default=None, metavar="FILE", help="write the results as .json or .csv")
    parser.add_argument(
        "--plot", default=None, metavar="OUT", help="bytes against the swept dimension (.png/.svg/.pdf)"
    )


def parse_values(text: str, name: str) -> list:
    """The values of one ``--bind NAME=VALUES`` (module docstring).

    Raises
    ------
    UsageError
        A malformed or empty range, a value < 0, or more than :data:`MAX_VALUES` values.
    """
    def number(s):
        try:
            v = int(s)
        except ValueError:
            raise UsageError(f"--bind {name}={text}: {s!r} is not an integer") from None
        if v < 0:
            raise UsageError(f"--bind {name}={text}: {v} is negative")
        return v

    if ":" not in text:
        values = [number(s) for s in text.split(",") if s.strip()]
    else:
        parts = text.split(":")
        if len(parts) != 3:
            raise UsageError(f"--bind {name}={text}: a range is START:STOP:STEP (STEP: N, or xN to multiply)")
        start, stop = number(parts[0]), number(parts[1])
        step = parts[2]
        times = step.startswith("x")
        k = number(step[1:] if times else step)
        if (times and k < 2) or (not times and k < 1):
            raise UsageError(f"--bind {name}={text}: the step must be >= 1 (a factor xN: N >= 2)")
        if times and start == 0:
            raise UsageError(f"--bind {name}={text}: a multiplied range cannot start at 0")
        values, v = [], start
        while v <= stop and len(values) <= MAX_VALUES:
            values.append(v)
            v = v * k if times else v + k
    if not values:
        raise UsageError(f"--bind {name}={text}: no values")
    if len(values) > MAX_VALUES:
        raise UsageError(f"--bind {name}={text}: more than {MAX_VALUES} values")
    return values


def _binds(items) -> list:
    """The product of the ``--bind`` options as dicts (``[{}]`` without any)."""
    names, lists = [], []
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--bind {item!r}: expected NAME=VALUES")
        if name in names:
            raise UsageError(f"--bind: {name!r} given twice")
        names.append(name)
        lists.append(parse_values(text.strip(), name))
    return [dict(zip(names, combo)) for combo in itertools.product(*lists)]


def _modes(text: str) -> list:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("tvm", "arena")]
    if bad or not modes:
        raise UsageError(f"--mode: expected tvm, arena or tvm,arena; got {text!r}")
    return list(dict.fromkeys(modes))


def write_csv(results, path: str) -> None:
    """``results`` (a :class:`~memcore_py.sweep.SweepResults`) as CSV, one row per variant."""
    from ..sweep import COLUMNS

    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS + ("tvm_expr", "arena_expr"))
        for r in results:
            row = [getattr(r, c) for c in COLUMNS] + [r.tvm_expr, r.arena_expr]
            row[COLUMNS.index("bind")] = ",".join(f"{k}={v}" for k, v in r.bind.items())
            w.writerow(["" if v is None else v for v in row])


def run(args, out=None) -> int:
    """Run ``memcore sweep`` with parsed ``args``; returns the exit status."""
    from ..sweep import Variant, plan_many
    from .progress import Progress

    out = out or sys.stdout
    try:
        if args.out and not args.out.lower().endswith((".json", ".csv")):
            raise UsageError(f"--out: {args.out!r} must end in .json or .csv")
        if args.plot and not args.plot.lower().endswith((".png", ".svg", ".pdf")):
            raise UsageError(f"--plot: {args.plot!r} must end in .png, .svg or .pdf")
        if args.jobs is not None and args.jobs < 1:
            raise UsageError(f"--jobs must be >= 1; got {args.jobs}")
        if args.time_limit is not None and not args.time_limit > 0:
            raise UsageError(f"--time-limit must be > 0; got {args.time_limit}")
        binds = _binds(args.bind)
        modes = _modes(args.mode)
        swept = [b.partition("=")[0].strip() for b in args.bind if ":" in b or "," in b]
        if args.plot and len(swept) != 1:
            raise UsageError("--plot draws bytes against one swept dimension: give exactly one --bind with "
                             "several values")
    except UsageError as exc:
        return fail("sweep", str(exc), 2)
    variants = [Variant(m, bind=b or None, mode=mode, fuse=args.fused, time_limit=args.time_limit)
                for m in args.models for b in binds for mode in modes]
    with Progress(len(variants), "sweeping") as bar:
        results = plan_many(variants, executor=args.executor, jobs=args.jobs, cache=args.cache, progress=bar.advance)
    out.write(results.to_table())
    if args.out:
        try:
            if args.out.lower().endswith(".csv"):
                write_csv(results, args.out)
            else:
                with open(args.out, "w", encoding="utf-8") as fh:
                    fh.write(results.to_json())
        except OSError as exc:
            return fail("sweep", f"cannot write {args.out!r}: {exc.strerror or exc}", 1)
    if args.plot:
        from ..sweep.plot import plot_sweep

        plot_sweep(results, swept[0], out=args.plot)
    failed = sum(r.error is not None for r in results)
    if failed:
        return fail("sweep", f"{failed} of {len(results)} variants failed (see their error column)", 1)
    return 0
