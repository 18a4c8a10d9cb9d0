"""Plan memory and print a per-function report.

The kind of ``FILE`` is decided by its name (:func:`memcore_py.cli.plan_inputs.input_kind`):
``*.json`` / ``*.json.gz`` is a graph-executor graph, planned with Relay's GraphPlanMemory
and in arena mode (:mod:`memcore_py.cli.plan_graph`; ``--write-plan``); ``*.csv`` is a flat
MiniMalloc problem packed by :func:`memcore.plan_offsets` (:mod:`memcore_py.cli.plan_flat`);
``*.pt2`` (``torch.export.save``) and ``pkg.module:function`` (a callable returning
``(nn.Module, example_inputs)``, exported with ``torch.export.export``; ``--dynamic
NAME=INPUT:DIM[:MIN[:MAX]]`` makes dimensions symbolic) are imported with
:func:`~memcore_py.frontend.exported_program.from_exported_program` after
``run_decompositions()`` and planned like the high-level text below, the table followed by
the time of each stage (torch's load or export and decompositions, memcore's import and
lowering); ``*.onnx`` is imported with :func:`~memcore_py.frontend.onnx_model.from_onnx`
and planned the same way.
With ``--executorch``, a ``.pt2`` or ``module:function`` program is lowered by ExecuTorch
instead, with its greedy planner and with memcore's (:mod:`memcore_py.cli.plan_executorch`).

``memcore plan [FILE]`` parses a TVMScript module (``FILE``; ``-`` = stdin, ``*.gz``
decompressed) or, with no ``FILE``, every real model shipped in
:mod:`memcore_py.examples.models`, runs the memory pipeline and prints one row per Relax
function: bindings, allocations, planned tensors, storages, TVM-mode bytes, arena bytes, the
max-live lower bound, the excess over it, Apache TVM's own bytes (recorded for the shipped
models) and the planning times: steady state, the fastest of :data:`TIMING_RUNS` runs of each
mode (the first, cold call costs several times more), as the column headers say.

A byte total that depends on an unbounded shape variable is printed as an expression in
bytes (``3072*n + 1536``); ``--bind n=512`` (repeatable, or ``n=512,m=4``) evaluates every
figure at the given values (the lower bound too). ``--bound n=1:128`` (repeatable, or
``n=1:128,m=:4``; ``MIN`` omitted is 0) instead bounds the dimension before planning, so
that storages are sized for its upper bound and the figures are numbers: an ONNX
``dim_param``, a torch program's symbol (or ``--dynamic`` name), a TVMScript shape variable
(set on every Relax function whose signature has it). A bound is intersected with the range
the input already records (a ``torch.export`` range, the text's ``tir_var_upper_bound``): it
narrows and never widens (:mod:`memcore_py.cli.plan_inputs`).

A module with high-level op calls (TVM's torch importer output) is first lowered for planning
(``LowerForPlanning, ToNonDataflow, RemovePurityChecking, CallTIRRewrite``) without TVM; with
``--fused``, ``LowerForPlanning(fuse=True)`` groups the kernels as TVM's FuseOps/FuseTIR do.
``--top N`` adds the tensors live at each function's peak (per mode; in the JSON as
``peak``), ``--plot OUT.png`` draws the memory timelines
(:mod:`memcore_py.planning.plot`, extra ``plot``).

The pipeline is ``--passes`` (kebab-case pass names, default
``static-plan-block-memory,lower-alloc-tensor,kill-after-last-use``); it must contain
``static-plan-block-memory``, which runs in ``--mode`` (``arena`` by default). The table is
measured on the module entering that pass, where both modes are run (see
:func:`plan_and_report`; the table itself is :mod:`memcore_py.cli.report`).

Exit status: 0 success, 1 bad input (unreadable file, parse error, a pass rejecting the
module), 2 usage error.
"""
from __future__ import annotations

import json
import sys
import time

from ..planning.allocate import MODES
from ..planning.arena_options import ARENA_TIME_LIMIT
from ._common import DEFAULT_PASSES, SPBM, InputError, UsageError, fail, parse_text, read_text
from .plan_inputs import attr_ints, option_items, shape_size

#: Runs of each mode per module; the report's times are the fastest (steady state).
TIMING_RUNS = 5

__all__ = ["add_arguments", "run", "main", "plan_and_report", "parse_bind", "DEFAULT_PASSES", "TIMING_RUNS"]


def add_arguments(parser) -> None:
    """Add ``plan``'s arguments to an :class:`argparse.ArgumentParser`."""
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="what to plan: a TVMScript module ('-' = stdin), a torch.export .pt2 file, an .onnx file, "
                             "module:function returning (nn.Module, example_inputs), a graph-executor .json, "
                             "a MiniMalloc .csv problem (default: the shipped real models)")
    parser.add_argument("--mode", choices=MODES, default="arena",
                        help="StaticPlanBlockMemory mode for the pipeline's output (default: arena)")
    parser.add_argument("--passes", default=",".join(DEFAULT_PASSES), metavar="A,B,C",
                        help=f"comma-separated kebab-case passes (default: {','.join(DEFAULT_PASSES)})")
    parser.add_argument("--time-limit", type=_positive_float, default=ARENA_TIME_LIMIT, metavar="SECONDS",
                        help="arena mode: time per pool for the offset search beyond the heuristics, "
                             f"spent only above the lower bound (default: {ARENA_TIME_LIMIT})")
    parser.add_argument("--no-search", dest="time_limit", action="store_const", const=None,
                        help="arena mode: best heuristic only (deterministic, no time budget)")
    parser.add_argument("--bind", action="append", default=[], metavar="VAR=INT[,VAR=INT]",
                        help="evaluate symbolic byte figures at these shape-variable values "
                             "(repeatable; e.g. --bind n=512 --bind m=4, or --bind n=512,m=4; a --dynamic NAME "
                             "too)")
    parser.add_argument("--bound", action="append", default=[], metavar="NAME=[MIN]:MAX",
                        help="bound the symbolic dimension NAME to [MIN, MAX] (MIN omitted: 0) before planning, "
                             "so storages are sized for MAX: an .onnx dim_param, a .pt2 / module:function symbol "
                             "(or --dynamic NAME), a TVMScript shape variable (set on every function having it); "
                             "narrows a range the file records, never widens it (repeatable; e.g. --bound "
                             "seq=1:128)")
    parser.add_argument("--dynamic", action="append", default=[], metavar="NAME=INPUT:DIM[:MIN[:MAX]]",
                        help="module:function input: export dimension DIM of example input INPUT (position or "
                             "forward() argument name) as the symbol NAME, optionally bounded (repeatable; "
                             "e.g. --dynamic seq=0:1:2:512)")
    parser.add_argument("--fused", action="store_true",
                        help="lower high-level modules (.pt2, .onnx, module:function, importer text) as TVM's "
                             "fused pipeline does (FuseOps + FuseTIR grouping) instead of one kernel per op")
    parser.add_argument("--print-ir", action="store_true",
                        help="print the module after the pipeline (TVMScript) instead of the table")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--top", type=_positive_int, default=None, metavar="N",
                        help="also list the N largest tensors live at each function's peak, per mode")
    parser.add_argument("--plot", metavar="OUT.png", default=None,
                        help="draw each function's memory timeline, TVM and arena mode side by side "
                             "(.png, .svg or .pdf; needs the 'plot' extra; several models: OUT-<model>.png)")
    parser.add_argument("--executorch", action="store_true",
                        help="FILE (.pt2 or module:function): lower with ExecuTorch, greedy and memcore; print per "
                             "method and mem_id both arenas and the lower bound (extra executorch)")
    parser.add_argument("--write-pte", metavar="OUT.pte", default=None,
                        help="with --executorch: write memcore's ExecuTorch program to OUT.pte")
    parser.add_argument("--write-plan", metavar="OUT.json", default=None,
                        help="graph-executor JSON input (*.json[.gz]): write the graph with memcore's "
                             "storage_id (and arena offsets with --mode arena) to OUT.json")


def _positive_float(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds; got {text!r}")
    return value


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer; got {text!r}")
    return value


def _plot_path(path: str, label: str, several: bool) -> str:
    """``OUT.png`` for one input; ``OUT-<label>.png`` when several are planned."""
    if not several:
        return path
    import os

    stem, ext = os.path.splitext(path)
    return f"{stem}-{os.path.basename(label)}{ext}"


def parse_bind(items) -> dict:
    """Shape-variable values from ``--bind`` arguments: each ``NAME=INT`` or a comma-separated
    list of them; ``INT >= 0``.

    Raises
    ------
    UsageError
        A malformed item, a negative or non-integer value, or a name given twice with
        different values.
    """
    out: dict = {}
    for part in option_items(items):
        name, eq, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or not name.isidentifier():
            raise UsageError(f"--bind: expected NAME=INT (e.g. n=512); got {part!r}")
        number = shape_size(value, f"--bind: the value of {name!r}")
        if out.get(name, number) != number:
            raise UsageError(f"--bind: {name!r} given twice with different values ({out[name]} and {number})")
        out[name] = number
    return out


def _check_bind_names(bind: dict, modules) -> None:
    """Every ``--bind`` name must be a shape variable of some function of ``modules``."""
    if not bind:
        return
    from ..analysis.arith import signature_vars
    from ..ir.expr import Function

    known: set = set()
    for mod in modules:
        for func in mod.functions.values():
            if isinstance(func, Function):
                known.update(signature_vars(func))
    unknown = sorted(set(bind) - known)
    if unknown:
        have = ", ".join(sorted(known)) or "none"
        raise UsageError(f"--bind: {', '.join(map(repr, unknown))} is not a shape variable of the planned "
                         f"functions (they have: {have})")


def _planned_bounds(bounds: dict, symbols: dict, modules) -> dict:
    """The ranges each ``--bound`` dimension is planned for: name (torch's symbol for a
    ``--dynamic`` name) -> ``{function: (min, max)}`` as the functions'
    ``tir_var_lower_bound`` / ``tir_var_upper_bound`` attributes hold them (the given range
    intersected with each function's own)."""
    from ..analysis.arith import ATTR_TIR_VAR_LOWER_BOUND, ATTR_TIR_VAR_UPPER_BOUND
    from ..ir.expr import Function

    out: dict = {}
    for mod in modules:
        for gv, func in mod.functions.items():
            if not isinstance(func, Function):
                continue
            lower = attr_ints(func.attrs.get(ATTR_TIR_VAR_LOWER_BOUND))
            upper = attr_ints(func.attrs.get(ATTR_TIR_VAR_UPPER_BOUND))
            for name in bounds:
                key = symbols.get(name, name)
                if key in upper:
                    out.setdefault(key, {})[gv.name] = (lower.get(key, 0), upper[key])
    return out


def _covering(ranges: dict) -> tuple:
    """``(min, max)`` covering every function's range of one dimension."""
    return min(lo for lo, _ in ranges.values()), max(hi for _, hi in ranges.values())


def _bounds_line(planned: dict) -> str:
    """``dim bounds: seq in [1, 128]``, with the per-function ranges when they differ."""
    parts = []
    for name, ranges in planned.items():
        lo, hi = _covering(ranges)
        text = f"{name} in [{lo}, {hi}]"
        if len(set(ranges.values())) > 1:
            text += " (" + ", ".join(f"{f} [{a}, {b}]" for f, (a, b) in ranges.items()) + ")"
        parts.append(text)
    return "dim bounds: " + ", ".join(parts)


def _rename_bind(bind: dict, symbols: dict) -> dict:
    """``--bind`` with each ``--dynamic`` name replaced by torch's symbol for it (``batch=8``
    -> ``s77=8``); a value given under both names must agree."""
    out: dict = {}
    for name, value in bind.items():
        key = symbols.get(name, name)
        if out.get(key, value) != value:
            raise UsageError(f"--bind: {name!r} is {key!r}, given twice with different values ({out[key]} and {value})")
        out[key] = value
    return out


def _build_passes(spec: str, mode: str, time_limit=None):
    """``(before, spbm, after)`` pass lists from a ``a,b,c`` spec."""
    from ..errors import PassError
    from ..transform import get_pass

    names = [n.strip() for n in spec.split(",") if n.strip()]
    passes = []
    for n in names:
        try:
            passes.append(get_pass(n, mode=mode, time_limit=time_limit) if n == SPBM else get_pass(n))
        except PassError as exc:
            raise UsageError(f"--passes: {exc}") from None
    if names.count(SPBM) != 1:
        raise UsageError(f"--passes must include {SPBM!r} once (the pass the report measures); got {names}")
    i = names.index(SPBM)
    return passes[:i], passes[i], passes[i + 1:]


def _inputs(path: str | None, dynamic=None, symbols: dict | None = None, bounds: dict | None = None):
    """``[(label, source, reference, stages)]``: one file, or the shipped models; ``source`` is
    TVMScript text or, for ``.pt2`` / ``.onnx`` / ``module:function`` inputs, the imported module (then
    ``stages`` holds the import's stage times, :data:`~.plan_inputs.STAGES`, and ``symbols``
    gets each ``--dynamic`` name's shape variable); ``bounds`` (``--bound``) go to the
    importer, a TVMScript input's are applied by :func:`_plan_one`."""
    from .plan_inputs import input_kind

    if input_kind(path) in ("pt2", "onnx", "callable"):
        from ..errors import MemcoreError
        from .plan_inputs import import_model

        stages: dict = {}
        try:
            mod = import_model(path, dynamic=dynamic, timings=stages, symbols=symbols, bounds=bounds)
        except MemcoreError as exc:
            raise InputError(str(exc)) from exc
        return [(path, mod, None, stages)]
    if path is not None:
        return [(path, read_text(path), None, {})]
    from ..examples.models import list_models, model_text, tvm_oracle

    out = []
    for name in list_models():
        ref = {f: info["total_bytes"] for f, info in tvm_oracle(name)["functions"].items()}
        out.append((name, model_text(name), ref, {}))
    if not out:
        raise InputError("no FILE given and no shipped models found in memcore_py/examples/models")
    return out


def plan_and_report(mod, name: str = "module", reference: dict | None = None, time_limit=ARENA_TIME_LIMIT,
                    runs: int = TIMING_RUNS, bind: dict | None = None):
    """Plan ``mod`` with StaticPlanBlockMemory in both modes, timing each (the fastest of
    ``runs`` runs), and report per function (:func:`memcore_py.planning.report.build_report`).

    Parameters
    ----------
    mod : IRModule
        A module after ``CallTIRRewrite`` (``R.builtin.alloc_tensor`` outputs).
    name : str
        A label for the report (file or model name).
    reference : dict, optional
        Function name -> bytes of Apache TVM's own plan, copied into the report.
    time_limit : float or None, default ARENA_TIME_LIMIT (0.1)
        Arena mode: seconds for :func:`memcore.plan_offsets`'s anytime search.
    runs : int, default TIMING_RUNS (5)
        Runs of each mode; the reported time is the fastest (steady state: the first call
        pays for cold caches).
    bind : dict, optional
        Shape variable name -> int at which symbolic figures are evaluated.

    Returns
    -------
    PlanReport
        Its ``tvm_module`` / ``arena_module`` are the two planned modules.

    Raises
    ------
    PassError
        If StaticPlanBlockMemory rejects the module.
    """
    from ..transform.static_plan_block_memory import plan_block_memory
    from ..planning.report import build_report

    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an int >= 1; got {runs!r}")
    best = {"tvm": float("inf"), "arena": float("inf")}
    planned = {}
    for _ in range(runs):
        for mode in ("tvm", "arena"):  # interleaved, so that both see the same load
            t0 = time.perf_counter()
            if mode == "tvm":
                result = plan_block_memory(mod, "tvm", lower_bound=True)
            else:
                result = plan_block_memory(mod, "arena", time_limit=time_limit)
            best[mode] = min(best[mode], time.perf_counter() - t0)
            planned.setdefault(mode, result)
    return build_report(mod, planned["tvm"], planned["arena"], name=name, tvm_seconds=best["tvm"],
                        arena_seconds=best["arena"], reference=reference, runs=runs, bind=bind)


def _plan_one(label: str, source, reference, before, after, mode: str, time_limit=None, bind=None, stages=None,
              fused: bool = False, bounds=None):
    """Plan one input (``source``: TVMScript text or a module); ``stages`` gets the lowering
    time when the module is lowered for planning first (with TVM's FuseOps grouping when
    ``fused``); ``bounds`` (``--bound``) are set on a parsed text's functions."""
    from ..errors import MemcoreError
    from ..transform import Sequential

    if isinstance(source, str):
        from .plan_inputs import apply_bounds

        mod = apply_bounds(parse_text(source, label), bounds, label)
    else:
        mod = source
    try:
        from ..transform.lower_for_planning import has_high_level_calls

        if has_high_level_calls(mod):  # TVM importer output: lower for planning first
            from ..transform import CallTIRRewrite, LowerForPlanning, RemovePurityChecking, ToNonDataflow

            t0 = time.perf_counter()
            mod = Sequential([LowerForPlanning(fuse=fused), ToNonDataflow(), RemovePurityChecking(),
                              CallTIRRewrite()])(mod)
            if stages is not None:
                stages["lowering"] = time.perf_counter() - t0
        if before:
            mod = Sequential(before)(mod)
        report = plan_and_report(mod, name=label, reference=reference, time_limit=time_limit, bind=bind)
        planned = report.arena_module if mode == "arena" else report.tvm_module
        if after:
            planned = Sequential(after)(planned)
    except MemcoreError as exc:
        raise InputError(f"{label}: {exc}") from exc
    return report, planned, mod


def _views(args, results, out, doc=None) -> None:
    """``--top`` and ``--plot``: the peak report and the timeline plot of each input, from
    the two plans the table was built from (no second planning)."""
    from ..errors import MemcoreError
    from ..planning.peak_report import format_report, report as peak_report, timelines
    from ..planning.plot import plot_plan

    for k, (rep, _planned, mod) in enumerate(results):
        try:
            tls = timelines(list(rep.planned)) if rep.planned else timelines(mod, time_limit=args.time_limit)
            if args.top:
                peak = peak_report(tls, top=args.top)
                if doc is not None:
                    doc["modules"][k]["peak"] = peak.to_dict()
                else:
                    if len(results) > 1:
                        out.write(f"# {rep.name}\n")
                    out.write(format_report(peak).rstrip("\n") + "\n")
            if args.plot:
                plot_plan(tls, out=_plot_path(args.plot, rep.name, len(results) > 1))
        except MemcoreError as exc:
            raise InputError(f"{rep.name}: {exc}") from exc


def run(args, out=None) -> int:
    """Run ``memcore plan`` with parsed ``args``; returns the exit status.

    Errors are printed to stderr as ``memcore plan: error: ...`` (no traceback).
    """
    out = out or sys.stdout
    from .plan_inputs import input_kind, parse_bound, parse_dynamic
    from .progress import Progress

    plot = getattr(args, "plot", None)
    if plot and not plot.lower().endswith((".png", ".svg", ".pdf")):
        return fail("plan", f"--plot: {plot!r} must end in .png, .svg or .pdf", 2)
    kind = input_kind(args.file)
    if getattr(args, "bound", None):
        if getattr(args, "executorch", False):
            return fail("plan", "--bound does not apply with --executorch (ExecuTorch plans for the export's own "
                                "ranges: export with a bounded Dim, e.g. --dynamic NAME=INPUT:DIM:MIN:MAX)", 2)
        if kind in ("graph-json", "csv"):
            return fail("plan", f"--bound applies to models with symbolic dimensions (TVMScript, .onnx, .pt2, "
                                f"module:function); a {'graph-executor JSON' if kind == 'graph-json' else 'CSV'} "
                                "file has none", 2)
        if args.file is None:
            return fail("plan", "--bound needs a FILE (a model with symbolic dimensions)", 2)
    if getattr(args, "executorch", False):
        from .plan_executorch import run_executorch

        return run_executorch(args, out)
    if getattr(args, "write_pte", None):
        return fail("plan", "--write-pte needs --executorch", 2)
    if getattr(args, "dynamic", None) and kind != "callable":
        return fail("plan", "--dynamic applies to module:function inputs (an importable callable returning "
                            "(nn.Module, example_inputs))", 2)
    if kind == "graph-json":
        from .plan_graph import run_graph

        return run_graph(args, out)
    if kind == "csv":
        from .plan_flat import run_flat

        return run_flat(args, out)
    if getattr(args, "write_plan", None):
        return fail("plan", "--write-plan needs a graph-executor JSON input (FILE ending in .json or .json.gz)", 2)
    try:
        before, spbm, after = _build_passes(args.passes, args.mode, args.time_limit)
        bind = parse_bind(getattr(args, "bind", None) or [])
        dynamic = parse_dynamic(getattr(args, "dynamic", None) or [])
        bounds = parse_bound(getattr(args, "bound", None) or [])
        symbols: dict = {}
        inputs = _inputs(args.file, dynamic, symbols, bounds)
        bind = _rename_bind(bind, symbols)
        results = []
        with Progress(len(inputs), "planning") as bar:  # on a terminal's stderr, after 1 s
            for label, source, ref, stages in inputs:
                bar.start(label)
                results.append(_plan_one(label, source, ref, before, after, args.mode, args.time_limit, bind, stages,
                                         fused=args.fused, bounds=bounds))
                bar.advance()
        stages = [st for *_, st in inputs]
        planned_bounds = _planned_bounds(bounds, symbols, [mod for _, _, mod in results]) if bounds else {}
        _check_bind_names(bind, [report.tvm_module for report, _, _ in results])
    except UsageError as exc:
        return fail("plan", str(exc), 2)
    except InputError as exc:
        return fail("plan", str(exc), 1)
    names = [p.name for p in (*before, spbm, *after)]
    top, plot = getattr(args, "top", None), getattr(args, "plot", None)
    try:
        if args.json:
            doc = {"mode": args.mode, "time_limit": args.time_limit, "passes": names, "bind": bind,
                   "timing": f"best of {TIMING_RUNS} runs per mode (steady state)", "modules": []}
            if planned_bounds:
                doc["bounds"] = {k: list(_covering(v)) for k, v in planned_bounds.items()}
            for (report, planned, _), st in zip(results, stages):
                entry = report.to_dict()
                if st:
                    entry["stages"] = st
                if symbols:
                    entry["symbols"] = symbols
                if args.print_ir:
                    entry["ir"] = planned.script()
                doc["modules"].append(entry)
            if top or plot:
                _views(args, results, out, doc)
            out.write(json.dumps(doc, indent=2) + "\n")
        elif args.print_ir:
            for report, planned, _ in results:
                if len(results) > 1:
                    out.write(f"# {report.name}\n")
                out.write(planned.script().rstrip("\n") + "\n")
            if plot:
                _views(args, results, out)
        else:
            from .report import write_table

            write_table([r for r, _, _ in results], out)  # rich on a terminal when installed
            out.write(f"mode: {args.mode}; passes: {','.join(names)}; times: best of {TIMING_RUNS} runs per mode "
                      "(steady state)\n")
            if bind:
                out.write("bound: " + ", ".join(f"{k}={v}" for k, v in bind.items()) + "\n")
            if planned_bounds:
                out.write(_bounds_line(planned_bounds) + "\n")
            if len(stages) == 1 and stages[0]:
                out.write("stages: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in stages[0].items()) + "\n")
            if symbols:
                out.write("symbols: " + ", ".join(f"{k} = {v}" for k, v in symbols.items()) + "\n")
            if top or plot:
                _views(args, results, out)
    except InputError as exc:
        return fail("plan", str(exc), 1)
    return 0


def main(argv=None) -> int:
    """Stand-alone entry (``python -m memcore_py.cli.plan``); the ``memcore`` command
    registers :func:`add_arguments` / :func:`run` as its ``plan`` subcommand."""
    import argparse

    parser = argparse.ArgumentParser(prog="memcore plan", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
