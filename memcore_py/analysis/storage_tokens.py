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

Result (:class:`StorageTokens`), in two parts so that a planner needs only the first:

- :class:`TokenProgram` (planning input, flat arrays): per planned token its bytes
  (constant, or a symbolic expression with a reuse class), pool attributes
  (:class:`TokenInfo`), reference count and lifetime steps; and the *event program* of
  StaticPlanBlockMemory's second phase (TVM ``StorageAllocator``) in program order:
  ``EV_REQUEST`` at each planned allocation, ``EV_DECREF`` for each use at the using call —
  exactly the input of :func:`memcore.plan_tokens`.
- :class:`AllocationSites` (rewrite input): where each token's allocation binding sits
  (block id, position), the block / scope tree of every function (for storage emission
  sites), the ``If`` bindings on the way, and the allocations left unplanned.

Steps are binding positions in visit order, **module-wide** and increasing (the bindings of an
If's branches come right after the If binding's own step); positions in ``AllocationSites``
are **per block** (see DESIGN.md's step numberings). A token's lifetime is
``[step of its allocation, step of its last use]``, inclusive (its allocation step when
unused); a token never outlives its block, because a use in another block discards it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, partial
from operator import attrgetter
from typing import NamedTuple

import numpy as np

from .._compiled import load_compiled
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
from ..ir.memo import MEMO
from ..ir.module import IRModule
from ..ir.op import RESHAPE_PACKED, get_op, shares_storage
from ..ir.ops import SHARES_STORAGE_OPS
from ..ir.prim import IntImm, PrimExpr
from ..ir.types import TensorType, check_dtype, tensor_size_problem
from .arith import (
    ATTR_TIR_NON_NEGATIVE_VAR,
    ATTR_TIR_VAR_LOWER_BOUND,
    ATTR_TIR_VAR_UPPER_BOUND,
    EMPTY_BOUNDS,
    UnsupportedBound,
    VarBounds,
    read_var_bounds,
    size_class_key,
    tensor_bytes,
    upper_bound_shape,
)

__all__ = [
    "StorageTokens",
    "TokenProgram",
    "TokenInfo",
    "AllocationSites",
    "FunctionEntry",
    "UnplannedAlloc",
    "analyze_storage_tokens",
    "BUILTIN_ALLOC_TENSOR",
    "alloc_tensor_info",
]

BUILTIN_ALLOC_TENSOR = get_op("relax.builtin.alloc_tensor")
CALL_TIR_DYN = get_op("relax.vm.call_tir_dyn")

_VAR_TYPES = (Var, DataflowVar)
#: argument expressions that may carry tokens without being a variable
_CARRIERS = frozenset((Tuple, TupleGetItem, Call, If))
#: Across calls: constant-shape ``TensorType`` (by identity; IR nodes are immutable) ->
#: :class:`TokenInfo` of a validated allocation of it. Constant sizes do not depend on the
#: function's var bounds, so a later allocation of the same type with equal arguments skips
#: validation and sizing (only ``const_bytes`` .. ``device`` are reused). The memo tables here
#: are memcore_py.ir.memo's (one size policy).
_CONST_TYPE_INFO_GROUP = MEMO.group("analysis.storage_tokens.const_type_info")
_CONST_TYPE_INFO = _CONST_TYPE_INFO_GROUP.table
#: Across calls: bounds key (:func:`_bounds_key`) -> {TensorType with a symbolic dim ->
#: :class:`TokenInfo` of a validated allocation of it under those ``tir_var_*`` bounds}. The
#: upper-bounded size of a symbolic shape depends on the type's dims and the function's var
#: bounds only, so it is computed once per distinct (type, bounds) instead of once per
#: function and call (sizing a symbolic shape runs the bound arithmetic of
#: :mod:`~memcore_py.analysis.arith`, in Python); the compiled walk looks types up in
#: the current function's inner dict (an inner dict is emptied when it holds the memo policy's
#: ``max_entries``).
_SYM_TYPE_INFO_GROUP = MEMO.group("analysis.storage_tokens.sym_type_info")
_SYM_TYPE_INFO = _SYM_TYPE_INFO_GROUP.table
#: Across calls: ``(params, return type, id(attrs))`` of a Relax function -> ``(copy of its
#: attrs, VarBounds, bounds key)``: :func:`~memcore_py.analysis.arith.read_var_bounds` walks
#: the signature types (in Python). The bounds depend on the attributes
#: and the signature only; the stored copy of the attributes must still equal the
#: function's.
_FUNC_BOUNDS_GROUP = MEMO.group("analysis.storage_tokens.function_bounds")
_FUNC_BOUNDS = _FUNC_BOUNDS_GROUP.table
#: Across calls: symbolic size expression (by identity, kept alive by the key) -> its
#: :func:`~memcore_py.analysis.arith.size_class_key` (canonicalisation is Python arithmetic
#: on the expression tree, costly next to a dict lookup).
_SIZE_CLASS_KEY_GROUP = MEMO.group("analysis.storage_tokens.size_class_key")
_SIZE_CLASS_KEY = _SIZE_CLASS_KEY_GROUP.table


class TokenInfo(NamedTuple):
    """What the allocations of one tensor type in one function share (a token's pool
    attributes and size). Shared by all tokens of that type; ``id`` indexes
    :attr:`TokenProgram.infos`."""

    const_bytes: int
    """Bytes of a constant size, -1 for a symbolic one."""
    nbytes: PrimExpr
    """Size in bytes (an ``IntImm`` for a constant size) of the upper-bounded shape."""
    dtype: str
    scope: str
    """Storage scope (``"global"``)."""
    device: object
    """Device key: the int runtime device index (or its text when symbolic)."""
    func: int
    """Index of the function in :attr:`AllocationSites.functions`."""
    args: tuple
    """The allocation's argument nodes after the shape (to recognise equal allocations)."""
    id: int


#: ``TokenInfo`` from one tuple, without NamedTuple's Python-level ``__new__`` (hot path)
_token_info = partial(tuple.__new__, TokenInfo)
#: TokenProgram.pools's keys of a TokenInfo, with and without the device
_POOL_KEY = attrgetter("func", "scope", "dtype", "device")
_POOL_KEY_ANY_DEVICE = attrgetter("func", "scope", "dtype")


class FunctionEntry(NamedTuple):
    """One Relax function of the analysed module."""

    gv: GlobalVar
    func: Function
    bounds: VarBounds
    """Its ``tir_var_*`` bounds."""
    scope: int
    """Scope id of its body."""


#: The storage-sharing ops, none of which counts uses: the start of every walk's callee table
_SHARING_OPS_KIND = dict.fromkeys(SHARES_STORAGE_OPS, False)

#: ``FunctionEntry`` from one tuple, without NamedTuple's Python-level ``__new__``
_function_entry = partial(tuple.__new__, FunctionEntry)


class UnplannedAlloc(NamedTuple):
    """An ``R.builtin.alloc_tensor`` whose token was discarded (left unplanned)."""

    binding: object
    block: int
    position: int
    """Position of the binding in its block."""
    func: int


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


def alloc_token_info(binding, func_name: str, func_idx: int, bounds: VarBounds, info_id: int) -> TokenInfo:
    """The :class:`TokenInfo` (id ``info_id``) of the ``R.builtin.alloc_tensor`` binding
    ``binding`` in the ``func_idx``-th function, ``func_name``, whose ``tir_var_*`` bounds are
    ``bounds``: its size is that of the upper-bounded shape (spec §1.2/§1.6).

    Raises
    ------
    PassError
        :func:`alloc_tensor_info`'s, a shape whose upper bound needs ``T.Select``, or a tensor
        that cannot exist (a negative dim, a size over int64).
    """
    shape, dtype, device, scope = alloc_tensor_info(binding, func_name)
    try:
        ub = upper_bound_shape(shape, bounds)
    except UnsupportedBound:
        raise PassError(
            f"function {func_name!r}, binding {binding.var.name!r}: the upper bound of shape "
            f"{list(shape)!r} needs a sign condition (T.Select), which is not supported; mark the "
            f"unbounded vars non-negative (tir_non_negative_var) or bound them (tir_var_upper_bound)"
        ) from None
    why = tensor_size_problem(ub, dtype)
    if why is not None:
        raise PassError(f"function {func_name!r}, binding {binding.var.name!r}: the allocated tensor {why}")
    nbytes, const = tensor_bytes(ub, dtype)
    return _token_info((const, nbytes, dtype, scope, device, func_idx, binding.value.args[1:], info_id))


@dataclass(eq=False)
class TokenProgram:
    """Planned allocations as flat arrays and their event program: everything a planner
    needs, nothing about where the allocations sit in the IR.

    Token arrays are indexed by token id ``0..n_tok-1``, in allocation (program) order;
    only planned (never discarded) allocations are tokens. Steps are module-wide.
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
    """int64[n_tok]: index of the function (in ``function_names``)."""
    ev_kind: np.ndarray
    """int8[n_events]: ``memcore.EV_REQUEST`` (0) or ``memcore.EV_DECREF`` (1)."""
    ev_tok: np.ndarray
    """int64[n_events]: token of each event, in program order."""
    tok_info: np.ndarray
    """int64[n_tok]: index into ``infos``."""
    infos: list
    """:class:`TokenInfo` records, by id."""
    function_names: list
    """Name of each analysed Relax function, in module order."""
    n_symbolic: int = -1
    """Number of tokens with a symbolic size (-1: not counted; :attr:`has_symbolic` counts)."""

    @property
    def n_tok(self) -> int:
        return int(self.tok_const.shape[0])

    @property
    def has_symbolic(self) -> bool:
        """Whether some token has a symbolic size (``tok_const == -1``)."""
        if self.n_symbolic >= 0:
            return self.n_symbolic > 0
        return bool((self.tok_const < 0).any())

    def _info_column(self, name):
        col = [getattr(info, name) for info in self.infos]
        return [col[i] for i in self.tok_info.tolist()]

    @cached_property
    def tok_bytes(self) -> list:
        """PrimExpr bytes of each token (an IntImm for constant sizes)."""
        return self._info_column("nbytes")

    @cached_property
    def tok_scope(self) -> list:
        return self._info_column("scope")

    @cached_property
    def tok_device(self) -> list:
        """Device key: the int runtime device index (or its text when symbolic)."""
        return self._info_column("device")

    def group_ids(self, key_fn):
        """Dense group id per token, for the key ``key_fn(info)`` of each token's
        :class:`TokenInfo`, and the keys in order of first use (``key_fn`` is called once per
        TokenInfo; an ``operator.attrgetter`` is the cheap one)."""
        keys = list(map(key_fn, self.infos))  # by TokenInfo.id, which is the position in infos
        if keys and keys.count(keys[0]) == len(keys):  # one group (the common case)
            return np.zeros(self.tok_info.shape[0], dtype=np.int64), keys[:1]
        ids: dict = {}
        info_group = [ids.setdefault(key, len(ids)) for key in keys]
        return np.array(info_group, dtype=np.int64)[self.tok_info], list(ids)

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
        return self.group_ids(_POOL_KEY if key_device else _POOL_KEY_ANY_DEVICE)

    def sym_classes(self, tok_pool) -> np.ndarray:
        """Reuse class of each symbolic token (-1 for constant sizes): tokens of one pool whose
        sizes TVM proves equal (:func:`~memcore_py.analysis.arith.size_class_key`)."""
        out = np.full(self.n_tok, -1, dtype=np.int64)
        sym = np.flatnonzero(self.tok_const < 0)
        if sym.shape[0] == 0:
            return out
        ids: dict = {}
        pools = tok_pool.tolist()
        tok_info = self.tok_info.tolist()
        infos = self.infos
        for t in sym.tolist():
            nbytes = infos[tok_info[t]].nbytes
            skey = _SIZE_CLASS_KEY.get(nbytes)
            if skey is None:
                skey = _SIZE_CLASS_KEY_GROUP.put(nbytes, size_class_key(nbytes))
            key = (pools[t], skey)
            cid = ids.get(key)
            if cid is None:
                cid = ids[key] = len(ids)
            out[t] = cid
        return out


@dataclass(eq=False)
class AllocationSites:
    """Where the planned allocations sit in the IR: what a rewriter needs to place storages
    and rewrite allocations. Positions are per block; block and scope ids are in visit order.
    """

    tok_binding: list
    """The ``VarBinding`` of each token's ``R.builtin.alloc_tensor``."""
    tok_block: list
    """Block id of each token's allocation."""
    tok_index: list
    """Position of each token's allocation binding in its block."""
    functions: list
    """:class:`FunctionEntry` of each Relax function, in module order."""
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
    """Scope id -> its block ids, in order."""
    unplanned_allocs: list = field(default_factory=list)
    """:class:`UnplannedAlloc` of every ``R.builtin.alloc_tensor`` whose token was discarded,
    in program order."""


@dataclass(eq=False)
class StorageTokens:
    """Result of :func:`analyze_storage_tokens`."""

    program: TokenProgram
    sites: AllocationSites
    tvm_check_failures: list = field(default_factory=list)
    """Names of the functions on which TVM's pass fails an internal check (ours does not):
    a token allocated in another block appears twice in one call argument."""


def _bounds_key(bounds: VarBounds):
    """Hashable form of a function's var bounds (the sizes of symbolic shapes depend on it)."""
    if not bounds:
        return None
    return (tuple(sorted(bounds.ranges.items())), frozenset(bounds.non_negative))


def _function_bounds(func: Function, name: str):
    """``(VarBounds, bounds key)`` of ``func`` (:func:`read_var_bounds`), cached across calls
    (see ``_FUNC_BOUNDS``). A function without ``tir_var_*`` attributes (the common case) has
    no bounds; it is neither read nor cached."""
    attrs = func.attrs
    if (ATTR_TIR_VAR_UPPER_BOUND not in attrs and ATTR_TIR_VAR_LOWER_BOUND not in attrs
            and ATTR_TIR_NON_NEGATIVE_VAR not in attrs):
        return EMPTY_BOUNDS, None
    key = (func.params, func.ret_ty if func.ret_ty is not None else func.body.ty, id(attrs))
    hit = _FUNC_BOUNDS.get(key)
    if hit is not None and _equal_attrs(hit[0], attrs):
        return hit[1], hit[2]
    bounds = read_var_bounds(func, name)
    bkey = _bounds_key(bounds)
    # the copy keeps the attrs' contents (one level into dict / list values, as the tir_var_*
    # attributes are) to compare; the key's id(attrs) stays valid while the entry holds the
    # dict itself
    snapshot = {k: (dict(v) if type(v) is dict else list(v) if type(v) is list else v) for k, v in attrs.items()}
    _FUNC_BOUNDS_GROUP.put(key, (snapshot, bounds, bkey, attrs))
    return bounds, bkey


def _equal_attrs(a: dict, b: dict) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - a value whose == is not a bool (an array): not equal
        return False


class _StorageAllocatorInit:
    """Port of TVM ``StorageAllocatorInit`` (src/relax/transform/static_plan_block_memory.cc).

    Differences in form, not in result: tokens are ints and discarding marks a token dead
    instead of rewriting every expression that carried it; the reference counting of the
    later ``StorageAllocator`` is recorded as an event list at the same time. Malformed
    allocations raise :class:`PassError` where TVM fails an internal check.

    The token rows, the event list and the binding loop are compiled
    (:class:`memcore_py.analysis._storage_walk.InitWalk`): the loop handles the common
    post-CallTIRRewrite forms (allocation of a tensor type seen before in the function, direct
    call with variable arguments, rebinding, storage-sharing op of a variable) and hands every
    other binding to :meth:`_visit_binding`, in program order. The size of each tensor type
    is cached per function.
    """

    # one instance per analysis: slots make its ~30 fields cheaper to set, read and free
    __slots__ = ("mod", "_call_kind", "prim_names", "_same_alloc_args", "walk", "t_block", "t_info", "t_binding",
                 "t_index", "infos", "discarded", "extra_refs", "block_scope", "block_is_dataflow", "block_ifs",
                 "scope_parent", "scope_anchor", "scope_blocks", "tvm_check_failures", "step", "_bid", "functions",
                 "function_names",
                 "_func_name", "_func_idx", "_bounds", "_bounds_key", "_sym_info")

    def __init__(self, mod: IRModule):
        self.mod = mod
        # callee (Op, GlobalVar, ExternFunc) -> whether it counts uses (fast path only);
        # prefilled with the module's GlobalVars (a call of a PrimFunc counts, of a Relax
        # function does not) and the storage-sharing ops, as _visit_binding would fill it
        call_kind = self._call_kind = _SHARING_OPS_KIND.copy()
        prim_names = []
        for gv, f in mod.functions.items():
            if isinstance(f, PrimFunc):
                prim_names.append(gv.name)
                call_kind[gv] = True
            else:
                call_kind[gv] = False
        self.prim_names = frozenset(prim_names)
        compiled = load_compiled("memcore_py.analysis._storage_walk")
        self._same_alloc_args = compiled.same_alloc_args
        walk = self.walk = compiled.InitWalk(
            BUILTIN_ALLOC_TENSOR, SHARES_STORAGE_OPS, _CARRIERS, call_kind, _CONST_TYPE_INFO, TokenInfo)
        # token rows (struct of arrays, every allocation seen) and the shared TokenInfos
        self.t_block: list = walk.t_block
        self.t_info: list = walk.t_info
        self.t_binding: list = walk.t_binding
        self.t_index: list = walk.t_index
        self.infos: list = walk.infos
        self.discarded: set = walk.discarded
        self.extra_refs: dict = {}
        """token -> uses by calls that are not a binding's value (counted, never released)"""
        # blocks and scopes
        self.block_scope: list = []
        self.block_is_dataflow: list = []
        self.block_ifs: dict = {}
        self.scope_parent: list = []
        self.scope_anchor: list = []
        self.scope_blocks: list = []
        self.tvm_check_failures: list = []
        self.step = -1
        self._bid = -1
        self.functions: list = []
        self.function_names: list = []
        self._func_name = ""
        self._func_idx = -1
        self._bounds = None
        self._bounds_key = None
        self._sym_info: dict | None = None  # set per function

    # ------------------------------------------------------------------ entry
    def run(self) -> StorageTokens:
        for gv, func in self.mod.functions.items():
            if isinstance(func, Function):
                self._visit_function(gv, func)
        return self._result()

    def _visit_function(self, gv, func: Function):
        self._func_name = gv.name
        self._func_idx = len(self.functions)
        self._bounds, self._bounds_key = _function_bounds(func, gv.name)
        sym_info = _SYM_TYPE_INFO.get(self._bounds_key)
        if sym_info is None:
            sym_info = _SYM_TYPE_INFO_GROUP.put(self._bounds_key, {})
        self._sym_info = sym_info
        self.walk.begin_function(self._func_idx, sym_info)
        sid = self._new_scope(-1, None)
        self.functions.append(_function_entry((gv, func, self._bounds, sid)))
        self.function_names.append(gv.name)
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
            return self.walk.var_tokens.get(e)
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
        body = seq.body
        tb = type(body)
        if tb is Var or tb is DataflowVar:  # the common result: a variable (_tokens_of's first case)
            self._discard(self.walk.var_tokens.get(body))
        else:
            self._discard(self._tokens_of(body))

    def _visit_block(self, block: BindingBlock, sid: int):
        bid = len(self.block_scope)
        self.block_scope.append(sid)
        self.block_is_dataflow.append(isinstance(block, DataflowBlock))
        self.scope_blocks[sid].append(bid)
        bindings = block.bindings
        self._bid = bid
        # The compiled loop handles the common post-CallTIRRewrite forms and calls
        # _visit_binding for every other binding.
        step0 = self.walk.walk(bindings, bid, self.step + 1, self._visit_binding)
        self._bid = bid
        if bindings:
            last = step0 + len(bindings) - 1
            if last > self.step:
                self.step = last

    def _visit_binding(self, b, i, step0):
        """One binding of the current block at position ``i`` (``step0 + i`` is its step);
        returns ``step0`` for the next binding (an If's branches take steps)."""
        bid = self._bid
        var_tokens = self.walk.var_tokens
        value = b.value
        vt = type(value)
        if vt is Call:
            op = value.op
            if op is BUILTIN_ALLOC_TENSOR:
                self.step = step0 + i
                if type(b) is MatchCast:
                    s = self._visit_call(value, None, bid)
                    if s is not None:
                        var_tokens[b.var] = s
                    return step0
                var_tokens[b.var] = self._create_token(b, bid, i)
                return step0
            call_kind = self._call_kind
            counting = call_kind.get(op)
            if counting is None:
                top = type(op)
                counting = call_kind[op] = (top is GlobalVar and op.name in self.prim_names) or (
                    top is ExternFunc and op.global_symbol != RESHAPE_PACKED)
            self.step = step0 + i
            if counting and type(b) is not MatchCast:
                # counting call with some argument that is not a plain variable
                self._count_uses(value, bid, True)
                return step0
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

    def _count_uses(self, call, bid, record):
        """A call that uses its arguments' tokens: count every leaf of every argument."""
        for a in call.args:
            s = self._tokens_of(a)
            if s is not None:
                self._use_leaves((s,) if type(s) is int else self._leaves(s, []), bid, record)

    def _use_leaves(self, leaves, bid, record):
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
                self.walk.use(self.step, t)
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
        if shares_storage(op):
            args = call.args
            return self._tokens_of(args[0]) if args else None
        top = type(op)
        if (top is GlobalVar and op.name in self.prim_names) or top is ExternFunc or op is CALL_TIR_DYN:
            if bid is None:
                bid = len(self.block_scope) - 1
            self._count_uses(call, bid, binding is not None)
            return None
        for a in call.args:
            self._discard(self._tokens_of(a))
        return None

    def _create_token(self, binding, bid, index) -> int:
        """Validate a new ``R.builtin.alloc_tensor`` and make its token; the size, dtype, scope
        and device are cached by tensor type (and equal argument values)."""
        ty = binding.var.ty
        args = binding.value.args
        walk = self.walk
        info = walk.size_cache.get(ty)
        if info is not None and (args[1:] == info.args or self._same_alloc_args(args, info)):
            return walk.new_token(info, binding, bid, index, self.step)
        cached = _CONST_TYPE_INFO.get(ty)
        sym_info = None
        if cached is None:
            sym_info = self._sym_info
            cached = sym_info.get(ty)
        if cached is not None and self._same_alloc_args(args, cached):
            info = _token_info((cached.const_bytes, cached.nbytes, cached.dtype, cached.scope, cached.device,
                                self._func_idx, args[1:], len(self.infos)))
        else:
            info = alloc_token_info(binding, self._func_name, self._func_idx, self._bounds, len(self.infos))
            if info.const_bytes >= 0 and all(type(d) is IntImm for d in binding.var.ty.shape):
                _CONST_TYPE_INFO_GROUP.put(ty, info)
            elif sym_info is not None:
                if len(sym_info) >= MEMO.max_entries:
                    sym_info.clear()
                sym_info[ty] = info
        self.infos.append(info)
        walk.size_cache[ty] = info
        return walk.new_token(info, binding, bid, index, self.step)

    # ------------------------------------------------------------------ result
    def _result(self) -> StorageTokens:
        program, (t_block, t_binding, t_index) = walk_program(self.walk, self.function_names, self.extra_refs)
        if self.discarded:
            all_block, all_info, all_binding, all_index = self.t_block, self.t_info, self.t_binding, self.t_index
            new = tuple.__new__  # without NamedTuple's Python-level __new__
            unplanned = [new(UnplannedAlloc, (all_binding[i], all_block[i], all_index[i], all_info[i][5]))  # .func
                         for i in sorted(self.discarded)]
        else:
            unplanned = []
        sites = AllocationSites(t_binding, t_block, t_index, self.functions, self.block_scope, self.block_is_dataflow,
                                self.block_ifs, self.scope_parent, self.scope_anchor, self.scope_blocks, unplanned)
        return StorageTokens(program, sites, self.tvm_check_failures)


def walk_program(walk, function_names: list, extra_refs: dict | None = None):
    """The :class:`TokenProgram` of a finished Init walk (a compiled ``InitWalk`` fed by
    :class:`_StorageAllocatorInit`, or by the extraction over TVM's objects), and the rows
    ``(t_block, t_binding, t_index)`` of its kept tokens.

    ``extra_refs``: token -> uses by calls that are not a binding's value (counted, never
    released: TVM would fail its block-end check)."""
    # compiled: filter the discarded tokens, renumber, start / last use / uses per token
    (ev_kind, ev_tok, tok_start, tok_end, tok_refs, tok_info, tok_const, tok_func, n_symbolic, kept,
     new_id) = walk.decode(bool(extra_refs))  # new ids needed only for extra_refs
    if extra_refs:
        for t, k in extra_refs.items():
            if new_id[t] >= 0:
                tok_refs[new_id[t]] += k
    # positional construction (keyword arguments cost twice as much on these records): the
    # fields in declaration order
    program = TokenProgram(tok_const, tok_refs, tok_start, tok_end, tok_func, ev_kind, ev_tok, tok_info, walk.infos,
                           function_names, n_symbolic)
    return program, kept


def analyze_storage_tokens(mod: IRModule) -> StorageTokens:
    """Run StaticPlanBlockMemory's Init phase over ``mod`` (see the module docstring).

    Parameters
    ----------
    mod : IRModule
        A module after CallTIRRewrite (PrimFuncs are skipped).

    Returns
    -------
    StorageTokens
        ``.program`` (:class:`TokenProgram`) for planning, ``.sites``
        (:class:`AllocationSites`) for the rewrite.

    Raises
    ------
    PassError
        A malformed ``R.builtin.alloc_tensor`` (non-tensor type, unknown shape or dtype, dtype
        argument differing from the type), a bad ``tir_var_*`` attribute, a shape whose upper
        bound TVM would express with ``T.Select``, or a nested function.
    """
    return _StorageAllocatorInit(mod).run()

