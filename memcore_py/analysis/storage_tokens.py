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

Where it lives: these rules are applied once, by the compiled rule kernel
(:class:`memcore_py.analysis._storage_walk.InitRules`) over the binding table that a reader
fills (memcore's IR: :mod:`memcore_py.analysis._ir_reader`; TVM's objects:
:mod:`memcore_py.tvm._table_reader`). This module holds what a reader asks (the callee
properties, :func:`callee_flags`), the sizing of an allocation (:func:`alloc_token_info`), the
records of the result, and the driver over memcore's IR (:func:`analyze_storage_tokens`).

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
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    PrimFunc,
    PrimValue,
    StringImm,
)
from ..ir.memo import MEMO
from ..ir.module import IRModule
from ..ir.op import Op, get_op, shares_storage
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
    size_struct_key,
    tensor_bytes,
    upper_bound_shape,
)

__all__ = [
    "BUILTIN_ALLOC_TENSOR",
    "AllocationSites",
    "FunctionEntry",
    "StorageTokens",
    "TokenInfo",
    "TokenProgram",
    "UnplannedAlloc",
    "alloc_tensor_info",
    "analyze_storage_tokens",
]

BUILTIN_ALLOC_TENSOR = get_op("relax.builtin.alloc_tensor")
CALL_TIR_DYN = get_op("relax.vm.call_tir_dyn")
CALL_TIR = get_op("relax.call_tir")

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
#: Across calls: the structure of a symbolic size
#: (:func:`~memcore_py.analysis.arith.size_struct_key`) -> its
#: :func:`~memcore_py.analysis.arith.size_class_key` (canonicalisation is Python arithmetic on
#: the expression tree, costly next to the structure's key). Keyed by structure, not by the
#: expression object, so that sizes read again (each pass call reads new objects) find it.
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
    ``bounds``: its size is that of the upper-bounded shape (spec §1.2/§1.6,
    :func:`token_size`).

    Raises
    ------
    PassError
        :func:`alloc_tensor_info`'s or :func:`token_size`'s.
    """
    shape, dtype, device, scope = alloc_tensor_info(binding, func_name)
    const, nbytes = token_size(shape, dtype, bounds, func_name, binding.var.name)
    return _token_info((const, nbytes, dtype, scope, device, func_idx, binding.value.args[1:], info_id))


def token_size(shape, dtype: str, bounds: VarBounds, func_name: str, var_name: str):
    """``(constant bytes or -1, bytes)`` of a storage token for a tensor of ``shape`` and
    ``dtype`` (valid) in a function whose ``tir_var_*`` bounds are ``bounds``: the bytes of
    the upper-bounded shape (:func:`~memcore_py.analysis.arith.upper_bound_shape`,
    :func:`~memcore_py.analysis.arith.tensor_bytes`).

    Raises
    ------
    PassError
        Naming the function and the variable ``var_name``: a shape whose upper bound needs
        ``T.Select``, or a tensor that cannot exist (a negative dim, a size over int64, or a
        product of its constant dims over int64 before a zero dim).
    """
    try:
        ub = upper_bound_shape(shape, bounds)
    except UnsupportedBound:
        raise PassError(
            f"function {func_name!r}, binding {var_name!r}: the upper bound of shape "
            f"{list(shape)!r} needs a sign condition (T.Select), which is not supported; mark the "
            f"unbounded vars non-negative (tir_non_negative_var) or bound them (tir_var_upper_bound)"
        ) from None
    why = tensor_size_problem(ub, dtype)
    if why is not None:
        raise PassError(f"function {func_name!r}, binding {var_name!r}: the allocated tensor {why}")
    try:
        nbytes, const = tensor_bytes(ub, dtype)
    except OverflowError as exc:  # a product over int64 before a zero dim (TVM's wraps)
        raise PassError(f"function {func_name!r}, binding {var_name!r}: the allocated tensor's size: {exc}") from None
    return const, nbytes


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
        info_key: dict = {}  # TokenInfo id -> its size's class key (tokens of one type share it)
        pools = tok_pool.tolist()
        tok_info = self.tok_info.tolist()
        infos = self.infos
        for t in sym.tolist():
            i = tok_info[t]
            skey = info_key.get(i)
            if skey is None:
                nbytes = infos[i].nbytes
                struct = size_struct_key(nbytes)
                if struct is None:  # a node the structure does not key: asked each time
                    skey = size_class_key(nbytes)
                else:
                    skey = _SIZE_CLASS_KEY.get(struct)
                    if skey is None:
                        skey = _SIZE_CLASS_KEY_GROUP.put(struct, size_class_key(nbytes))
                info_key[i] = skey
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


def callee_flags(prim_names: frozenset, callee) -> int:
    """The ``CALLEE_*`` properties (``memcore_py/analysis/_binding_table.pxd``) of a call's
    callee in a module whose PrimFuncs are named ``prim_names``: ``R.builtin.alloc_tensor``
    allocates; the storage-sharing ops (:func:`~memcore_py.ir.op.shares_storage`) share their
    first argument's storage; a PrimFunc of the module, an ``ExternFunc`` and
    ``R.vm.call_tir_dyn`` use their arguments (kernels reading and writing them); an op's kill
    role (``Op.kill_role``) gives ``CALLEE_STORAGE``, ``CALLEE_KILL`` or ``CALLEE_NO_REGISTER``;
    an op DataflowUseInplaceCalls may compute in place (``Op.inplace``) ``CALLEE_INPLACE``;
    ``R.call_tir`` (whose PrimFunc AttachAttrLayoutFreeBuffers annotates) ``CALLEE_CALL_TIR``;
    any other callee (a Relax op or function, a variable) has none of these."""
    table = load_compiled("memcore_py.analysis._binding_table")
    is_op = type(callee) is Op
    role = getattr(callee, "kill_role", None) if is_op else None
    flags = table.CALLEE_INPLACE if is_op and callee.inplace else 0
    if callee is CALL_TIR:
        flags |= table.CALLEE_CALL_TIR
    if role is not None:
        flags |= (table.CALLEE_STORAGE if role == "storage" else table.CALLEE_NO_REGISTER if role == "no_register"
                  else table.CALLEE_KILL)
    if callee is BUILTIN_ALLOC_TENSOR:
        return flags | table.CALLEE_ALLOCATES
    if shares_storage(callee):
        return flags | table.CALLEE_SHARES
    t = type(callee)
    if (t is GlobalVar and callee.name in prim_names) or t is ExternFunc or callee is CALL_TIR_DYN:
        return flags | table.CALLEE_USES_ARGS
    return flags


class _StorageAllocatorInit:
    """StaticPlanBlockMemory's Init phase (TVM ``StorageAllocatorInit``) on memcore's IR:
    the IR reader (:mod:`memcore_py.analysis._ir_reader`) fills the binding table function by
    function, and the Init rule kernel (:class:`memcore_py.analysis._storage_walk.InitRules`)
    walks it; this class holds the per-function context the kernel asks for (the function's
    ``tir_var_*`` bounds and the sizing of new tensor types, :func:`alloc_token_info`) and
    assembles the result. Malformed allocations raise :class:`PassError` where TVM fails an
    internal check."""

    __slots__ = ("function_names", "functions", "mod", "reader", "recorder", "rules", "sizer", "table")

    def __init__(self, mod: IRModule):
        self.mod = mod
        prim_names = frozenset(gv.name for gv, f in mod.functions.items() if isinstance(f, PrimFunc))
        rules = load_compiled("memcore_py.analysis._storage_walk")
        table = self.table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
        self.reader = load_compiled("memcore_py.analysis._ir_reader").IRReader(
            table, partial(callee_flags, prim_names), PassError, "StaticPlanBlockMemory")
        recorder = self.recorder = rules.TokenRecorder()
        self.sizer = rules.AllocSizer(_CONST_TYPE_INFO, recorder.infos, TokenInfo)
        self.rules = rules.InitRules(table, recorder, PassError)
        self.functions: list = []
        self.function_names: list = []

    def run(self) -> StorageTokens:
        for gv, func in self.mod.functions.items():
            if isinstance(func, Function):
                self._visit_function(gv, func)
        return self._result()

    def _visit_function(self, gv, func: Function):
        name = gv.name
        idx = len(self.functions)
        bounds, bounds_key = _function_bounds(func, name)
        sym_info = _SYM_TYPE_INFO.get(bounds_key)
        if sym_info is None:
            sym_info = _SYM_TYPE_INFO_GROUP.put(bounds_key, {})
        self.sizer.begin_function(idx, sym_info, partial(_size_allocation, name, idx, bounds, sym_info))
        sid = self.reader.read_function(name, func.body)
        self.functions.append(_function_entry((gv, func, bounds, sid)))
        self.function_names.append(name)
        self.rules.run_function(idx, self.sizer)

    def _result(self) -> StorageTokens:
        recorder, table = self.recorder, self.table
        program, (t_block, t_binding, t_index) = walk_program(recorder, self.function_names, self.rules.extra_refs)
        discarded = recorder.discarded
        if discarded:
            all_block, all_info, all_binding, all_index = (recorder.t_block, recorder.t_info, recorder.t_binding,
                                                           recorder.t_index)
            new = tuple.__new__  # without NamedTuple's Python-level __new__
            unplanned = [new(UnplannedAlloc, (all_binding[i], all_block[i], all_index[i], all_info[i][5]))  # .func
                         for i in sorted(discarded)]
        else:
            unplanned = []
        sites = AllocationSites(t_binding, t_block, t_index, self.functions, table.block_scope,
                                table.block_is_dataflow, table.block_ifs, table.scope_parent, table.scope_anchor,
                                table.scope_blocks, unplanned)
        return StorageTokens(program, sites, self.rules.tvm_check_failures)


def _size_allocation(func_name, func_idx, bounds, sym_info, binding, info_id):
    """The :class:`TokenInfo` of an allocation no cache of the sizer holds
    (:func:`alloc_token_info`), remembered across calls: a constant shape by its type, a
    symbolic one by its type under the function's bounds (``sym_info``)."""
    info = alloc_token_info(binding, func_name, func_idx, bounds, info_id)
    ty = binding.var.ty
    if info.const_bytes >= 0 and all(type(d) is IntImm for d in ty.shape):
        _CONST_TYPE_INFO_GROUP.put(ty, info)
    else:
        if len(sym_info) >= MEMO.max_entries:
            sym_info.clear()
        sym_info[ty] = info
    return info


def walk_program(walk, function_names: list, extra_refs: dict | None = None):
    """The :class:`TokenProgram` of a finished Init walk (the ``TokenRecorder`` of the Init
    rule kernel, or of the extraction over TVM's objects), and the rows
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

