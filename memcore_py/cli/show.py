"""``memcore show FILE``: the module's text with each binding's memory as trailing comments.

The textual twin of the memory timeline plot (:mod:`memcore_py.planning.plot`). ``FILE`` is a
TVMScript module in the form StaticPlanBlockMemory takes (after ``CallTIRRewrite``; ``-`` =
stdin, ``*.gz`` decompressed). It is planned in ``--mode`` (``arena`` by default) and printed
back (memcore's printer, TVM's layout) with a comment at the end of every binding of every
Relax function:

- an allocation of a planned tensor: its storage and offset (``s1+4096``, storages numbered
  per function in creation order, as in the peak report), its bytes and its lifetime
  ``[alloc step, last-use step]``;
- every binding: the step and the bytes of the planned tensors live there (``live``), marked
  ``PEAK`` at the function's peak step, and the tensors whose last use it is;
- an allocation the pass leaves alone (it escapes, or is used in another block), or one of
  symbolic size, says so.

A header comment per function gives the mode's total, the lower bound and the peak. Steps
are binding positions in the function (an ``If``'s branch bindings right after the ``If``
line), as in ``memcore plan --top`` and the plots.

Design
------
The figures are :func:`memcore_py.planning.peak_report.timelines`'; this module only places
them. The printed text of a function has one line per binding, in step order, with the
other lines at known places (decorator, signature, ``R.func_attr``, symbolic-var
declarations and ``cls = Module`` before the body; ``with R.dataflow():`` / ``R.output(...)``
around a dataflow block; ``if``/``else:`` and one result line per branch; ``return``), so
:func:`annotate` walks the IR and the lines together and checks each binding's line against
the binding's var name.

Exit status: 0 success, 1 bad input (unreadable file, parse error, a module the pass
rejects), 2 usage error.
"""
from __future__ import annotations

import re
import sys

from ..planning.allocate import MODES
from ..planning.arena_options import ARENA_TIME_LIMIT
from ._common import InputError, fail, parse_text, read_text

__all__ = ["add_arguments", "run", "annotate"]


def add_arguments(parser) -> None:
    """Add ``show``'s arguments to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("file", metavar="FILE", help="TVMScript module after CallTIRRewrite ('-' = stdin)")
    parser.add_argument("--mode", choices=MODES, default="arena",
                        help="StaticPlanBlockMemory mode whose storages and offsets are shown (default: arena)")
    parser.add_argument("--no-search", action="store_true",
                        help="arena mode: best heuristic only (deterministic, no time budget)")


_PRELUDE = re.compile(r"\s*(R\.func_attr\(|cls = \w+$|\w+ = T\.\w+\(\)$)")


class _Lines:
    """A cursor over the printed lines of one function."""

    def __init__(self, lines, start):
        self.lines = lines
        self.i = start

    def expect(self, pattern: str, what: str) -> int:
        line = self.lines[self.i] if self.i < len(self.lines) else ""
        if not re.match(pattern, line):
            raise RuntimeError(f"memcore show: expected {what} at printed line {self.i + 1}, got {line.strip()!r}")
        self.i += 1
        return self.i - 1


def _function_lines(lines, name: str) -> int:
    """Index of the line after ``def name(...)``."""
    head = re.compile(rf"\s*def {re.escape(name)}\(")
    for i, line in enumerate(lines):
        if head.match(line):
            return i + 1
    raise RuntimeError(f"memcore show: function {name!r} not found in the printed module")


def _align(lines, start: int, func) -> dict:
    """``{id(binding): printed line index}`` for every binding of ``func`` (see the module
    docstring); raises RuntimeError when the text does not have the expected shape."""
    from ..ir.expr import DataflowBlock, If, TupleType

    cur = _Lines(lines, start)
    while cur.i < len(lines) and _PRELUDE.match(lines[cur.i]):
        cur.i += 1
    where: dict = {}

    def seq(s, branch_result: bool):
        for block in s.blocks:
            dataflow = isinstance(block, DataflowBlock)
            if dataflow:
                cur.expect(r"\s*with R\.dataflow\(\):$", "with R.dataflow():")
            for b in block.bindings:
                if isinstance(b.value, If):
                    where[id(b)] = cur.expect(r"\s*if ", "an if")
                    seq(b.value.true_branch, True)
                    cur.expect(r"\s*else:$", "else:")
                    seq(b.value.false_branch, True)
                    continue
                ty = b.var.ty
                if isinstance(ty, TupleType) and not ty.fields:  # void: printed bare unless used later
                    pattern = rf"\s*({re.escape(b.var.name)}(_\d+)?(: .*)? = |[\w.]+\()"
                else:
                    pattern = rf"\s*{re.escape(b.var.name)}(_\d+)?(: .*)? = "
                where[id(b)] = cur.expect(pattern, f"the binding of {b.var.name!r}")
            if dataflow:
                cur.expect(r"\s*R\.output\(", "R.output(...)")
        if branch_result:
            cur.expect(r"\s*\w+(: .*)? = ", "a branch result")
        else:
            cur.expect(r"\s*return ", "return")

    seq(func.body, False)
    return where


def _comment(tl, mode: str, step: int, alloc_index: dict, ends: dict, symbolic: set, binding) -> str:
    from ..ir.expr import Call
    from ..ir.op import Op
    from ..planning.peak_report import format_bytes

    parts = []
    i = alloc_index.get(id(binding))
    if i is not None:
        p = tl.placements[mode]
        parts.append(f"{mode} s{int(p.storage[i])}+{int(p.offset[i])}, {format_bytes(int(tl.size[i]))}, "
                     f"lifetime [{int(tl.start[i])}, {int(tl.end[i])}]")
    elif id(binding) in symbolic:
        parts.append("planned, symbolic size (not counted)")
    elif (isinstance(binding.value, Call) and isinstance(binding.value.op, Op)
          and binding.value.op.name == "relax.builtin.alloc_tensor"):
        parts.append("not planned")
    live = f"step {step}: live {format_bytes(int(tl.profile[step]))}"
    if tl.n_tensors and step == tl.peak_step:
        live += " PEAK"
    parts.append(live)
    if step in ends:
        parts.append("last use of " + ", ".join(ends[step]))
    return "  # " + "; ".join(parts)


def annotate(mod, mode: str = "arena", *, time_limit=ARENA_TIME_LIMIT) -> str:
    """``mod``'s text with every binding's storage, offset, lifetime and live bytes as
    trailing comments, and a header comment per function (see the module docstring).

    Parameters
    ----------
    mod : IRModule
        A module after ``CallTIRRewrite``.
    mode : {"tvm", "arena"}, default "arena"
    time_limit : float or None, default ARENA_TIME_LIMIT
        Arena mode's offset search budget per pool (None: heuristics only).

    Returns
    -------
    str

    Raises
    ------
    PassError
        When StaticPlanBlockMemory rejects the module.
    PlanningError
        An unknown mode.
    """
    from ..planning.peak_report import format_bytes, timelines

    tls = timelines(mod, modes=(mode,), time_limit=time_limit)
    lines = mod.script().rstrip("\n").split("\n")
    header = []
    for tl in tls:
        func = mod[tl.function]
        start = _function_lines(lines, tl.function)
        where = _align(lines, start, func)
        allocs = {id(b): b for b, _ in tl.binding_steps}
        steps = {id(b): s for b, s in tl.binding_steps}
        # a tensor's start step is its allocation binding's
        alloc_index = {id(tl.binding_steps[s][0]): i for i, s in enumerate(tl.start.tolist())}
        ends: dict = {}
        for i in sorted(range(tl.n_tensors), key=lambda k: -int(tl.size[k])):
            ends.setdefault(int(tl.end[i]), []).append(tl.names[i])
        symbolic = {id(b) for b in tl.symbolic_bindings}
        for key, idx in where.items():
            lines[idx] += _comment(tl, mode, steps[key], alloc_index, ends, symbolic, allocs[key])
        p = tl.placements[mode]
        over = "" if p.total_bytes is None or not tl.lower_bound else f" ({p.total_bytes / tl.lower_bound - 1:+.1%})"
        header.append(
            f"# {tl.function}: {mode} {format_bytes(p.total_bytes)} in {len(p.storage_bytes)} storage(s){over}, "
            f"lower bound {format_bytes(tl.lower_bound)}; {tl.n_tensors} planned tensors"
            + (f" (+{tl.n_symbolic} symbolic)" if tl.n_symbolic else "")
            + (f"; peak {format_bytes(tl.peak_bytes)} at step {tl.peak_step}" if tl.n_tensors else "")
        )
    return "\n".join(header + lines) + "\n"


def run(args, out=None) -> int:
    """Run ``memcore show`` with parsed ``args``; returns the exit status."""
    from ..errors import MemcoreError

    out = out or sys.stdout
    try:
        mod = parse_text(read_text(args.file), args.file)
        text = annotate(mod, args.mode, time_limit=None if args.no_search else ARENA_TIME_LIMIT)
    except InputError as exc:
        return fail("show", str(exc), 1)
    except MemcoreError as exc:
        from ._common import error_text

        return fail("show", f"{args.file}: {error_text(exc)}", 1)
    out.write(text)
    return 0
