"""Memory reports: what StaticPlanBlockMemory did to each function, and how good it is.

Design
------
:func:`plan_report` runs ``StaticPlanBlockMemory`` in both modes on one module and reads the
two planned modules back:

- **TVM mode** (``mode="tvm"``): bytes = the sum of the ``R.memory.alloc_storage`` sizes,
  i.e. what TVM's VM allocates for the planned tensors. A storage whose size is symbolic
  (no ``tir_var_upper_bound`` for a dynamic dim) makes the total unknown (``None``).
- **Arena mode** (``mode="arena"``): the same, one storage per (scope, device) pool.
- **Lower bound**: :func:`memcore.max_live_bytes` over the planned tensors and the lifetimes
  the planner itself uses (:func:`memcore_py.analysis.storage_tokens.analyze_storage_tokens`),
  per (storage scope, device) pool, summed over pools. No placement of those tensors can
  use fewer bytes.

To *check* plans, the planned tensors and their lifetimes are re-derived from the *planned*
IR by :func:`collect_planned_tensors` (each ``R.memory.alloc_tensor`` bound in the function;
its lifetime runs from that binding to the last binding that reads it or an alias of it).
That derivation shares no code with the planner, so :func:`verify_planned` is an independent
check of a plan (no two tensors with overlapping lifetimes share bytes of a storage), and
:meth:`PlannedStorages.lower_bound` is an independent second computation of the bound.

Steps are binding positions in program order over the whole function (blocks one after
another; the bindings of an ``If``'s branches come before the ``If`` binding itself), because
TVM's allocator keeps one pool per function across blocks.

Aliases (no read of the tensor's bytes, the alias carries the same tensors): ``y = x``,
``R.match_cast``, ``R.reshape``, ``R.memory.view``, ``R.memory.ensure_zero_offset``, the
``vm.builtin.reshape`` packed call, tuples (a tuple carries all of its fields) and tuple
items (the indexed field of a literal tuple; every field of any other tuple, conservatively).
Every other binding that mentions a var reads all tensors that var carries. A tensor that
reaches the function's return value is live to the end of the function.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import PlanningError
from ..ir.expr import (
    Call,
    ExternFunc,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.op import Op
from ..ir.prim import IntImm
from ..ir.types import dtype_bytes
from .arena_options import ARENA_TIME_LIMIT

__all__ = [
    "Storage",
    "PlannedStorages",
    "FunctionReport",
    "PlanReport",
    "collect_planned_tensors",
    "verify_planned",
    "plan_report",
]

ALLOC_STORAGE = "relax.memory.alloc_storage"
MEM_ALLOC_TENSOR = "relax.memory.alloc_tensor"
BUILTIN_ALLOC_TENSOR = "relax.builtin.alloc_tensor"
#: ops whose result shares ``args[0]``'s memory (TVM SPBM's "in-place memory ops")
ALIAS_OPS = frozenset({"relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset"})
#: packed functions whose result shares ``args[0]``'s memory
ALIAS_PACKED = frozenset({"vm.builtin.reshape"})


# ---------------------------------------------------------------------------------------------
# Planned tensors of one planned function
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Storage:
    """One ``R.memory.alloc_storage`` of a planned function and the tensors placed in it."""

    name: str
    """Name of the storage var."""
    nbytes: int | None
    """Size in bytes; None when symbolic."""
    scope: str
    """Storage scope (``"global"``)."""
    device: int | None
    """Runtime device index (None when not a constant)."""
    start: np.ndarray = field(repr=False)
    """int64[n]: step (binding position) of each tensor's ``R.memory.alloc_tensor``."""
    end: np.ndarray = field(repr=False)
    """int64[n]: last step reading the tensor, inclusive (``n_steps``: live at return)."""
    size: np.ndarray = field(repr=False)
    """int64[n]: tensor bytes (-1 when symbolic)."""
    offset: np.ndarray = field(repr=False)
    """int64[n]: byte offset in the storage (-1 when symbolic)."""
    tensors: tuple = ()
    """Names of the tensor vars, in the same order."""

    @property
    def n_tensors(self) -> int:
        return len(self.tensors)

    @property
    def is_static(self) -> bool:
        """All sizes and offsets (and the storage size) are constants."""
        return self.nbytes is not None and bool(np.all(self.size >= 0)) and bool(np.all(self.offset >= 0))


@dataclass(frozen=True)
class PlannedStorages:
    """Result of :func:`collect_planned_tensors` for one function."""

    function: str
    n_steps: int
    """Number of bindings (steps) of the function."""
    storages: tuple
    """Tuple of :class:`Storage`, in definition order."""
    n_unplanned: int
    """``R.builtin.alloc_tensor`` bindings left in the function (not planned)."""

    @property
    def n_planned(self) -> int:
        return sum(s.n_tensors for s in self.storages)

    @property
    def total_bytes(self) -> int | None:
        """Sum of the storage sizes; None if any is symbolic."""
        if any(s.nbytes is None for s in self.storages):
            return None
        return sum(s.nbytes for s in self.storages)

    def lower_bound(self) -> int | None:
        """Sum over (scope, device) pools of the maximum bytes simultaneously live (None if a
        planned tensor has a symbolic size)."""
        import memcore

        pools: dict = {}
        for s in self.storages:
            if np.any(s.size < 0):
                return None
            pools.setdefault((s.scope, s.device), []).append(s)
        total = 0
        for group in pools.values():
            start = np.concatenate([s.start for s in group])
            end = np.concatenate([s.end for s in group])
            size = np.concatenate([s.size for s in group])
            if len(size):
                total += int(memcore.max_live_bytes(start, end, size))
        return total


def _op_name(op) -> str | None:
    return op.name if isinstance(op, Op) else None


def _const_int(e) -> int | None:
    if isinstance(e, PrimValue):
        e = e.value
    if isinstance(e, IntImm):
        return int(e.value)
    if isinstance(e, int):
        return e
    return None


def _shape_bytes(shape_expr, dtype: str) -> int | None:
    if not isinstance(shape_expr, ShapeExpr):
        return None
    n = dtype_bytes(dtype)
    for d in shape_expr.values:
        v = _const_int(d)
        if v is None:
            return None
        n *= v
    return n


def _vars_in(expr, out: list) -> list:
    """Append every Relax Var mentioned by ``expr`` (not descending into If branches)."""
    if isinstance(expr, Var):
        out.append(expr)
    elif isinstance(expr, Call):
        if isinstance(expr.op, Var):
            out.append(expr.op)
        for a in expr.args:
            _vars_in(a, out)
    elif isinstance(expr, Tuple):
        for f in expr.fields:
            _vars_in(f, out)
    elif isinstance(expr, TupleGetItem):
        _vars_in(expr.tuple_value, out)
    elif isinstance(expr, If):
        _vars_in(expr.cond, out)
    elif isinstance(expr, SeqExpr):
        _vars_in(expr.body, out)
    return out


class _Lifetimes:
    """One walk over a planned function: numbers bindings, records storages and tensors,
    propagates aliases and extends lifetimes (see the module docstring)."""

    def __init__(self):
        self.step = 0
        self.carried: dict = {}  # Var -> tuple of tensor ids it carries
        self.tuple_fields: dict = {}  # Var bound to a Tuple literal -> per-field tensor ids
        self.storage_of_var: dict = {}  # storage Var -> storage index
        self.storages: list = []  # [name, nbytes, scope, device]
        self.t_storage: list = []
        self.t_start: list = []
        self.t_end: list = []
        self.t_size: list = []
        self.t_offset: list = []
        self.t_name: list = []
        self.n_unplanned = 0

    def carried_by(self, expr) -> tuple:
        """Tensor ids an expression evaluates to (through aliases)."""
        if isinstance(expr, Var):
            return self.carried.get(expr, ())
        if isinstance(expr, Tuple):
            ids: list = []
            for f in expr.fields:
                ids.extend(self.carried_by(f))
            return tuple(ids)
        if isinstance(expr, TupleGetItem):
            tv = expr.tuple_value
            if isinstance(tv, Var) and tv in self.tuple_fields:
                fields = self.tuple_fields[tv]
                if 0 <= expr.index < len(fields):
                    return fields[expr.index]
            return self.carried_by(tv)
        return ()

    def read(self, expr) -> None:
        for v in _vars_in(expr, []):
            for t in self.carried.get(v, ()):
                if self.t_end[t] < self.step:
                    self.t_end[t] = self.step

    def visit_seq(self, seq: SeqExpr) -> None:
        for block in seq.blocks:
            for binding in block.bindings:
                self.visit_binding(binding)

    def visit_binding(self, binding) -> None:
        value = binding.value
        var = binding.var
        if isinstance(value, If):
            self.read(value.cond)
            for branch in (value.true_branch, value.false_branch):
                self.visit_seq(branch)
                self.read(branch.body)
        step = self.step
        if isinstance(binding, MatchCast) or isinstance(value, (Var, TupleGetItem)):
            self.carried[var] = self.carried_by(value)
        elif isinstance(value, Tuple):
            fields = tuple(self.carried_by(f) for f in value.fields)
            self.tuple_fields[var] = fields
            self.carried[var] = tuple(t for f in fields for t in f)
        elif isinstance(value, Call):
            self.visit_call(var, value, step)
        else:
            self.read(value)
        self.step += 1

    def visit_call(self, var, call: Call, step: int) -> None:
        name = _op_name(call.op)
        if name == ALLOC_STORAGE:
            nbytes = None
            if isinstance(call.args[0], ShapeExpr) and len(call.args[0].values) == 1:
                nbytes = _const_int(call.args[0].values[0])
            scope = call.args[2].value if isinstance(call.args[2], StringImm) else "global"
            self.storage_of_var[var] = len(self.storages)
            self.storages.append([var.name, nbytes, scope, _const_int(call.args[1])])
            return
        if name == MEM_ALLOC_TENSOR:
            storage = call.args[0]
            if not (isinstance(storage, Var) and storage in self.storage_of_var):
                raise PlanningError(
                    f"R.memory.alloc_tensor bound to {var.name!r} at binding {step} must take a storage "
                    f"allocated earlier in the same function; got {storage!r}"
                )
            dtype = call.args[3].value if hasattr(call.args[3], "value") else ""
            tid = len(self.t_start)
            self.t_storage.append(self.storage_of_var[storage])
            self.t_start.append(step)
            self.t_end.append(step)
            size = _shape_bytes(call.args[2], str(dtype)) if dtype else None
            offset = _const_int(call.args[1])
            self.t_size.append(-1 if size is None else size)
            self.t_offset.append(-1 if offset is None else offset)
            self.t_name.append(var.name)
            self.carried[var] = (tid,)
            return
        if name == BUILTIN_ALLOC_TENSOR:
            self.n_unplanned += 1
            return
        if name in ALIAS_OPS or (isinstance(call.op, ExternFunc) and call.op.global_symbol in ALIAS_PACKED):
            if call.args:
                self.carried[var] = self.carried_by(call.args[0])
                for a in call.args[1:]:
                    self.read(a)
            return
        self.read(call)

    def result(self, func_name: str) -> PlannedStorages:
        n = len(self.t_start)
        t_storage = np.asarray(self.t_storage, dtype=np.int64).reshape(n)
        arrays = {
            "start": np.asarray(self.t_start, dtype=np.int64).reshape(n),
            "end": np.asarray(self.t_end, dtype=np.int64).reshape(n),
            "size": np.asarray(self.t_size, dtype=np.int64).reshape(n),
            "offset": np.asarray(self.t_offset, dtype=np.int64).reshape(n),
        }
        storages = []
        for i, (name, nbytes, scope, device) in enumerate(self.storages):
            idx = np.flatnonzero(t_storage == i)
            storages.append(
                Storage(
                    name=name,
                    nbytes=nbytes,
                    scope=scope,
                    device=device,
                    tensors=tuple(self.t_name[j] for j in idx),
                    **{k: np.ascontiguousarray(v[idx]) for k, v in arrays.items()},
                )
            )
        return PlannedStorages(func_name, self.step, tuple(storages), self.n_unplanned)


def collect_planned_tensors(func: Function, name: str = "") -> PlannedStorages:
    """The storages of a planned function, with each tensor's lifetime, size and offset.

    Parameters
    ----------
    func : Function
        A Relax function after ``StaticPlanBlockMemory`` (either mode), before
        ``LowerAllocTensor`` (which makes unplanned allocations look planned).
    name : str
        Function name for messages and the result.

    Returns
    -------
    PlannedStorages

    Raises
    ------
    PlanningError
        If an ``R.memory.alloc_tensor`` uses a storage not allocated in the function.
    """
    walk = _Lifetimes()
    walk.visit_seq(func.body)
    # Tensors reaching the return value are live after the last binding.
    for t in walk.carried_by(func.body.body) + tuple(
        t for v in _vars_in(func.body.body, []) for t in walk.carried.get(v, ())
    ):
        walk.t_end[t] = walk.step
    return walk.result(name)


def verify_planned(planned: PlannedStorages) -> None:
    """Check a plan independently of the planner: in every storage, tensors whose lifetimes
    overlap occupy disjoint bytes, and every tensor fits in the storage.

    Storages with symbolic sizes are skipped (nothing constant to check).

    Raises
    ------
    memcore.PlanError
        Naming the storage and the engine's finding.
    """
    import memcore

    for s in planned.storages:
        if not s.is_static or s.n_tensors == 0:
            continue
        try:
            memcore.verify_offsets(s.start, s.end, s.size, s.offset, s.nbytes)
        except memcore.MemcoreError as exc:
            raise type(exc)(f"function {planned.function!r}, storage {s.name!r}: {exc}") from exc


# ---------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------


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
    """TVM mode: sum of storage sizes; None when a size is symbolic."""
    arena_storages: int
    arena_bytes: int | None
    lower_bound: int | None
    """Max-live bytes of the planned tensors, summed over (scope, device) pools."""
    reference_bytes: int | None = None
    """Apache TVM's own StaticPlanBlockMemory bytes for this function, when known (the
    shipped models record it)."""

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
            "tvm": {"n_storages": self.tvm_storages, "bytes": self.tvm_bytes},
            "arena": {"n_storages": self.arena_storages, "bytes": self.arena_bytes},
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
    """Wall time of ``StaticPlanBlockMemory(mode="tvm")`` on the whole module."""
    arena_seconds: float
    """Wall time of ``StaticPlanBlockMemory(mode="arena")`` on the whole module."""
    tvm_module: IRModule = field(repr=False, compare=False)
    arena_module: IRModule = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "tvm_seconds": self.tvm_seconds,
            "arena_seconds": self.arena_seconds,
            "functions": [f.to_dict() for f in self.functions],
        }


def _count_bindings(seq: SeqExpr) -> tuple[int, int]:
    n_bindings = n_allocs = 0
    for block in seq.blocks:
        for b in block.bindings:
            n_bindings += 1
            v = b.value
            if isinstance(v, Call) and _op_name(v.op) == BUILTIN_ALLOC_TENSOR:
                n_allocs += 1
            elif isinstance(v, If):
                for branch in (v.true_branch, v.false_branch):
                    nb, na = _count_bindings(branch)
                    n_bindings += nb
                    n_allocs += na
    return n_bindings, n_allocs


def _lower_bounds(mod: IRModule) -> dict:
    """Function name -> max-live bytes of its planned tokens (None if one is symbolic), from
    the planner's own token analysis."""
    import memcore

    from ..analysis.storage_tokens import analyze_storage_tokens

    st = analyze_storage_tokens(mod)
    groups: dict = {}
    symbolic: set = set()
    funcs = st.tok_func.tolist()
    for t in range(st.n_tok):
        if st.tok_const[t] < 0:
            symbolic.add(funcs[t])
        groups.setdefault(funcs[t], {}).setdefault((st.tok_scope[t], st.tok_device[t]), []).append(t)
    out = {}
    for f, entry in enumerate(st.functions):
        gv = entry[0]
        if f in symbolic:
            out[gv.name] = None
            continue
        total = 0
        for toks in groups.get(f, {}).values():
            idx = np.asarray(toks, dtype=np.int64)
            total += int(memcore.max_live_bytes(st.tok_start[idx], st.tok_end[idx], st.tok_const[idx]))
        out[gv.name] = total
    return out


def plan_report(mod: IRModule, name: str = "module", reference: dict | None = None,
                time_limit: float | None = ARENA_TIME_LIMIT) -> PlanReport:
    """Plan ``mod`` with ``StaticPlanBlockMemory`` in both modes and report per function.

    Parameters
    ----------
    mod : IRModule
        A module after ``CallTIRRewrite`` (``R.builtin.alloc_tensor`` outputs), as
        StaticPlanBlockMemory expects.
    name : str
        A label for the report (file or model name).
    reference : dict, optional
        Function name -> bytes of Apache TVM's own plan, copied into the report.
    time_limit : float or None, default ARENA_TIME_LIMIT (0.1)
        Arena mode: seconds for :func:`memcore.plan_offsets`'s anytime search (it stops early
        at the lower bound); None = heuristics only.

    Returns
    -------
    PlanReport
        Its ``tvm_module`` / ``arena_module`` are the two planned modules.

    Raises
    ------
    PassError
        If StaticPlanBlockMemory rejects the module.
    """
    from ..transform.static_plan_block_memory import StaticPlanBlockMemory

    t0 = time.perf_counter()
    tvm_mod = StaticPlanBlockMemory(mode="tvm")(mod)
    t1 = time.perf_counter()
    arena_mod = StaticPlanBlockMemory(mode="arena", time_limit=time_limit)(mod)
    t2 = time.perf_counter()
    lower_bounds = _lower_bounds(mod)
    reports = []
    for gv, func in mod.functions.items():
        if not isinstance(func, Function):
            continue
        n_bindings, n_allocs = _count_bindings(func.body)
        tvm_plan = collect_planned_tensors(tvm_mod[gv.name], gv.name)
        arena_plan = collect_planned_tensors(arena_mod[gv.name], gv.name)
        reports.append(
            FunctionReport(
                name=gv.name,
                n_bindings=n_bindings,
                n_allocs=n_allocs,
                n_planned=tvm_plan.n_planned,
                tvm_storages=len(tvm_plan.storages),
                tvm_bytes=tvm_plan.total_bytes,
                arena_storages=len(arena_plan.storages),
                arena_bytes=arena_plan.total_bytes,
                lower_bound=lower_bounds.get(gv.name, 0),
                reference_bytes=(reference or {}).get(gv.name),
            )
        )
    return PlanReport(name, tuple(reports), t1 - t0, t2 - t1, tvm_mod, arena_mod)


# ---------------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------------


def format_bytes(n: int | None) -> str:
    """``12.34 MiB`` style; ``?`` for unknown (symbolic)."""
    if n is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


_COLUMNS = ("module", "function", "bindings", "allocs", "planned", "storages", "tvm bytes",
            "arena bytes", "lower bound", "tvm/lb", "arena/lb", "TVM 0.27", "tvm ms", "arena ms")


def format_table(reports) -> str:
    """A fixed-width table with one row per function of each :class:`PlanReport`.

    ``storages`` is TVM mode's count; ``tvm/lb`` and ``arena/lb`` are the excess over the
    lower bound; ``TVM 0.27`` is Apache TVM's own result when recorded; the times are those
    of the whole module's StaticPlanBlockMemory run in each mode.
    """
    rows = []
    for rep in reports:
        for f in rep.functions:
            tvm_x, arena_x = f.excess(f.tvm_bytes), f.excess(f.arena_bytes)
            rows.append((
                rep.name, f.name, str(f.n_bindings), str(f.n_allocs), str(f.n_planned),
                str(f.tvm_storages), format_bytes(f.tvm_bytes), format_bytes(f.arena_bytes),
                format_bytes(f.lower_bound),
                "-" if tvm_x is None else f"{tvm_x:+.1%}",
                "-" if arena_x is None else f"{arena_x:+.1%}",
                "-" if f.reference_bytes is None else format_bytes(f.reference_bytes),
                f"{rep.tvm_seconds * 1e3:.1f}", f"{rep.arena_seconds * 1e3:.1f}",
            ))
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(_COLUMNS)]
    left = {0, 1}

    def fmt(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines = [fmt(_COLUMNS), fmt(tuple("-" * w for w in widths))]
    lines.extend(fmt(r) for r in rows)
    return "\n".join(lines)
