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
from functools import cached_property
from operator import itemgetter

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
from .._spbm import decode_events as _decode_events  # compiled; see memcore_py/_spbm.pyx
from .._spbm import walk_block as _walk_block
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
#: events are packed as ``step * _EV_SCALE + 2 * token + kind`` (tokens < 2**31)
_EV_SCALE = 1 << 32
_VAR_TYPES = (Var, DataflowVar)
#: argument expressions that may carry tokens without being a variable
_CARRIERS = frozenset((Tuple, TupleGetItem, Call, If))
#: Across calls: constant-shape ``TensorType`` (by identity; IR nodes are immutable) ->
#: ``(const bytes, bytes IntImm, dtype, scope, device key, argument nodes after the shape)``
#: of a validated allocation. Constant sizes do not depend on the function's var bounds, so
#: a later allocation of the same type with equal arguments skips validation and sizing.
#: Bounded: cleared when full.
_CONST_TYPE_INFO: dict = {}
_CONST_TYPE_INFO_MAX = 4096


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
    tok_info: np.ndarray
    """int64[n_tok]: index into ``infos`` (size, dtype, scope, device and function of a token;
    shared by the allocations of one tensor type)."""
    infos: list
    """``(const bytes, bytes PrimExpr, dtype, scope, device key, function index, argument
    nodes, id)`` tuples, by id."""
    tok_binding: list
    """The ``VarBinding`` of each token's ``R.builtin.alloc_tensor``."""
    tok_block: list
    """Block id (see ``block_*``) of each token's allocation."""
    tok_index: list
    """Position of each token's allocation binding in its block."""
    functions: list
    """``(GlobalVar, Function, VarBounds, body scope id)`` of each Relax function, in module
    order."""
    block_scope: list
    """Block id -> scope id (the SeqExpr the block belongs to)."""
    block_is_dataflow: list
    block_ifs: dict
    """Block id -> ``[(binding position, (then scope id, else scope id)), ...]`` of its Ifs."""
    scope_parent: list
    """Scope id -> parent scope id (-1 for a function body). Scope ids are in visit order:
    a function body, then its If branches depth first."""
    scope_anchor: list
    """Scope id -> ``(block id, If binding, position)`` in the parent scope (None for a
    function body)."""
    scope_blocks: list
    """Scope id -> its block ids, in order (blocks are numbered in visit order)."""
    unplanned_allocs: list = field(default_factory=list)
    """``(binding, block id, position, function index)`` of every ``R.builtin.alloc_tensor``
    whose token was discarded (left unplanned), in program order."""
    tvm_check_failures: list = field(default_factory=list)
    """Names of the functions on which TVM's pass fails an internal check (ours does not):
    a token allocated in another block appears twice in one call argument."""

    @property
    def n_tok(self) -> int:
        return int(self.tok_const.shape[0])

    @property
    def alloc_to_token(self) -> dict:
        """Allocation ``VarBinding`` -> token id, for planned allocations."""
        return dict(zip(self.tok_binding, range(self.n_tok)))

    def _info_column(self, k):
        col = [info[k] for info in self.infos]
        return [col[i] for i in self.tok_info.tolist()]

    @cached_property
    def tok_bytes(self) -> list:
        """PrimExpr bytes of each token (an IntImm for constant sizes)."""
        return self._info_column(1)

    @cached_property
    def tok_dtype(self) -> list:
        return self._info_column(2)

    @cached_property
    def tok_scope(self) -> list:
        return self._info_column(3)

    @cached_property
    def tok_device(self) -> list:
        """Device key: the int runtime device index (or its text when symbolic)."""
        return self._info_column(4)

    def group_ids(self, key_fn):
        """Dense group id per token, for the key ``key_fn(info)`` of each token's info, and
        the keys in order of first use."""
        ids: dict = {}
        info_group = np.empty(len(self.infos), dtype=np.int64)
        for info in self.infos:
            key = key_fn(info)
            gid = ids.get(key)
            if gid is None:
                gid = ids[key] = len(ids)
            info_group[info[7]] = gid
        return info_group[self.tok_info], list(ids)

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
        if key_device:
            return self.group_ids(lambda info: (info[5], info[3], info[2], info[4]))
        return self.group_ids(lambda info: (info[5], info[3], info[2]))

    def sym_classes(self, tok_pool) -> np.ndarray:
        """Reuse class of each symbolic token (-1 for constant sizes): tokens of one pool whose
        sizes TVM proves equal (:func:`~memcore_py.analysis.arith.size_class_key`)."""
        out = np.full(self.n_tok, -1, dtype=np.int64)
        sym = np.flatnonzero(self.tok_const < 0)
        if sym.shape[0] == 0:
            return out
        ids: dict = {}
        pools = tok_pool.tolist()
        tok_info = self.tok_info
        for t in sym.tolist():
            key = (pools[t], size_class_key(self.infos[tok_info[t]][1]))
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

    The binding loop is compiled (:func:`memcore_py._spbm.walk_block`): it handles the common
    post-CallTIRRewrite forms (allocation of a tensor type seen before in the function, direct
    call with variable arguments, rebinding, in-place memory op of a variable) and hands every
    other binding to :meth:`_visit_binding`, in program order. The size of each tensor type
    is cached per function.
    """

    def __init__(self, mod: IRModule):
        self.mod = mod
        # callee (Op, GlobalVar, ExternFunc) -> whether it counts uses (fast path only);
        # prefilled with the module's GlobalVars (a call of a PrimFunc counts, of a Relax
        # function does not) and the in-place memory ops, as _visit_binding would fill it
        call_kind = self._call_kind = dict.fromkeys(INPLACE_MEMORY_OPS, False)
        prim_names = []
        for gv, f in mod.functions.items():
            if type(f) is PrimFunc or isinstance(f, PrimFunc):
                prim_names.append(gv.name)
                call_kind[gv] = True
            else:
                call_kind[gv] = False
        self.prim_names = frozenset(prim_names)
        # per token: (info, binding, step, position in block); info is shared by the
        # allocations of one tensor type: (const bytes, bytes expr, dtype, scope, device,
        # function index, argument nodes after the shape)
        self.tokens: list = []
        self.infos: list = []
        self.t_block: list = []
        self.extra_refs: dict = {}
        """token -> uses by calls that are not a binding's value (counted, never released)"""
        self.discarded: set = set()
        # events, before filtering discarded tokens: step * _EV_SCALE + 2 * token + kind
        # (kind 0: EV_REQUEST, 1: EV_DECREF), one int per event
        self.ev: list = []
        # blocks and scopes
        self.block_scope: list = []
        self.block_is_dataflow: list = []
        self.block_ifs: dict = {}
        self.scope_parent: list = []
        self.scope_anchor: list = []
        self.scope_blocks: list = []
        self.var_tokens: dict = {}
        self.tvm_check_failures: list = []
        self.t_index: list = []
        self.step = -1
        self._bid = -1
        self.functions: list = []
        self._func_name = ""
        self._func_idx = -1
        self._bounds = None
        self._size_cache: dict = {}

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
        self._size_cache = {}
        self.var_tokens = {}
        sid = self._new_scope(-1, None)
        self.functions.append((gv, func, self._bounds, sid))
        self._visit_seq(func.body, sid)

    def _new_scope(self, parent, anchor):
        self.scope_parent.append(parent)
        self.scope_anchor.append(anchor)
        self.scope_blocks.append([])
        return len(self.scope_parent) - 1

    # ------------------------------------------------------------------ tokens
    def _discard(self, s):
        """Discard every leaf token of the nested structure ``s``."""
        if s is None:
            return
        if type(s) is int:
            self.discarded.add(s)
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
        self.scope_blocks[sid].append(bid)
        bindings = block.bindings
        self._bid = bid
        # The compiled loop handles the common post-CallTIRRewrite forms and calls
        # _visit_binding for every other binding (see memcore_py._spbm.walk_block).
        step0 = _walk_block(bindings, bid, self.step + 1, self.var_tokens, self._size_cache, self._call_kind,
                            self.t_block, self.tokens, self.ev, self.discarded, BUILTIN_ALLOC_TENSOR,
                            _CARRIERS, _EV_SCALE, INPLACE_MEMORY_OPS, self._visit_binding,
                            _CONST_TYPE_INFO, self.infos, self._func_idx)
        self._bid = bid
        if bindings:
            self.step = max(self.step, step0 + len(bindings) - 1)

    def _visit_binding(self, b, i, step0):
        """One binding of the current block at position ``i`` (``step0 + i`` is its step);
        returns ``step0`` for the next binding (an If's branches take steps)."""
        bid = self._bid
        var_tokens = self.var_tokens
        value = b.value
        vt = type(value)
        if vt is Call:
            op = value.op
            if op is BUILTIN_ALLOC_TENSOR:
                step = step0 + i
                self.step = step
                if type(b) is MatchCast:
                    s = self._visit_call(value, None, bid)
                    if s is not None:
                        var_tokens[b.var] = s
                    return step0
                var = b.var
                info = self._size_cache.get(var.ty)
                if info is not None and value.args[1:] == info[6]:
                    t = len(self.t_block)
                    self.tokens.append((info, b, step, i))
                    self.t_block.append(bid)
                    self.ev.append(step * _EV_SCALE + t * 2)
                    var_tokens[var] = t
                    return step0
                var_tokens[var] = self._create_token(b, bid, i)
                return step0
            call_kind = self._call_kind
            counting = call_kind.get(op)
            if counting is None:
                top = type(op)
                counting = call_kind[op] = (top is GlobalVar and op.name in self.prim_names) or (
                    top is ExternFunc and op.global_symbol != RESHAPE_PACKED)
            if counting and type(b) is not MatchCast:
                # Counting call (see _visit_call for the general case).
                step = step0 + i
                t_block, discarded = self.t_block, self.discarded
                for a in value.args:
                    s = var_tokens.get(a)
                    if s is None:
                        if type(a) in _VAR_TYPES or type(a) not in _CARRIERS:
                            continue
                        self.step = step
                        s = self._tokens_of(a)
                        if s is None:
                            continue
                    if type(s) is int:
                        if s in discarded:
                            continue
                        if t_block[s] != bid:
                            discarded.add(s)
                            continue
                        self.ev.append(step * _EV_SCALE + s * 2 + 1)
                    else:
                        self.step = step
                        self._use_leaves(self._leaves(s, []), bid, value, True)
                return step0
            self.step = step0 + i
            s = self._visit_call(value, None if type(b) is MatchCast else b, bid, i)
        elif vt is Var or vt is DataflowVar:
            s = var_tokens.get(value)
        elif vt is If:
            self.step = step0 + i
            self._visit_if(value, b, bid, i)
            self._bid = bid
            # the branches' bindings took steps: continue after them
            return self.step - i
        else:
            self.step = step0 + i
            s = self._tokens_of(value)
        if s is not None:
            var_tokens[b.var] = s
        return step0

    def _visit_if(self, e: If, binding, bid, index=-1):
        self._discard(self._tokens_of(e.cond))
        if binding is None:
            raise PassError(
                f"function {self._func_name!r}: an If must be bound directly to a variable (A-normal form); "
                "got it nested in an expression"
            )
        parent = self.block_scope[bid]
        anchor = (bid, binding, index)
        sids = []
        for branch in (e.true_branch, e.false_branch):
            sid = self._new_scope(parent, anchor)
            sids.append(sid)
            self._visit_seq(branch, sid)
        self.block_ifs.setdefault(bid, []).append((index, tuple(sids)))

    def _use_leaves(self, leaves, bid, call, record):
        """Count the uses of one argument's leaf tokens (TVM ``GetTokensWithAllocSiteCheck``
        then ``ref_counter += 1``); ``record``: also emit EV_DECREF events."""
        t_block, discarded = self.t_block, self.discarded
        dropped = None
        for t in leaves:
            if t in discarded:
                if dropped is not None and t in dropped:
                    # TVM looks the token up again after discarding it: internal check
                    # failure (DIFFERENCES.md: duplicate-cross-block-leaf).
                    self.tvm_check_failures.append(self._func_name)
                continue
            if t_block[t] != bid:
                discarded.add(t)
                if dropped is None:
                    dropped = set()
                dropped.add(t)
                continue
            if record:
                self.ev.append(self.step * _EV_SCALE + t * 2 + 1)
            else:
                self.extra_refs[t] = self.extra_refs.get(t, 0) + 1

    def _visit_call(self, call: Call, binding, bid, index=-1):
        """Handle one call; ``binding`` is its VarBinding when the call is a binding's value
        (only then does TVM's allocator decrement its uses)."""
        op = call.op
        if op is BUILTIN_ALLOC_TENSOR:
            if binding is None:
                raise PassError(
                    f"function {self._func_name!r}: R.builtin.alloc_tensor must be bound directly to a "
                    f"variable (A-normal form); got it nested in an expression"
                )
            return self._create_token(binding, bid, index)
        if op in INPLACE_MEMORY_OPS or (type(op) is ExternFunc and op.global_symbol == RESHAPE_PACKED):
            args = call.args
            return self._tokens_of(args[0]) if args else None
        top = type(op)
        if (top is GlobalVar and op.name in self.prim_names) or top is ExternFunc or op is CALL_TIR_DYN:
            if bid is None:
                bid = len(self.block_scope) - 1
            for a in call.args:
                s = self._tokens_of(a)
                if s is not None:
                    self._use_leaves((s,) if type(s) is int else self._leaves(s, []), bid, call, binding is not None)
            return None
        for a in call.args:
            self._discard(self._tokens_of(a))
        return None

    def _create_token(self, binding, bid, index) -> int:
        """Validate a new ``R.builtin.alloc_tensor`` and make its token; the size, dtype, scope
        and device are cached by tensor type (and identical argument nodes)."""
        ty = binding.var.ty
        info = self._size_cache.get(ty)
        args = binding.value.args
        if info is not None and len(args) == 4:
            # Same tensor type, equal argument values (distinct nodes, as parsed from text).
            a1, a2, a3 = args[1], args[2], args[3]
            if (type(a1) is DataTypeImm and a1.value == info[2] and type(a2) is PrimValue
                    and type(a2.value) is IntImm and a2.value.value == info[4]
                    and type(a3) is StringImm and a3.value == info[3]):
                return self._new_token(info, binding, bid, index)
        cached = _CONST_TYPE_INFO.get(ty)
        if cached is not None and len(args) == 4:
            a1, a2, a3 = args[1], args[2], args[3]
            if (type(a1) is DataTypeImm and a1.value == cached[2] and type(a2) is PrimValue
                    and type(a2.value) is IntImm and a2.value.value == cached[4]
                    and type(a3) is StringImm and a3.value == cached[3]):
                info = (cached[0], cached[1], cached[2], cached[3], cached[4], self._func_idx, args[1:],
                        len(self.infos))
                self.infos.append(info)
                self._size_cache[ty] = info
                return self._new_token(info, binding, bid, index)
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
        info = (const, nbytes, dtype, scope, device, self._func_idx, binding.value.args[1:], len(self.infos))
        self.infos.append(info)
        self._size_cache[binding.var.ty] = info
        if const >= 0 and all(type(d) is IntImm for d in shape):
            if len(_CONST_TYPE_INFO) >= _CONST_TYPE_INFO_MAX:
                _CONST_TYPE_INFO.clear()
            _CONST_TYPE_INFO[ty] = info[:5]
        return self._new_token(info, binding, bid, index)

    def _new_token(self, info, binding, bid, index) -> int:
        t = len(self.t_block)
        self.tokens.append((info, binding, self.step, index))
        self.t_block.append(bid)
        self.ev.append(self.step * _EV_SCALE + t * 2)
        return t

    # ------------------------------------------------------------------ result
    def _result(self) -> StorageTokens:
        n_all = len(self.t_block)
        # compiled: filter the discarded tokens, renumber, start / last use / uses per token
        ev_kind, ev_tok, tok_start, tok_end, tok_refs, new_id = _decode_events(
            self.ev, n_all, self.discarded, _EV_SCALE)
        n_tok = tok_start.shape[0]
        tokens = self.tokens
        if n_tok == n_all:
            rows = tokens
            kept_list = None
        else:
            kept_list = np.flatnonzero(new_id >= 0).tolist()
            rows = [tokens[i] for i in kept_list]
        tok_info = np.fromiter(map(itemgetter(7), map(itemgetter(0), rows)), dtype=np.int64, count=n_tok)
        info_const = np.fromiter(map(itemgetter(0), self.infos), dtype=np.int64, count=len(self.infos))
        info_func = np.fromiter(map(itemgetter(5), self.infos), dtype=np.int64, count=len(self.infos))
        # uses by nested calls are counted too (never released: TVM would fail its block-end check)
        for t, k in self.extra_refs.items():
            if new_id[t] >= 0:
                tok_refs[new_id[t]] += k
        t_block = self.t_block
        return StorageTokens(
            tok_const=info_const[tok_info],
            tok_refs=tok_refs,
            tok_start=tok_start,
            tok_end=tok_end,
            tok_func=info_func[tok_info],
            ev_kind=ev_kind,
            ev_tok=ev_tok,
            tok_info=tok_info,
            infos=self.infos,
            tok_binding=list(map(itemgetter(1), rows)),
            tok_block=t_block if rows is tokens else [t_block[i] for i in kept_list],
            tok_index=list(map(itemgetter(3), rows)),
            functions=self.functions,
            block_scope=self.block_scope,
            block_is_dataflow=self.block_is_dataflow,
            block_ifs=self.block_ifs,
            scope_parent=self.scope_parent,
            scope_anchor=self.scope_anchor,
            scope_blocks=self.scope_blocks,
            tvm_check_failures=self.tvm_check_failures,
            unplanned_allocs=[(tokens[i][1], t_block[i], tokens[i][3], tokens[i][0][5])
                              for i in sorted(self.discarded)],
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
