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

This module sits above ``transform`` (it formats, it does not plan). The table is sorted by
module and function, with a totals row; :func:`write_table` draws it with ``rich`` on a
terminal when rich is installed and writes the plain fixed-width text otherwise (piped
output stays the same for scripts).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.expr import Call, Function, If, SeqExpr
from ..ir.module import IRModule
from ..ir.op import get_op
from ..analysis.arith import SizePolynomial
from ..planning.check import collect_planned_tensors
from ..planning.lower_bound import function_lower_bounds_at

__all__ = ["FunctionReport", "PlanReport", "build_report", "format_bytes", "format_table", "table_cells",
           "write_table", "render_rich_table"]

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
    bind = dict(bind or {})
    lower_bounds = tvm.plan.function_lower_bounds
    if lower_bounds is None:
        lower_bounds = arena.plan.function_lower_bounds or {}
    bound_lower = None
    func_index = {n: i for i, n in enumerate(tvm.plan.function_names or ())}
    reports = []
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        n_bindings, n_allocs = _count_bindings(func.body)
        tvm_plan = collect_planned_tensors(tvm.module[gv.name], gv.name)
        arena_plan = collect_planned_tensors(arena.module[gv.name], gv.name)
        tvm_bytes, arena_bytes = tvm_plan.total_bytes, arena_plan.total_bytes
        tvm_expr = arena_expr = None
        f = func_index.get(gv.name)
        if tvm_bytes is None and f is not None:
            tvm_bytes, tvm_expr = _symbolic_total(tvm.plan, f, bind)
        if arena_bytes is None and f is not None:
            arena_bytes, arena_expr = _symbolic_total(arena.plan, f, bind)
        lower_bound = lower_bounds.get(gv.name, 0)
        if lower_bound is None and bind:
            if bound_lower is None:
                bound_lower = function_lower_bounds_at(tvm.tokens.program, bind)
            lower_bound = bound_lower.get(gv.name)
        reports.append(
            FunctionReport(
                name=gv.name,
                n_bindings=n_bindings,
                n_allocs=n_allocs,
                n_planned=tvm_plan.n_planned,
                tvm_storages=len(tvm_plan.storages),
                tvm_bytes=tvm_bytes,
                arena_storages=len(arena_plan.storages),
                arena_bytes=arena_bytes,
                lower_bound=lower_bound,
                reference_bytes=(reference or {}).get(gv.name),
                tvm_expr=tvm_expr,
                arena_expr=arena_expr,
            )
        )
    return PlanReport(name, tuple(reports), tvm_seconds, arena_seconds, tvm.module, arena.module, runs=runs,
                      bind=bind, planned=(tvm, arena))


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------


def format_bytes(n: int | None, expr: str | None = None) -> str:
    """``12.34 MiB`` style; ``expr`` (the symbolic total, in bytes) when ``n`` is unknown;
    ``?`` when neither is known."""
    if n is None:
        return expr if expr is not None else "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


_COLUMNS = ("module", "function", "bindings", "allocs", "planned", "storages", "tvm bytes",
            "arena bytes", "lower bound", "tvm/lb", "arena/lb", "TVM 0.27", "tvm ms", "arena ms")


def _sum_known(values):
    """The sum of ``values``, or None when one of them is unknown (None)."""
    total = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def table_cells(reports):
    """``(columns, rows, totals)`` of the report table, all cells strings.

    Rows are sorted by module, then function name (the order of the files on the command
    line does not matter); ``totals`` sums every count and byte column over all rows (a byte
    total is ``-`` when one of its rows is symbolic or unknown), the excess columns relative
    to the summed lower bound, and the times over the modules (each module's time once)."""
    runs = max((rep.runs for rep in reports), default=1)
    columns = _COLUMNS[:-2] + (f"tvm ms (best of {runs})", f"arena ms (best of {runs})")
    entries = sorted(((rep.name, f.name, rep, f) for rep in reports for f in rep.functions), key=lambda e: e[:2])
    rows = []
    for _, _, rep, f in entries:
        tvm_x, arena_x = f.excess(f.tvm_bytes), f.excess(f.arena_bytes)
        rows.append((
            rep.name, f.name, str(f.n_bindings), str(f.n_allocs), str(f.n_planned),
            str(f.tvm_storages), format_bytes(f.tvm_bytes, f.tvm_expr), format_bytes(f.arena_bytes, f.arena_expr),
            format_bytes(f.lower_bound),
            "-" if tvm_x is None else f"{tvm_x:+.1%}",
            "-" if arena_x is None else f"{arena_x:+.1%}",
            "-" if f.reference_bytes is None else format_bytes(f.reference_bytes),
            f"{rep.tvm_seconds * 1e3:.1f}", f"{rep.arena_seconds * 1e3:.1f}",
        ))
    funcs = [f for _, _, _, f in entries]
    tvm, arena = _sum_known(f.tvm_bytes for f in funcs), _sum_known(f.arena_bytes for f in funcs)
    lb = _sum_known(f.lower_bound for f in funcs)
    ref = _sum_known(f.reference_bytes for f in funcs)

    def excess(n):
        return "-" if n is None or not lb else f"{n / lb - 1.0:+.1%}"

    def total_bytes(n):
        return "-" if n is None else format_bytes(n)

    totals = (
        "total", f"{len(funcs)} functions", str(sum(f.n_bindings for f in funcs)),
        str(sum(f.n_allocs for f in funcs)), str(sum(f.n_planned for f in funcs)),
        str(sum(f.tvm_storages for f in funcs)), total_bytes(tvm), total_bytes(arena), total_bytes(lb),
        excess(tvm), excess(arena), "-" if ref is None or not funcs else format_bytes(ref),
        f"{sum(rep.tvm_seconds for rep in reports) * 1e3:.1f}", f"{sum(rep.arena_seconds for rep in reports) * 1e3:.1f}",
    )
    return columns, rows, totals


def format_table(reports) -> str:
    """A fixed-width table with one row per function of each :class:`PlanReport`, sorted by
    module and function, and a totals row when there is more than one function.

    ``storages`` is TVM mode's count; ``tvm/lb`` and ``arena/lb`` are the excess over the
    lower bound; ``TVM 0.27`` is Apache TVM's own result when recorded; the times are those
    of the whole module's StaticPlanBlockMemory run in each mode, the fastest of the report's
    runs (steady state), as the time column headers say. A symbolic total is printed as an
    expression in bytes.
    """
    columns, rows, totals = table_cells(reports)
    shown = rows + [totals] if len(rows) > 1 else rows
    widths = [max(len(c), *(len(r[i]) for r in shown)) if shown else len(c) for i, c in enumerate(columns)]
    left = {0, 1}

    def fmt(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = fmt(tuple("-" * w for w in widths))
    lines = [fmt(columns), rule]
    lines.extend(fmt(r) for r in rows)
    if len(rows) > 1:
        lines.extend((rule, fmt(totals)))
    return "\n".join(lines)


def write_table(reports, out) -> None:
    """Write the report table to ``out``: drawn with ``rich`` when it is installed and
    ``out`` is a terminal, the plain :func:`format_table` otherwise (piped, redirected, or
    without rich), so scripts always read the same fixed-width text."""
    if getattr(out, "isatty", None) is not None and out.isatty():
        try:
            render_rich_table(reports, out, force_terminal=True)
            return
        except ImportError:
            pass
    out.write(format_table(reports) + "\n")


def render_rich_table(reports, out, *, force_terminal: bool = False, width: int | None = None) -> None:
    """The report table drawn by ``rich`` (a ``rich.table.Table``: same cells, sorted rows,
    totals as its footer) on ``out``.

    Raises
    ------
    ImportError
        rich is not installed (``pip install rich``).
    """
    from rich.console import Console
    from rich.table import Table

    columns, rows, totals = table_cells(reports)
    show_totals = len(rows) > 1
    table = Table(show_footer=show_totals, header_style="bold", footer_style="bold")
    for i, c in enumerate(columns):
        table.add_column(c, justify="left" if i < 2 else "right", footer=totals[i] if show_totals else "")
    for r in rows:
        table.add_row(*r)
    Console(file=out, force_terminal=force_terminal, width=width or 250, soft_wrap=False).print(table)
