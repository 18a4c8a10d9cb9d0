"""``memcore plan FILE --executorch``: lower a torch program with ExecuTorch's greedy planner
and with memcore's, and print per method and mem_id greedy's bytes, memcore's and the lower
bound.

``FILE`` is a ``torch.export.save`` archive (``.pt2``) or ``pkg.module:function`` (returning
``(nn.Module, example_inputs)``); the program is lowered with ``to_edge`` and twice with
``to_executorch`` (:func:`memcore_py.executorch.compare.compare_with_greedy`). ``--no-search``
plans with memcore's best heuristic only; otherwise ``--time-limit`` seconds of search per
arena, spent only above the lower bound. ``--write-pte OUT.pte`` saves memcore's program.
``--json`` prints the ``executorch_report`` form of ``memcore plan``'s schema
(``memcore_py/cli/plan_schema.json``).

Needs the ``executorch`` extra (an error naming it otherwise).
"""
from __future__ import annotations

import json

from ._common import InputError, UsageError, fail

__all__ = ["run_executorch", "SCHEMA_ID"]

SCHEMA_ID = "urn:memcore:schema:plan-report:1"


def _program(path, dynamic):
    from .plan_inputs import export_callable, input_kind, load_exported_program

    kind = input_kind(path)
    if kind == "pt2":
        return load_exported_program(path)
    if kind == "callable":
        return export_callable(path, dynamic=dynamic)
    raise UsageError("--executorch plans a torch program: FILE must be a .pt2 archive or module:function")


def _check_executorch():
    try:
        import executorch.exir  # noqa: F401
    except ImportError:
        raise InputError("--executorch needs ExecuTorch: python -m pip install -e \".[executorch]\" "
                         "(torch first)") from None


def _table(comparison, out):
    header = ("method", "mem_id", "greedy bytes", "memcore bytes", "lower bound", "memcore / greedy")
    rows = []
    for r in comparison.rows:
        ratio = f"{r.memcore_bytes / r.greedy_bytes:.3f}" if r.greedy_bytes else "-"
        bound = "-" if r.lower_bound is None else f"{r.lower_bound:,}"
        rows.append((r.method, str(r.mem_id), f"{r.greedy_bytes:,}", f"{r.memcore_bytes:,}", bound, ratio))
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    for row in (header, *rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        out.write("  ".join(cells).rstrip() + "\n")


def run_executorch(args, out) -> int:
    """Run ``memcore plan FILE --executorch``; returns the exit status."""
    from ..errors import MemcoreError
    from .plan_inputs import parse_dynamic

    if args.file is None:
        return fail("plan", "--executorch needs FILE (a .pt2 archive or module:function)", 2)
    try:
        _check_executorch()
        program = _program(args.file, parse_dynamic(getattr(args, "dynamic", None) or []))
        from ..executorch.compare import compare_with_greedy

        comparison = compare_with_greedy(program, time_limit=args.time_limit)
    except UsageError as exc:
        return fail("plan", str(exc), 2)
    except InputError as exc:
        return fail("plan", str(exc), 1)
    except MemcoreError:
        raise
    pte = getattr(args, "write_pte", None)
    if pte:
        with open(pte, "wb") as f:
            f.write(comparison.memcore_program.buffer)
    if args.json:
        doc = {"schema": SCHEMA_ID, "time_limit": args.time_limit,
               "programs": [{"name": args.file, "methods": _methods(comparison), "stages": comparison.seconds}]}
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        _table(comparison, out)
        out.write(f"time limit: {args.time_limit} s per arena; stages: "
                  + ", ".join(f"{k} {v:.2f} s" for k, v in comparison.seconds.items()) + "\n")
    return 0


def _methods(comparison):
    methods: dict = {}
    for row in comparison.rows:
        entry = row.to_dict()
        methods.setdefault(entry.pop("method"), []).append(entry)
    return [{"name": name, "mem_ids": rows} for name, rows in methods.items()]
