"""Memory reports: per function, what StaticPlanBlockMemory did in both modes and how good it is.

Design
------
A report is built from results, never by running passes: the caller plans the module in
both modes (:func:`memcore_py.cli.plan.plan_and_report` does, timing each run) and hands the
two :class:`~memcore_py.transform.static_plan_block_memory.PlannedModule` results to
:func:`build_report`. Figures per function:

- **TVM mode** bytes: the sum of the ``R.memory.alloc_storage`` sizes of the planned
  function, i.e. what TVM's VM allocates for the planned tensors, re-read from the planned IR
  by the independent checker (:func:`memcore_py.planning.check.collect_planned_tensors`). A
  storage whose size is symbolic (no ``tir_var_upper_bound`` for a dynamic dim) makes the
  total unknown (``None``).
- **Arena mode** bytes: the same, one storage per (scope, device) pool.
- **Lower bound**: the plan's own (:func:`memcore_py.planning.lower_bound.function_lower_bounds`),
  the max-live bytes of the planned tensors per (scope, device) pool, summed over pools.

Symbolic sizes (a dynamic dim without ``tir_var_upper_bound``): the byte totals are printed
as a polynomial in the shape variables (``3072*n + 1536``, the sum of the plan's storage
sizes, :class:`~memcore_py.analysis.arith.SizePolynomial`) instead of a number. With
``bind`` (``memcore plan --bind n=512``) every figure is evaluated at the given values: the
totals, and the lower bound (the max-live bytes of all planned tensors at those sizes,
:func:`~memcore_py.planning.lower_bound.function_lower_bounds_at`); a figure that still
depends on an unbound variable stays an expression (the lower bound, ``?``).

Times are steady state: :func:`memcore_py.cli.plan.plan_and_report` runs each mode several
times and reports the fastest run (the first, cold call costs several times more: imports,
caches); the table header says how many runs.

A report is data (the command line prints it, :mod:`memcore_py.cli.report`; sweeps sum it,
:mod:`memcore_py.sweep`). It reads plans and planned IR; it plans nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..analysis.arith import SizePolynomial
from ..ir.expr import Call, Function, If, SeqExpr
from ..ir.module import IRModule
from ..ir.op import get_op
from .check import collect_planned_tensors
from .lower_bound import function_lower_bounds_at

__all__ = ["FunctionReport", "PlanReport", "ModuleFigures", "build_report"]

_BUILTIN_ALLOC_TENSOR = get_op("relax.builtin.alloc_tensor")


@dataclass(frozen=True)
class FunctionReport:
    """Memory report of one Relax function (see :func:`plan_report`)."""

    name: str
    n_bindings: int
    """Bindings of the function before planning (all blocks, branches included)."""
    n_allocs: int
    """``R.builtin.alloc_tensor`` bindings before planning."""
    n_planned: int
    """Tensors StaticPlanBlockMemory placed in storages (TVM mode)."""
    tvm_storages: int
    tvm_bytes: int | None
    """TVM mode: sum of storage sizes; None when a size is symbolic (see ``tvm_expr``)."""
    arena_storages: int
    arena_bytes: int | None
    lower_bound: int | None
    """Max-live bytes of the planned tensors, summed over (scope, device) pools; None when
    a planned size is symbolic and not bound."""
    reference_bytes: int | None = None
    """Apache TVM's own StaticPlanBlockMemory bytes for this function, when known (the
    shipped models record it)."""
    tvm_expr: str | None = None
    """TVM mode total as an expression in the shape variables when it is symbolic
    (``tvm_bytes`` is None then), e.g. ``"3072*n + 1536"``."""
    arena_expr: str | None = None
    """Arena mode total as an expression, when symbolic."""

    def excess(self, nbytes: int | None) -> float | None:
        """``nbytes`` relative to the lower bound: 0.10 means 10 % above it."""
        if nbytes is None or not self.lower_bound:
            return None
        return nbytes / self.lower_bound - 1.0

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "n_bindings": self.n_bindings,
            "n_allocs": self.n_allocs,
            "n_planned": self.n_planned,
            "tvm": {"n_storages": self.tvm_storages, "bytes": self.tvm_bytes, "expr": self.tvm_expr},
            "arena": {"n_storages": self.arena_storages, "bytes": self.arena_bytes, "expr": self.arena_expr},
            "lower_bound": self.lower_bound,
            "reference_bytes": self.reference_bytes,
        }


@dataclass(frozen=True)
class PlanReport:
    """Per-function report of one module, plus the planning times of both modes."""

    name: str
    functions: tuple
    """Tuple of :class:`FunctionReport`, in module order."""
    tvm_seconds: float
    """Wall time of ``StaticPlanBlockMemory(mode="tvm")`` on the whole module (the fastest
    of ``runs``)."""
    arena_seconds: float
    """Wall time of ``StaticPlanBlockMemory(mode="arena")`` on the whole module (the
    fastest of ``runs``)."""
    tvm_module: IRModule = field(repr=False, compare=False)
    arena_module: IRModule = field(repr=False, compare=False)
    runs: int = 1
    """Runs per mode the times are the best of."""
    bind: dict = field(default_factory=dict)
    """Shape variable values the figures are evaluated at."""
    planned: tuple = field(default=(), repr=False, compare=False)
    """The two ``PlannedModule`` results (TVM mode, arena mode) the report was built from,
    so that the peak report and the plots reuse them instead of planning again."""

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "tvm_seconds": self.tvm_seconds,
            "arena_seconds": self.arena_seconds,
            "timing": f"best of {self.runs} runs",
            "bind": dict(self.bind),
            "functions": [f.to_dict() for f in self.functions],
        }


def _count_bindings(seq: SeqExpr) -> tuple[int, int]:
    n_bindings = n_allocs = 0
    for block in seq.blocks:
        for b in block.bindings:
            n_bindings += 1
            v = b.value
            if isinstance(v, Call) and v.op is _BUILTIN_ALLOC_TENSOR:
                n_allocs += 1
            elif isinstance(v, If):
                for branch in (v.true_branch, v.false_branch):
                    nb, na = _count_bindings(branch)
                    n_bindings += nb
                    n_allocs += na
    return n_bindings, n_allocs


def _symbolic_total(plan, func_index: int, bind: dict):
    """``(bytes, expr)`` of the storages of one function of ``plan`` (a MemoryPlan): the int
    total when it is constant at ``bind``, else None and the total as text."""
    poly = SizePolynomial([s.nbytes for s in plan.storages if s.func == func_index]).bind(bind)
    value = poly.value
    return (value, None) if value is not None else (None, str(poly))


class ModuleFigures:
    """What a report reads of a module planned in both modes that does not depend on ``bind``
    (per function: its counts, and its planned tensors re-read from the planned IR), so that
    one plan can be reported at many ``bind`` values (:meth:`report`); :func:`build_report`
    is one such report.

    Parameters
    ----------
    mod, tvm, arena
        As :func:`build_report` takes them.
    """

    def __init__(self, mod: IRModule, tvm, arena):
        self.tvm, self.arena = tvm, arena
        lower_bounds = tvm.plan.function_lower_bounds
        if lower_bounds is None:
            lower_bounds = arena.plan.function_lower_bounds or {}
        self._lower_bounds = lower_bounds
        func_index = {n: i for i, n in enumerate(tvm.plan.function_names or ())}
        self._functions = []
        for gv, func in mod.functions.items():
            if not isinstance(func, Function):
                continue
            n_bindings, n_allocs = _count_bindings(func.body)
            tvm_plan = collect_planned_tensors(tvm.module[gv.name], gv.name)
            arena_plan = collect_planned_tensors(arena.module[gv.name], gv.name)
            self._functions.append((gv.name, n_bindings, n_allocs, tvm_plan, arena_plan, func_index.get(gv.name)))

    def report(self, *, name: str = "module", tvm_seconds: float = 0.0, arena_seconds: float = 0.0,
               reference: dict | None = None, runs: int = 1, bind: dict | None = None) -> PlanReport:
        """The report at ``bind`` (:func:`build_report`'s parameters)."""
        tvm, arena = self.tvm, self.arena
        bind = dict(bind or {})
        bound_lower = None
        reports = []
        for fname, n_bindings, n_allocs, tvm_plan, arena_plan, f in self._functions:
            tvm_bytes, arena_bytes = tvm_plan.total_bytes, arena_plan.total_bytes
            tvm_expr = arena_expr = None
            if tvm_bytes is None and f is not None:
                tvm_bytes, tvm_expr = _symbolic_total(tvm.plan, f, bind)
            if arena_bytes is None and f is not None:
                arena_bytes, arena_expr = _symbolic_total(arena.plan, f, bind)
            lower_bound = self._lower_bounds.get(fname, 0)
            if lower_bound is None and bind:
                if bound_lower is None:
                    bound_lower = function_lower_bounds_at(tvm.tokens.program, bind)
                lower_bound = bound_lower.get(fname)
            reports.append(
                FunctionReport(
                    name=fname,
                    n_bindings=n_bindings,
                    n_allocs=n_allocs,
                    n_planned=tvm_plan.n_planned,
                    tvm_storages=len(tvm_plan.storages),
                    tvm_bytes=tvm_bytes,
                    arena_storages=len(arena_plan.storages),
                    arena_bytes=arena_bytes,
                    lower_bound=lower_bound,
                    reference_bytes=(reference or {}).get(fname),
                    tvm_expr=tvm_expr,
                    arena_expr=arena_expr,
                )
            )
        return PlanReport(name, tuple(reports), tvm_seconds, arena_seconds, tvm.module, arena.module, runs=runs,
                          bind=bind, planned=(tvm, arena))


def build_report(mod: IRModule, tvm, arena, *, name: str = "module", tvm_seconds: float = 0.0,
                 arena_seconds: float = 0.0, reference: dict | None = None, runs: int = 1,
                 bind: dict | None = None) -> PlanReport:
    """The per-function report of ``mod`` planned in both modes.

    Parameters
    ----------
    mod : IRModule
        The module as planned (after ``CallTIRRewrite``).
    tvm, arena : PlannedModule
        :func:`~memcore_py.transform.static_plan_block_memory.plan_block_memory`'s results for
        ``mode="tvm"`` (with ``lower_bound=True``) and ``mode="arena"``.
    name : str
        A label for the report (file or model name).
    tvm_seconds, arena_seconds : float
        Planning times to report.
    reference : dict, optional
        Function name -> bytes of Apache TVM's own plan, copied into the report.
    runs : int, default 1
        Runs per mode the times are the best of (recorded for the header).
    bind : dict, optional
        Shape variable name -> int: evaluate symbolic figures at these values.
    """
    return ModuleFigures(mod, tvm, arena).report(name=name, tvm_seconds=tvm_seconds, arena_seconds=arena_seconds,
                                                 reference=reference, runs=runs, bind=bind)
