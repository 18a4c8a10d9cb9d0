"""``memcore plan PROBLEM.csv``: offsets for a flat MiniMalloc problem.

A ``FILE`` ending in ``.csv`` is a MiniMalloc problem (header ``id,lower,upper,size``, any
column order, optional ``offset``; read by :func:`memcore.read_minimalloc_csv`, whose errors
name ``file:line``). Its buffers are packed into one arena by :func:`memcore.plan_offsets`
(``--time-limit`` / ``--no-search`` as for modules) and the table has one row: buffers,
steps, the sum of the sizes, arena bytes, the max-live lower bound, the excess over it, the
heuristic that won and the planning time. When the file has an ``offset`` column (a solution,
e.g. MiniMalloc's), that plan is checked with :func:`memcore.verify_offsets` and its arena
size is the ``file bytes`` column (``-`` otherwise). ``--json`` prints the same figures
(``problems``, see ``plan_schema.json``); ``--plot OUT.png`` draws the plan
(:func:`memcore_py.planning.plot.plot_offsets`). Options that need a module (``--top``,
``--print-ir``, ``--bind``, ``--write-plan``, ``--mode tvm``, a non-default ``--passes``) are
usage errors.
"""
from __future__ import annotations

import json
import os
import sys
import time

from ._common import DEFAULT_PASSES, fail
from .progress import busy

__all__ = ["FlatPlan", "plan_flat_file", "format_flat_table", "run_flat"]

_COLUMNS = ("problem", "buffers", "steps", "sum of sizes", "arena bytes", "lower bound", "arena/lb",
            "file bytes", "algorithm", "arena ms")


class FlatPlan:
    """A flat problem and its offset plan.

    Attributes
    ----------
    name : str
        The file's base name.
    problem : memcore.io.Problem
        The arrays read from the file.
    plan : memcore.OffsetPlan
        :func:`memcore.plan_offsets`'s result.
    seconds : float
        Wall time of that call.
    file_bytes : int or None
        Arena size of the file's own ``offset`` column (verified), None without one.
    """

    __slots__ = ("name", "problem", "plan", "seconds", "file_bytes")

    def __init__(self, name, problem, plan, seconds, file_bytes):
        self.name, self.problem, self.plan, self.seconds, self.file_bytes = name, problem, plan, seconds, file_bytes

    def n_steps(self) -> int:
        """Steps from the first ``lower`` to the last ``upper`` (0 for an empty problem)."""
        p = self.problem
        return int(p.end.max() - p.start.min() + 1) if len(p) else 0

    def to_dict(self) -> dict:
        """The JSON entry (``plan_schema.json``, ``problem``)."""
        return {"name": self.name, "n_buffers": len(self.problem), "n_steps": self.n_steps(),
                "total_size": int(self.problem.size.sum()), "arena_bytes": int(self.plan.arena_bytes),
                "lower_bound": int(self.plan.lower_bound), "algorithm": self.plan.algorithm,
                "file_bytes": self.file_bytes, "seconds": self.seconds}


def plan_flat_file(path: str, *, time_limit=None) -> FlatPlan:
    """Read the MiniMalloc CSV ``path`` and plan its offsets.

    Raises
    ------
    memcore.InvalidArrayError
        A malformed file (the message names ``file:line``), or an ``offset`` column whose
        buffers overlap (naming the file).
    OSError
        The file cannot be opened.
    """
    import memcore

    problem = memcore.read_minimalloc_csv(path)
    file_bytes = None
    if problem.offset is not None:
        file_bytes = int((problem.offset + problem.size).max()) if len(problem) else 0
        try:
            memcore.verify_offsets(problem.start, problem.end, problem.size, problem.offset, file_bytes)
        except memcore.MemcoreError as exc:
            raise memcore.InvalidArrayError(f"{path}: its offset column is not a valid plan: {exc}") from exc
    with busy(f"searching offsets of {path}"):  # stderr, terminal only, after 1 s
        t0 = time.perf_counter()
        plan = memcore.plan_offsets(problem.start, problem.end, problem.size, time_limit=time_limit)
        seconds = time.perf_counter() - t0
    return FlatPlan(os.path.basename(path), problem, plan, seconds, file_bytes)


def format_flat_table(plans) -> str:
    """Fixed-width table, one row per :class:`FlatPlan`."""
    from .report import format_bytes

    lines = []
    for fp in plans:
        lb, arena = int(fp.plan.lower_bound), int(fp.plan.arena_bytes)
        lines.append((fp.name, str(len(fp.problem)), str(fp.n_steps()), format_bytes(int(fp.problem.size.sum())),
                      format_bytes(arena), format_bytes(lb), f"{arena / lb - 1.0:+.1%}" if lb else "-",
                      "-" if fp.file_bytes is None else format_bytes(fp.file_bytes), fp.plan.algorithm,
                      f"{fp.seconds * 1e3:.2f}"))
    widths = [max(len(c), *(len(r[i]) for r in lines)) if lines else len(c) for i, c in enumerate(_COLUMNS)]

    def fmt(row):
        return "  ".join(v.ljust(w) if i in (0, 8) else v.rjust(w) for i, (v, w) in enumerate(zip(row, widths)))

    return "\n".join([fmt(_COLUMNS), fmt(["-" * w for w in widths]), *(fmt(r) for r in lines)])


def _usage_problem(args) -> str | None:
    """The first option a flat problem cannot take, as an error message."""
    if getattr(args, "top", None):
        return "--top needs a module; a flat problem has no tensors to report (use --plot)"
    if getattr(args, "print_ir", False):
        return "--print-ir needs a module; a flat problem has no IR"
    if getattr(args, "bind", None):
        return "--bind needs a module with shape variables; a flat problem's sizes are numbers"
    if getattr(args, "write_plan", None):
        return "--write-plan needs a graph-executor JSON input (FILE ending in .json or .json.gz)"
    if getattr(args, "mode", "arena") != "arena":
        return "a flat problem is planned with offsets (arena mode) only; --mode tvm needs a module"
    if getattr(args, "passes", None) not in (None, ",".join(DEFAULT_PASSES)):
        return "--passes needs a module; a flat problem is planned by memcore.plan_offsets alone"
    return None


def run_flat(args, out=None) -> int:
    """``memcore plan`` on the MiniMalloc CSV ``args.file``; returns the exit status."""
    import memcore

    out = out or sys.stdout
    problem = _usage_problem(args)
    if problem:
        return fail("plan", problem, 2)
    try:
        fp = plan_flat_file(args.file, time_limit=args.time_limit)
    except memcore.MemcoreError as exc:
        return fail("plan", str(exc), 1)
    except OSError as exc:
        return fail("plan", f"cannot read {args.file!r}: {exc.strerror or exc}", 1)
    plot = getattr(args, "plot", None)
    if plot:
        from ..errors import MemcoreError
        from ..planning.plot import plot_offsets

        p = fp.problem
        try:
            plot_offsets(p.start, p.end, p.size, fp.plan.offset, arena_bytes=int(fp.plan.arena_bytes),
                         lower_bound=int(fp.plan.lower_bound), names=[str(i) for i in p.ids.tolist()],
                         title=fp.name, out=plot)
        except MemcoreError as exc:
            return fail("plan", f"{args.file}: {exc}", 1)
    if args.json:
        doc = {"mode": "arena", "time_limit": args.time_limit, "problems": [fp.to_dict()]}
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        out.write(format_flat_table([fp]) + "\n")
        out.write(f"mode: arena (memcore.plan_offsets); time limit: {args.time_limit}"
                  + (f"; plot written to {plot}" if plot else "") + "\n")
    return 0
