"""Parse a TVMScript module, check that it is well-formed, and print what it contains.

``memcore check [FILE]`` reads ``FILE`` (``-`` = stdin, ``*.gz`` decompressed) or, with no
``FILE``, the shipped example module (:data:`memcore_py.examples.DEFAULT_EXAMPLE`). It prints
counts: functions (Relax functions, PrimFuncs), bindings (If branches included), blocks
(dataflow blocks). A parse error is one line on stderr; well-formedness problems are listed
on stdout, one per line, followed by one error line on stderr; the exit status is 1.
"""
from __future__ import annotations

import sys

from ._common import InputError, fail, parse_text, read_text

__all__ = ["add_arguments", "run", "module_counts"]


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="TVMScript module ('-' = stdin; default: the shipped example module)")


def module_counts(mod) -> dict:
    """``{"functions", "relax_functions", "prim_funcs", "bindings", "blocks",
    "dataflow_blocks"}`` of ``mod`` (bindings and blocks of If branches included)."""
    from ..ir.expr import DataflowBlock, Function, If, PrimFunc

    counts = dict(functions=len(mod.functions), relax_functions=0, prim_funcs=0, bindings=0, blocks=0,
                  dataflow_blocks=0)
    for func in mod.functions.values():
        if isinstance(func, PrimFunc):
            counts["prim_funcs"] += 1
            continue
        if not isinstance(func, Function):
            continue
        counts["relax_functions"] += 1
        stack = [func.body]
        while stack:
            seq = stack.pop()
            for block in seq.blocks:
                counts["blocks"] += 1
                counts["dataflow_blocks"] += isinstance(block, DataflowBlock)
                counts["bindings"] += len(block.bindings)
                for b in block.bindings:
                    if isinstance(b.value, If):
                        stack.append(b.value.true_branch)
                        stack.append(b.value.false_branch)
    return counts


def run(args, out=None) -> int:
    out = out or sys.stdout
    from ..ir.well_formed import well_formed_report

    try:
        if args.file is None:
            from ..examples import DEFAULT_EXAMPLE, example_path, example_text

            label, text = example_path(DEFAULT_EXAMPLE), example_text(DEFAULT_EXAMPLE)
        else:
            label, text = args.file, read_text(args.file)
        mod = parse_text(text, label)
    except InputError as exc:
        return fail("check", str(exc))
    problems = well_formed_report(mod)
    if problems:
        out.write("".join(f"{label}: {p}\n" for p in problems))
        return fail("check", f"{label}: {len(problems)} well-formedness problem(s); the first: {problems[0]}")
    c = module_counts(mod)
    out.write(
        f"{label}: well-formed\n"
        f"functions: {c['functions']} ({c['relax_functions']} Relax, {c['prim_funcs']} PrimFunc)\n"
        f"bindings: {c['bindings']}\n"
        f"blocks: {c['blocks']} ({c['dataflow_blocks']} dataflow)\n"
    )
    return 0
