"""Storage tokens of a module: StaticPlanBlockMemory's Init phase as flat arrays.

Port of TVM ``StorageAllocatorInit`` (src/relax/transform/static_plan_block_memory.cc,
spec §1.3). One walk over every Relax function, in module order, computes for each
expression the *tokens* it carries — a leaf token (an int), ``None``, or a tuple of those
(TVM's ``NestedMsg<StorageToken>``):

- ``v = R.builtin.alloc_tensor(shape, dtype, dev, scope)`` creates a token (one per
  allocation) with its byte size (:func:`~memcore_py.analysis.arith.tensor_bytes` of the
  upper-bounded shape, §1.2/§1.6), dtype, scope, device and allocation block.
- ``v = x``, ``v = R.match_cast(x, T)``, tuples, get-items and the in-place memory ops
  (``R.reshape``, ``R.memory.view``, ``R.memory.ensure_zero_offset``, the
  ``vm.builtin.reshape`` packed call) propagate their input's tokens without using them.
- A call to a PrimFunc of the module, to an ``ExternFunc`` (``R.call_packed``) or
  ``R.vm.call_tir_dyn`` *uses* every leaf token of its arguments (tuple leaves included, a
  tensor passed twice counts twice) — after discarding the leaves allocated in another block.
- Every other call (Relax ops, Relax functions, unlowered ``call_tir`` ...), an ``If``
  (condition and branch results), a SeqExpr's result and the function's return value
  *discard* their tokens: the allocation is then left alone.

A discarded token is gone everywhere (TVM removes it from every expression that carried it),
so the walk only marks it and the event program is filtered at the end.

Result (:class:`StorageTokens`): per planned token its bytes (constant, or a symbolic
expression with a reuse class), pool attributes, reference count and lifetime steps; and the
*event program* of StaticPlanBlockMemory's second phase (TVM ``StorageAllocator``) in
program order: ``EV_REQUEST`` at each planned allocation, ``EV_DECREF`` for each use at the
using call — exactly the input of :func:`memcore.plan_tokens`.

Steps are binding positions in visit order, module-wide and increasing (the bindings of an
If's branches come right after the If binding's own step). A token's lifetime is
``[step of its allocation, step of its last use]``, inclusive (its allocation step when
unused); a token never outlives its block, because a use in another block discards it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import PassError
from ..ir.expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimValue,
    SeqExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm
from ..ir.types import TensorType, check_dtype
from .arith import UnsupportedBound, read_var_bounds, size_class_key, tensor_bytes, upper_bound_shape

__all__ = [
    "StorageTokens",
    "analyze_storage_tokens",
    "BUILTIN_ALLOC_TENSOR",
    "INPLACE_MEMORY_OPS",
    "RESHAPE_PACKED",
    "is_inplace_memory_op",
    "alloc_tensor_info",
]

BUILTIN_ALLOC_TENSOR = get_op("relax.builtin.alloc_tensor")
CALL_TIR_DYN = get_op("relax.vm.call_tir_dyn")
#: Ops whose result aliases ``args[0]``'s storage (TVM ``IsInplaceMemoryOp``).
INPLACE_MEMORY_OPS = frozenset(
    get_op(n) for n in ("relax.reshape", "relax.memory.view", "relax.memory.ensure_zero_offset")
)
#: Packed function that aliases its first argument (PR #20134).
RESHAPE_PACKED = "vm.builtin.reshape"

_EV_REQUEST = 0
_EV_DECREF = 1


def is_inplace_memory_op(op) -> bool:
    """True for the ops whose result shares ``args[0]``'s storage."""
    return op in INPLACE_MEMORY_OPS or (type(op) is ExternFunc and op.global_symbol == RESHAPE_PACKED)


def alloc_tensor_info(binding, func_name: str):
    """Validate a ``R.builtin.alloc_tensor`` binding; return ``(shape, dtype, device_key,
    scope)``.

    The tensor type is the binding var's type (TVM reads the call's struct info, which is the
    annotated one): it must be a :class:`TensorType` with a known shape and a known dtype
    equal to ``args[1]``.

    Raises
    ------
    PassError
        Naming the function and the binding, for anything TVM would reject with an internal
        check failure.
    """
    call = binding.value
    var = binding.var
    where = f"function {func_name!r}, binding {var.name!r} = R.builtin.alloc_tensor(...)"
    ty = var.ty
    if not isinstance(ty, TensorType):
        raise PassError(
            f"{where}: the allocated value must have a tensor type (R.Tensor with shape and dtype); "
            f"got {type(ty).__name__ if ty is not None else 'no type'}"
        )
    if ty.shape is None:
        raise PassError(f"{where}: the tensor type must have a known shape; got {ty!r}")
    if not ty.dtype:
        raise PassError(f"{where}: the tensor type must have a known dtype; got {ty!r}")
    args = call.args
    if len(args) < 3:
        raise PassError(f"{where}: expected (shape, dtype, device index[, scope]) arguments; got {len(args)}")
    if not isinstance(args[1], DataTypeImm) or args[1].value != ty.dtype:
        got = args[1].value if isinstance(args[1], DataTypeImm) else args[1]
        raise PassError(f"{where}: dtype argument {got!r} must equal the tensor type's dtype {ty.dtype!r}")
    try:
        check_dtype(ty.dtype)
    except Exception as exc:  # IRError: unknown dtype
        raise PassError(f"{where}: {exc}") from None
    dev = args[2]
    if not isinstance(dev, PrimValue):
        raise PassError(f"{where}: the device index must be a prim value (R.prim_value(0)); got {dev!r}")
    device_key = dev.value.value if type(dev.value) is IntImm else repr(dev.value)
    if len(args) > 3:
        if not isinstance(args[3], StringImm):
            raise PassError(f"{where}: the storage scope must be a string (R.str(\"global\")); got {args[3]!r}")
        scope = args[3].value
    else:
        scope = "global"
    return ty.shape, ty.dtype, device_key, scope


@dataclass(eq=False)
class StorageTokens:
    """Planned allocations of a module and their event program (see the module docstring).

    Token arrays are indexed by token id ``0..n_tok-1``, in allocation (program) order;
    only planned (never discarded) allocations are tokens.
    """

    tok_const: np.ndarray
    """int64[n_tok]: bytes of a constant-size token, -1 for a symbolic size."""
    tok_refs: np.ndarray
    """int64[n_tok]: number of uses (TVM's Init reference count)."""
    tok_start: np.ndarray
    """int64[n_tok]: step of the allocation binding."""
    tok_end: np.ndarray
    """int64[n_tok]: step of the last use, inclusive (``tok_start`` when unused)."""
    tok_func: np.ndarray
    """int64[n_tok]: index of the function (in ``functions``)."""
    ev_kind: np.ndarray
    """int8[n_events]: ``memcore.EV_REQUEST`` (0) or ``memcore.EV_DECREF`` (1)."""
    ev_tok: np.ndarray
    """int64[n_events]: token of each event, in program order."""
    tok_bytes: list
    """PrimExpr bytes of each token (an IntImm for constant sizes)."""
    tok_dtype: list
    tok_scope: list
    tok_device: list
    """Device key: the int runtime device index (or its text when symbolic)."""
    tok_binding: list
    """The ``VarBinding`` of each token's ``R.builtin.alloc_tensor``."""
    tok_block: list
    """Block id (see ``block_*``) of each token's allocation."""
    functions: list
    """``(GlobalVar, Function, VarBounds)`` of each Relax function, in module order."""
    block_scope: list
    """Block id -> scope id (the SeqExpr the block belongs to)."""
    block_is_dataflow: list
    scope_parent: list
    """Scope id -> parent scope id (-1 for a function body)."""
    scope_anchor: list
    """Scope id -> ``(block id, If binding)`` in the parent scope (None for a function body)."""
    alloc_to_token: dict = field(default_factory=dict)
    """Allocation ``VarBinding`` -> token id, for planned allocations."""
    tvm_check_failures: list = field(default_factory=list)
    """Names of the functions on which TVM's pass fails an internal check (ours does not):
    a token allocated in another block appears twice in one call argument."""

    @property
    def n_tok(self) -> int:
        return int(self.tok_const.shape[0])

    def pools(self, *, key_device: bool = True):
        """Dense pool id per token and the pool keys.

        A pool is ``(function index, storage scope, dtype)`` as in TVM (its pool is cleared
        per function), plus the device key when ``key_device`` (TVM ignores the device;
        see DIFFERENCES.md).

        Returns
        -------
        tok_pool : ndarray of shape (n_tok,), dtype=int64
        keys : list of tuple
        """
        ids: dict = {}
        out = np.empty(self.n_tok, dtype=np.int64)
        funcs, scopes, dtypes, devices = self.tok_func.tolist(), self.tok_scope, self.tok_dtype, self.tok_device
        for t in range(self.n_tok):
            key = (funcs[t], scopes[t], dtypes[t], devices[t]) if key_device else (funcs[t], scopes[t], dtypes[t])
            pid = ids.get(key)
            if pid is None:
                pid = ids[key] = len(ids)
            out[t] = pid
        return out, list(ids)

    def sym_classes(self, tok_pool) -> np.ndarray:
        """Reuse class of each symbolic token (-1 for constant sizes): tokens of one pool whose
        sizes TVM proves equal (:func:`~memcore_py.analysis.arith.size_class_key`)."""
        out = np.full(self.n_tok, -1, dtype=np.int64)
        sym = np.flatnonzero(self.tok_const < 0)
        if sym.shape[0] == 0:
            return out
        ids: dict = {}
        pools = tok_pool.tolist()
        for t in sym.tolist():
            key = (pools[t], size_class_key(self.tok_bytes[t]))
            cid = ids.get(key)
            if cid is None:
                cid = ids[key] = len(ids)
            out[t] = cid
        return out


class _StorageAllocatorInit:
    """Port of TVM ``StorageAllocatorInit`` (src/relax/transform/static_plan_block_memory.cc).

    Differences in form, not in result: tokens are ints and discarding marks a token dead
    instead of rewriting every expression that carried it; the reference counting of the
    later ``StorageAllocator`` is recorded as an event list at the same time. Malformed
    allocations raise :class:`PassError` where TVM fails an internal check.
    """

    def __init__(self, mod: IRModule):
        self.mod = mod
        self.prim_names = frozenset(gv.name for gv, f in mod.functions.items() if isinstance(f, PrimFunc))
        # per token
        self.t_const: list = []
        self.t_bytes: list = []
        self.t_dtype: list = []
        self.t_scope: list = []
        self.t_device: list = []
        self.t_binding: list = []
        self.t_block: list = []
        self.t_func: list = []
        self.t_step: list = []
        self.t_refs: list = []
        self.discarded = bytearray()
        # events (before filtering discarded tokens)
        self.ev_kind: list = []
        self.ev_tok: list = []
        self.ev_step: list = []
        # blocks and scopes
        self.block_scope: list = []
        self.block_is_dataflow: list = []
        self.scope_parent: list = []
        self.scope_anchor: list = []
        self.var_tokens: dict = {}
        self.tvm_check_failures: list = []
        self.step = -1
        self.functions: list = []
        self._func_name = ""
        self._func_idx = -1
        self._bounds = None

    # ------------------------------------------------------------------ entry
    def run(self) -> StorageTokens:
        for gv, func in self.mod.functions.items():
            if isinstance(func, Function):
                self._visit_function(gv, func)
        return self._result()

    def _visit_function(self, gv, func: Function):
        self._func_name = gv.name
        self._func_idx = len(self.functions)
        self._bounds = read_var_bounds(func, gv.name)
        self.functions.append((gv, func, self._bounds))
        self.var_tokens = {}
        sid = self._new_scope(-1, None)
        self._visit_seq(func.body, sid)

    def _new_scope(self, parent, anchor):
        self.scope_parent.append(parent)
        self.scope_anchor.append(anchor)
        return len(self.scope_parent) - 1

    # ------------------------------------------------------------------ tokens
    def _discard(self, s):
        """Discard every leaf token of the nested structure ``s``."""
        if s is None:
            return
        if type(s) is int:
            self.discarded[s] = 1
            return
        for f in s:
            self._discard(f)

    def _leaves(self, s, out):
        if type(s) is int:
            out.append(s)
        elif s is not None:
            for f in s:
                self._leaves(f, out)
        return out

    def _tokens_of(self, e):
        """Tokens carried by expression ``e`` (visiting any nested call)."""
        t = type(e)
        if t is Var or t is DataflowVar:
            return self.var_tokens.get(e)
        if t is Tuple:
            fields = [self._tokens_of(f) for f in e.fields]
            for f in fields:
                if f is not None:
                    return tuple(fields)
            return None
        if t is TupleGetItem:
            s = self._tokens_of(e.tuple_value)
            if s is None:
                return None
            if type(s) is int or e.index >= len(s):
                raise PassError(
                    f"function {self._func_name!r}: tuple index {e.index} applied to a value that is not "
                    f"a tuple of that many fields ({e!r})"
                )
            return s[e.index]
        if t is Call:
            return self._visit_call(e, None, None)
        if t is If:
            self._visit_if(e, None, None)
            return None
        if t is SeqExpr:
            raise PassError(f"function {self._func_name!r}: a SeqExpr may only be a function body or an If branch")
        if isinstance(e, Function):
            raise PassError(
                f"function {self._func_name!r}: nested functions are not supported by StaticPlanBlockMemory; "
                "lift them to the module first (LambdaLift)"
            )
        return None

    # ------------------------------------------------------------------ walk
    def _visit_seq(self, seq: SeqExpr, sid: int):
        for block in seq.blocks:
            self._visit_block(block, sid)
        self._discard(self._tokens_of(seq.body))

    def _visit_block(self, block: BindingBlock, sid: int):
        bid = len(self.block_scope)
        self.block_scope.append(sid)
        self.block_is_dataflow.append(isinstance(block, DataflowBlock))
        var_tokens = self.var_tokens
        tokens_of = self._tokens_of
        for b in block.bindings:
            self.step += 1
            value = b.value
            vt = type(value)
            if vt is Call:
                if type(b) is MatchCast:
                    s = self._visit_call(value, None, bid)
                else:
                    s = self._visit_call(value, b, bid)
            elif vt is Var or vt is DataflowVar:
                s = var_tokens.get(value)
            elif vt is If:
                self._visit_if(value, b, bid)
                s = None
            else:
                s = tokens_of(value)
            if s is not None:
                var_tokens[b.var] = s

    def _visit_if(self, e: If, binding, bid):
        self._discard(self._tokens_of(e.cond))
        parent = self.block_scope[bid] if bid is not None else len(self.scope_parent) - 1
        anchor = (bid, binding) if binding is not None else None
        for branch in (e.true_branch, e.false_branch):
            sid = self._new_scope(parent, anchor)
            self._visit_seq(branch, sid)

    def _visit_call(self, call: Call, binding, bid):
        """Handle one call; ``binding`` is its VarBinding when the call is a binding's value
        (only then does TVM's allocator decrement its uses)."""
        op = call.op
        if op is BUILTIN_ALLOC_TENSOR:
            if binding is None:
                raise PassError(
                    f"function {self._func_name!r}: R.builtin.alloc_tensor must be bound directly to a "
                    f"variable (A-normal form); got it nested in an expression"
                )
            return self._create_token(binding, bid)
        if op in INPLACE_MEMORY_OPS or (type(op) is ExternFunc and op.global_symbol == RESHAPE_PACKED):
            args = call.args
            return self._tokens_of(args[0]) if args else None
        top = type(op)
        if (top is GlobalVar and op.name in self.prim_names) or top is ExternFunc or op is CALL_TIR_DYN:
            if bid is None:
                bid = len(self.block_scope) - 1
            t_block, discarded, refs = self.t_block, self.discarded, self.t_refs
            for a in call.args:
                s = self._tokens_of(a)
                if s is None:
                    continue
                leaves = (s,) if type(s) is int else self._leaves(s, [])
                dropped = None
                for t in leaves:
                    if discarded[t]:
                        if dropped is not None and t in dropped:
                            # TVM looks the token up again after discarding it: internal
                            # check failure (DIFFERENCES.md: duplicate-cross-block-leaf).
                            self.tvm_check_failures.append(self._func_name)
                        continue
                    if t_block[t] != bid:
                        discarded[t] = 1
                        if dropped is None:
                            dropped = set()
                        dropped.add(t)
                        continue
                    refs[t] += 1
                    if binding is not None:
                        self.ev_kind.append(_EV_DECREF)
                        self.ev_tok.append(t)
                        self.ev_step.append(self.step)
            return None
        for a in call.args:
            self._discard(self._tokens_of(a))
        return None

    def _create_token(self, binding, bid) -> int:
        shape, dtype, device, scope = alloc_tensor_info(binding, self._func_name)
        try:
            ub = upper_bound_shape(shape, self._bounds)
        except UnsupportedBound:
            raise PassError(
                f"function {self._func_name!r}, binding {binding.var.name!r}: the upper bound of shape "
                f"{list(shape)!r} needs a sign condition (T.Select), which is not supported; mark the "
                f"unbounded vars non-negative (tir_non_negative_var) or bound them (tir_var_upper_bound)"
            ) from None
        nbytes, const = tensor_bytes(ub, dtype)
        t = len(self.t_const)
        self.t_const.append(const)
        self.t_bytes.append(nbytes)
        self.t_dtype.append(dtype)
        self.t_scope.append(scope)
        self.t_device.append(device)
        self.t_binding.append(binding)
        self.t_block.append(bid)
        self.t_func.append(self._func_idx)
        self.t_step.append(self.step)
        self.t_refs.append(0)
        self.discarded.append(0)
        self.ev_kind.append(_EV_REQUEST)
        self.ev_tok.append(t)
        self.ev_step.append(self.step)
        return t

    # ------------------------------------------------------------------ result
    def _result(self) -> StorageTokens:
        n_all = len(self.t_const)
        keep = np.frombuffer(bytes(self.discarded), dtype=np.uint8) == 0 if n_all else np.zeros(0, dtype=bool)
        new_id = np.full(n_all, -1, dtype=np.int64)
        kept = np.flatnonzero(keep)
        new_id[kept] = np.arange(kept.shape[0], dtype=np.int64)
        ev_tok_all = np.asarray(self.ev_tok, dtype=np.int64)
        ev_kind_all = np.asarray(self.ev_kind, dtype=np.int8)
        ev_step_all = np.asarray(self.ev_step, dtype=np.int64)
        ev_keep = keep[ev_tok_all] if ev_tok_all.shape[0] else np.zeros(0, dtype=bool)
        ev_tok = new_id[ev_tok_all[ev_keep]]
        ev_kind = ev_kind_all[ev_keep]
        ev_step = ev_step_all[ev_keep]

        kept_list = kept.tolist()
        tok_start = np.asarray(self.t_step, dtype=np.int64)[kept] if n_all else np.zeros(0, dtype=np.int64)
        tok_end = tok_start.copy()
        dec = ev_kind == _EV_DECREF
        if np.any(dec):
            np.maximum.at(tok_end, ev_tok[dec], ev_step[dec])
        tok_refs = np.asarray(self.t_refs, dtype=np.int64)[kept] if n_all else np.zeros(0, dtype=np.int64)

        def pick(lst):
            return [lst[i] for i in kept_list]

        bindings = pick(self.t_binding)
        return StorageTokens(
            tok_const=np.asarray(self.t_const, dtype=np.int64)[kept] if n_all else np.zeros(0, dtype=np.int64),
            tok_refs=tok_refs,
            tok_start=tok_start,
            tok_end=tok_end,
            tok_func=np.asarray(self.t_func, dtype=np.int64)[kept] if n_all else np.zeros(0, dtype=np.int64),
            ev_kind=np.ascontiguousarray(ev_kind),
            ev_tok=np.ascontiguousarray(ev_tok),
            tok_bytes=pick(self.t_bytes),
            tok_dtype=pick(self.t_dtype),
            tok_scope=pick(self.t_scope),
            tok_device=pick(self.t_device),
            tok_binding=bindings,
            tok_block=pick(self.t_block),
            functions=self.functions,
            block_scope=self.block_scope,
            block_is_dataflow=self.block_is_dataflow,
            scope_parent=self.scope_parent,
            scope_anchor=self.scope_anchor,
            alloc_to_token={b: i for i, b in enumerate(bindings)},
            tvm_check_failures=self.tvm_check_failures,
        )


def analyze_storage_tokens(mod: IRModule) -> StorageTokens:
    """Run StaticPlanBlockMemory's Init phase over ``mod`` (see the module docstring).

    Parameters
    ----------
    mod : IRModule
        A module after CallTIRRewrite (PrimFuncs are skipped).

    Returns
    -------
    StorageTokens

    Raises
    ------
    PassError
        A malformed ``R.builtin.alloc_tensor`` (non-tensor type, unknown shape or dtype, dtype
        argument differing from the type), a bad ``tir_var_*`` attribute, a shape whose upper
        bound TVM would express with ``T.Select``, or a nested function.
    """
    return _StorageAllocatorInit(mod).run()
