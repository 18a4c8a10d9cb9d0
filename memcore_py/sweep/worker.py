"""Planning a batch of variants in one process: :class:`Worker`.

Design
------
A :class:`Worker` owns the models it has read: each :class:`~.variant.ModelSource` is parsed or
imported once, and lowered for planning once per ``fuse`` option (``LowerForPlanning``,
``ToNonDataflow``, ``RemovePurityChecking``, ``CallTIRRewrite``, as ``memcore plan`` does), then
reused by every variant of that model the worker plans. A model is planned by
:func:`~memcore_py.transform.static_plan_block_memory.plan_block_memory` in the modes a variant
asks for, once per (model, options): variants that differ only in ``bind`` share the plans, and
each variant's figures are those plans' totals summed over the module's Relax functions by the
report ``memcore plan`` prints (:func:`memcore_py.planning.report.build_report`, symbolic totals
evaluated at the variant's ``bind``). Whatever fails for one variant (an unreadable model, a dimension name the
module does not have, a pass rejecting the module) is that variant's ``error``; the batch
goes on. Only plain data crosses the worker's boundary (:func:`plan_batch`).
"""
from __future__ import annotations

import time

from ..errors import MemcoreError
from .variant import ModelSource, SweepResult

__all__ = ["Worker", "plan_batch"]


class Worker:
    """Plans variants, reading each model once (module docstring)."""

    def __init__(self):
        self._modules: dict = {}
        """(model digest, fuse) -> the module lowered for planning, or the error reading it."""
        self._plans: dict = {}
        """(model digest, fuse, mode, time_limit) -> the plans of that module (its variants
        differ only in ``bind``, at which the plans' figures are evaluated)."""

    def lowered(self, source: ModelSource, fuse: bool):
        """The module of ``source`` ready for StaticPlanBlockMemory (memoized).

        Raises
        ------
        MemcoreError
            What reading, importing or lowering the model raised (remembered: a bad model
            fails every variant of it the same way without being read again).
        """
        key = (source.digest, fuse)
        found = self._modules.get(key)
        if found is None:
            try:
                found = _lowered(_read(source), fuse)
            except MemcoreError as exc:
                found = exc
            self._modules[key] = found
        if isinstance(found, MemcoreError):
            raise found
        return found

    def plan(self, index: int, source: ModelSource, options: dict) -> SweepResult:
        """Plan one variant (``options``: :meth:`~.variant.Variant.options`)."""
        common = {"index": index, "model": source.label, "bind": options["bind"], "mode": options["mode"],
                  "fuse": options["fuse"]}
        t0 = time.perf_counter()
        if source.kind in FLAT_KINDS:
            return self._plan_flat(source, options, common)
        try:
            mod = self.lowered(source, options["fuse"])
            _check_bind(mod, options["bind"])
            t0 = time.perf_counter()  # the time of the plan, without reading the model
            key = (source.digest, options["fuse"], options["mode"], options["time_limit"])
            plans = self._plans.get(key)
            if plans is None:
                plans = self._plans[key] = _plans(mod, options)
            figures = _figures(plans, options["bind"])
        except MemcoreError as exc:
            return SweepResult(**common, seconds=time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - a bug in memcore fails its variant, not the sweep
            return SweepResult(
                **common,
                seconds=time.perf_counter() - t0,
                error=f"internal error: {type(exc).__name__}: {exc} (a bug in memcore; please report it)",
            )
        return SweepResult(**common, **figures, seconds=time.perf_counter() - t0)


    def _plan_flat(self, source: ModelSource, options: dict, common: dict) -> SweepResult:
        """A graph-executor JSON (Relay's GraphPlanMemory: ``tvm_bytes`` is Relay's plan) or a
        MiniMalloc CSV problem (:func:`memcore.plan_offsets`; no TVM mode): planned per variant
        (each takes milliseconds), the file read once per worker."""
        t0 = time.perf_counter()
        try:
            if options["bind"]:
                from ..errors import PlanningError

                raise PlanningError(f"bind names {', '.join(options['bind'])}, but a "
                                    f"{'graph-executor JSON' if source.kind == 'graph-json' else 'flat CSV problem'} "
                                    "has no symbolic dimensions")
            problem = self._modules.get((source.digest, None))
            if problem is None:
                problem = self._modules[(source.digest, None)] = _read_flat(source)
            t0 = time.perf_counter()
            figures = _flat_figures(source.kind, problem, options)
        except MemcoreError as exc:
            return SweepResult(**common, seconds=time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}")
        except OSError as exc:
            return SweepResult(**common, seconds=time.perf_counter() - t0,
                               error=f"OSError: cannot read {source.path}: {exc.strerror or exc}")
        return SweepResult(**common, **figures, seconds=time.perf_counter() - t0)


#: Model kinds planned without a Relax module (:meth:`Worker._plan_flat`).
FLAT_KINDS = ("graph-json", "csv")


def _read_flat(source: ModelSource):
    if source.kind == "graph-json":
        from ..frontend import read_graph_json

        return read_graph_json(source.path)
    import memcore

    return memcore.read_minimalloc_csv(source.path)


def _flat_figures(kind: str, problem, options: dict) -> dict:
    mode = options["mode"]
    if kind == "graph-json":
        from ..planning import graph_plan_memory

        out = {}
        if mode != "arena":
            relay = graph_plan_memory(problem, mode="relay")
            out.update(tvm_bytes=int(relay.relay_bytes), lower_bound=int(relay.lower_bound))
        if mode != "tvm":
            arena = graph_plan_memory(problem, mode="arena", time_limit=options["time_limit"])
            out.update(arena_bytes=int(sum(arena.arena_bytes)), lower_bound=int(arena.lower_bound))
        return out
    import memcore

    if mode == "tvm":
        from ..errors import PlanningError

        raise PlanningError("a flat CSV problem has no TVM mode: sweep it with mode='arena'")
    plan = memcore.plan_offsets(problem.start, problem.end, problem.size, time_limit=options["time_limit"])
    return {"lower_bound": int(plan.lower_bound), "arena_bytes": int(plan.arena_bytes)}


def _read(source: ModelSource):
    """The memcore module of a model source."""
    if source.kind == "text":
        from ..ir.text.parser import parse

        return parse(source.text)
    from ..frontend.files import import_onnx_file, import_pt2

    return (import_pt2 if source.kind == "pt2" else import_onnx_file)(source.path)


def _lowered(mod, fuse: bool):
    from ..transform import CallTIRRewrite, LowerForPlanning, RemovePurityChecking, Sequential, ToNonDataflow
    from ..transform.lower_for_planning import has_high_level_calls

    if has_high_level_calls(mod):
        mod = Sequential([LowerForPlanning(fuse=fuse), ToNonDataflow(), RemovePurityChecking(), CallTIRRewrite()])(mod)
    return mod


def _symbols(mod) -> set:
    """The names of the symbolic dimensions of ``mod``'s Relax functions' signatures (what
    ``memcore plan --bind`` takes)."""
    from ..analysis.arith import signature_vars
    from ..ir import Function

    names: set = set()
    for func in mod.functions.values():
        if isinstance(func, Function):
            names.update(signature_vars(func))
    return names


def _check_bind(mod, bind: dict) -> None:
    """Every name of ``bind`` must be a symbolic dimension of ``mod`` (a PlanningError)."""
    from ..errors import PlanningError

    have = _symbols(mod)
    unknown = sorted(set(bind) - have)
    if unknown:
        raise PlanningError(f"bind names {', '.join(unknown)}, which the module's functions do not have as "
                            f"symbolic dimensions (they have: {', '.join(sorted(have)) or 'none'})")


def _plans(mod, options: dict) -> tuple:
    """``(modes, figures)``: which modes the variant asks for, and the module planned in them
    read into a :class:`~memcore_py.planning.report.ModuleFigures` (a mode not asked is read
    from the other's plan and its figures dropped)."""
    from ..planning.report import ModuleFigures
    from ..transform.static_plan_block_memory import plan_block_memory

    mode = options["mode"]
    tvm = plan_block_memory(mod, "tvm", lower_bound=True) if mode != "arena" else None
    arena = plan_block_memory(mod, "arena", time_limit=options["time_limit"]) if mode != "tvm" else None
    modes = tuple(m for m, plan in (("tvm", tvm), ("arena", arena)) if plan is not None)
    return modes, ModuleFigures(mod, tvm or arena, arena or tvm)


def _figures(plans: tuple, bind: dict) -> dict:
    """The figures of :func:`_plans`' answer at ``bind`` (``SweepResult`` fields)."""
    modes, figures = plans
    report = figures.report(bind=bind)
    out = {"lower_bound": _total(f.lower_bound for f in report.functions)}
    for mode in modes:
        out[f"{mode}_bytes"], out[f"{mode}_expr"] = _total_or_expr(report, mode)
    return out


def _total(values):
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


def _total_or_expr(report, mode: str):
    """``(bytes, None)`` when every function's total is known at the variant's ``bind``, else
    ``(None, the sum of the functions' totals as text)``."""
    known = [getattr(f, f"{mode}_bytes") for f in report.functions]
    if None not in known:
        return sum(known), None
    parts = [str(b) if b is not None else f"({getattr(f, f'{mode}_expr')})" for f, b in zip(report.functions, known)]
    return None, " + ".join(parts)


def plan_batch(items, worker: Worker | None = None) -> list:
    """Plan ``items`` (``(index, ModelSource, options)`` triples) with ``worker`` (a new
    :class:`Worker` by default); the results as dicts (plain data, for any executor)."""
    worker = Worker() if worker is None else worker
    return [worker.plan(index, source, options).to_dict() for index, source, options in items]
