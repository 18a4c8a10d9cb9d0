"""An independent checker of planned IR: re-derive the planned tensors and check the plan.

:func:`collect_planned_tensors` reads a function *after* StaticPlanBlockMemory (either mode):
each ``R.memory.alloc_storage`` and the ``R.memory.alloc_tensor`` placed in it, with the
tensor's lifetime from that binding to the last binding that reads it or an alias of it.
That derivation shares no code with the planner's analysis, so :func:`verify_planned` is an
independent check of a plan (no two tensors with overlapping lifetimes share bytes of a
storage, every tensor fits), and :meth:`PlannedStorages.lower_bound` an independent second
computation of the bound. The only thing shared with the planner is the op table's
definition of which ops alias storage.

Steps are binding positions in program order over the whole function (blocks one after
another; the bindings of an ``If``'s branches come before the ``If`` binding itself), because
TVM's allocator keeps one pool per function across blocks.

Aliases (no read of the tensor's bytes, the alias carries the same tensors): ``y = x``,
``R.match_cast``, the storage-sharing ops (``R.reshape``, ``R.memory.view``,
``R.memory.ensure_zero_offset``, the ``vm.builtin.reshape`` packed call), tuples (a tuple
carries all of its fields) and tuple items (the indexed field of a tuple whose fields are known:
a literal tuple, reached directly, through aliases or as a field of another such tuple; every
field of any other tuple, conservatively). Every other binding that mentions a var reads all
tensors that var carries. A tensor that reaches the function's return value is live to the
end of the function.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import PlanningError
from ..ir.expr import (
    Call,
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
from ..ir.functor import var_uses
from ..ir.op import Op, shares_storage
from ..ir.prim import INT64_MAX, IntImm
from ..ir.types import dtype_bytes
from .lower_bound import max_live_by_pool

__all__ = ["PlannedStorage", "PlannedStorages", "collect_planned_tensors", "verify_planned"]

ALLOC_STORAGE = "relax.memory.alloc_storage"
MEM_ALLOC_TENSOR = "relax.memory.alloc_tensor"
BUILTIN_ALLOC_TENSOR = "relax.builtin.alloc_tensor"


# ---------------------------------------------------------------------------------------------
# Planned tensors of one planned function
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedStorage:
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
    """Tuple of :class:`PlannedStorage`, in definition order."""
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
        if any(np.any(s.size < 0) for s in self.storages):
            return None
        if not self.storages:
            return 0
        keys = [(s.scope, s.device) for s in self.storages for _ in range(s.n_tensors)]
        start = np.concatenate([s.start for s in self.storages])
        end = np.concatenate([s.end for s in self.storages])
        size = np.concatenate([s.size for s in self.storages])
        return sum(max_live_by_pool(start, end, size, keys).values())


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


class _Fields(tuple):
    """A tuple value's fields, one carried structure (a ``_Fields`` or a tuple of tensor ids)
    per field."""


def _flatten(carried) -> tuple:
    """The tensor ids a carried structure holds, in field order."""
    if not isinstance(carried, _Fields):
        return carried
    ids: list = []
    for f in carried:
        ids.extend(_flatten(f))
    return tuple(ids)


class _Lifetimes:
    """One walk over a planned function: numbers bindings, records storages and tensors,
    propagates aliases and extends lifetimes (see the module docstring)."""

    def __init__(self):
        self.step = 0
        self.carried: dict = {}  # Var -> tuple of tensor ids it carries
        self.tuple_fields: dict = {}  # Var of a tuple with known fields -> its _Fields
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
        return _flatten(self.structure(expr))

    def structure(self, expr):
        """What ``expr`` carries: a :class:`_Fields` when it is a tuple whose fields are
        known (one structure per field), else the tuple of tensor ids it carries."""
        if isinstance(expr, Var):
            fields = self.tuple_fields.get(expr)
            return fields if fields is not None else self.carried.get(expr, ())
        if isinstance(expr, Tuple):
            return _Fields(self.structure(f) for f in expr.fields)
        if isinstance(expr, TupleGetItem):
            whole = self.structure(expr.tuple_value)
            if isinstance(whole, _Fields) and 0 <= expr.index < len(whole):
                return whole[expr.index]
            return _flatten(whole)
        return ()

    def read(self, expr) -> None:
        for v in var_uses(expr, nested=False):
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
        if isinstance(binding, MatchCast) or isinstance(value, (Var, TupleGetItem, Tuple)):
            carried = self.structure(value)
            if isinstance(carried, _Fields):
                self.tuple_fields[var] = carried
            self.carried[var] = _flatten(carried)
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
            for what, v in (("size", size), ("offset", offset)):
                if v is not None and not 0 <= v <= INT64_MAX:
                    raise PlanningError(
                        f"R.memory.alloc_tensor bound to {var.name!r} at binding {step}: its {what}, {v} bytes, "
                        f"is negative or does not fit in int64"
                    )
            self.t_size.append(-1 if size is None else size)
            self.t_offset.append(-1 if offset is None else offset)
            self.t_name.append(var.name)
            self.carried[var] = (tid,)
            return
        if name == BUILTIN_ALLOC_TENSOR:
            self.n_unplanned += 1
            return
        if shares_storage(call.op):
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
                PlannedStorage(
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
        t for v in var_uses(func.body.body, nested=False) for t in walk.carried.get(v, ())
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
