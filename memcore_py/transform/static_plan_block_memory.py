"""StaticPlanBlockMemory: reuse storage between the intermediate tensors of each function.

Port of Apache TVM's ``relax.transform.StaticPlanBlockMemory``
(src/relax/transform/static_plan_block_memory.cc; behaviour in spec §1), plus an arena mode.

Design
------
The core data structure is the *storage token* (TVM ``StorageToken``): one per
``R.builtin.alloc_tensor`` that is safe to plan, with its byte size, dtype, storage scope,
device and reference count. Three stages, as in TVM:

1. **Init** (:mod:`memcore_py.analysis.storage_tokens`, TVM ``StorageAllocatorInit``): one
   walk creates the tokens, counts their uses by PrimFunc / packed calls, discards every
   token that escapes (returned, passed to another kind of call, flowing into an ``If``,
   used in another block) and records the event program of stage 2 as flat arrays.
2. **Allocate** (:class:`_StorageAllocator`, TVM ``StorageAllocator`` + ``TokenAllocator1D``):
   :func:`memcore.plan_tokens` runs the event program — fresh storage or reuse of a released
   one of the same pool within the size window ``[s/16, 16*s]``, symbolic sizes only among
   provably equal ones, 0-reference tokens never pooled. In arena mode the same tokens and
   lifetimes are also packed with :func:`memcore.plan_offsets` (below).
3. **Rewrite** (:class:`_StorageAllocationRewriter`, TVM ``StorageAllocationRewriter``): each
   planned allocation becomes ``R.memory.alloc_tensor(storage, offset, shape, dtype, dev)``
   (binding var kept); each storage is emitted once, ``storage = R.memory.alloc_storage(
   R.shape([bytes]), dev, R.str(scope), R.dtype(dtype))``, immediately before the first
   allocation that uses it, in the same block (a DataflowVar inside a dataflow block). Names
   ``storage``, ``storage1``, ... continue across the functions of the module. With the
   function attribute ``relax.memory_plan_dynamic_func_output`` every *unplanned* allocation
   with a symbolic shape also gets its own storage of the upper-bounded size ("Case 2"), and
   the attribute is removed.

Deliberately left out (as in TVM): no ``memory.kill_storage`` / ``memory.kill_tensor``
(KillAfterLastUse inserts them), no sharing across functions, no in-place reuse of an input
by the output of the same call, no mixing of dtypes (TVM mode) or storage scopes. Texture
(OpenCL ``vdevice`` memory scope) sizing is not modelled.

Modes
-----
``mode="tvm"`` reproduces TVM's output exactly, except where TVM's output is wrong; each such
case is listed in ``DIFFERENCES.md`` (repository root):

- storages of different devices (``runtime_device_index``) are never shared (TVM's pool key
  ignores the device);
- a storage whose first use does not dominate its other uses (TVM emits it inside an ``If``
  branch and reuses it in the other branch or after the ``If``, or emits a DataflowVar in a
  dataflow block and reuses it after the block) is emitted at the nearest position that
  dominates every use: immediately before the binding of the enclosing scope that contains
  the first use, as a plain ``Var`` when uses leave a dataflow block. The plan itself (which
  tensor uses which storage, and the sizes) is TVM's;
- a tensor allocated in another block that appears twice in one call argument makes TVM fail
  an internal check; it is discarded (left unplanned), as any use in another block is.

:func:`differences_from_tvm` tells which of these apply to a module. DIFFERENCES.md also lists
what is not supported (bounds that need ``T.Select``, texture sizing, nested functions, the
vdevice re-typing of planned allocations) and the limits of the arithmetic emulation.

``mode="arena"`` keeps the planned tensors and their lifetimes (a tensor is live from its
allocation binding to its last use by a call, uses through aliases — reshape, view, tuple,
get-item, match_cast, rebinding — included; the interval includes the using call, so an output
never overlaps an input of the same call) and packs each **(function, storage scope, device)**
pool into **one** storage with :func:`memcore.plan_offsets` (offsets aligned to ``alignment``
bytes, 64 by default as TVM's ``kAllocAlignment``). The arena is *per function*, not per block:
a token never outlives its block, so the tensors of different blocks (and of both branches of
an ``If``) simply occupy disjoint step ranges of one timeline and may share bytes. The arena
storage is emitted like a TVM-mode storage used by all of the pool's tensors (so, hoisted to
a dominating position when they span blocks). Its dtype is the tensors' dtype when they
agree, else ``uint8``. A pool is packed only when the arena is not larger than the TVM-mode
storages of the same tensors; otherwise (and for symbolic-size tensors, and for Case-2
allocations) the TVM-mode plan is kept, so arena mode never uses more bytes than TVM mode.
A tensor at a non-zero offset is bound as ``v_raw = R.memory.alloc_tensor(storage, offset,
...)`` then ``v = R.memory.ensure_zero_offset(v_raw)`` (``zero_offset_views``): TVM's compiled
kernels require ``byte_offset == 0``, and the VM's view moves the data pointer instead (a
zero-copy view when the offset is a multiple of 64, hence the default alignment).

Examples
--------
Before (after CallTIRRewrite)::

    alloc = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
    cls.exp(x, alloc)
    alloc1 = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
    cls.exp(alloc, alloc1)
    alloc2 = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
    cls.exp(alloc1, alloc2)
    return alloc2

After ``StaticPlanBlockMemory()``::

    storage = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
    alloc = R.memory.alloc_tensor(storage, 0, R.shape([2, 4]), R.dtype("float32"), 0)
    cls.exp(x, alloc)
    storage1 = R.memory.alloc_storage(R.shape([32]), 0, R.str("global"), R.dtype("float32"))
    alloc1 = R.memory.alloc_tensor(storage1, 0, R.shape([2, 4]), R.dtype("float32"), 0)
    cls.exp(alloc, alloc1)
    alloc2 = R.builtin.alloc_tensor(R.shape([2, 4]), R.dtype("float32"), 0, R.str("global"))
    cls.exp(alloc1, alloc2)        # the returned tensor is not planned
    return alloc2

Attributes read: ``tir_var_upper_bound``, ``tir_var_lower_bound``, ``tir_non_negative_var``
(§1.6), ``relax.memory_plan_dynamic_func_output`` (removed from the output).
"""
from __future__ import annotations

import gc
from dataclasses import dataclass
from operator import itemgetter

import numpy as np

from .._spbm import rebuild_allocs as _rebuild_allocs  # compiled; see memcore_py/_spbm.pyx
from ..analysis.arith import UnsupportedBound, dynamic_output_bytes, upper_bound_shape
from ..analysis.storage_tokens import (
    BUILTIN_ALLOC_TENSOR,
    StorageTokens,
    alloc_tensor_info,
    analyze_storage_tokens,
)
from ..errors import PassError
from ..ir.expr import (
    BindingBlock,
    Call,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Function,
    If,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm, PrimVar
from ..ir.types import ObjectType, ShapeType
from .pass_infra import ModulePass, PassContext

__all__ = [
    "StaticPlanBlockMemory",
    "static_plan_block_memory",
    "differences_from_tvm",
    "ATTR_PLAN_DYNAMIC_FUNC_OUTPUT",
    "DIFF_DEVICE_POOLS",
    "DIFF_DOMINATING_STORAGE",
    "DIFF_DUPLICATE_CROSS_BLOCK_LEAF",
    "MODES",
]

#: Function attribute: also give unplanned dynamic-shape allocations a storage ("Case 2").
ATTR_PLAN_DYNAMIC_FUNC_OUTPUT = "relax.memory_plan_dynamic_func_output"
#: DIFFERENCES.md entry: storages are never shared between devices.
DIFF_DEVICE_POOLS = "device-pools"
#: DIFFERENCES.md entry: a storage is emitted where it dominates all its uses.
DIFF_DOMINATING_STORAGE = "dominating-storage"
#: DIFFERENCES.md entry: TVM fails an internal check on a cross-block token seen twice.
DIFF_DUPLICATE_CROSS_BLOCK_LEAF = "duplicate-cross-block-leaf"
MODES = ("tvm", "arena")

_object_new = object.__new__
_set = object.__setattr__
# slot setters of the nodes built on the hot path (one Call and one VarBinding per planned
# allocation), bypassing constructors that would re-validate what is built here
_call_op = Call.op.__set__
_call_args = Call.args.__set__
_call_attrs = Call.attrs.__set__
_call_ty_args = Call.ty_args.__set__
_expr_ty = Call.ty.__set__
_binding_var = VarBinding.var.__set__
_binding_value = VarBinding.value.__set__
_block_bindings = BindingBlock.bindings.__set__
_NO_ATTRS: dict = {}
_ALLOC_STORAGE = get_op("relax.memory.alloc_storage")
_MEM_ALLOC_TENSOR = get_op("relax.memory.alloc_tensor")
_ENSURE_ZERO_OFFSET = get_op("relax.memory.ensure_zero_offset")
_OBJECT = ObjectType()
_ZERO = PrimValue(IntImm(0))


# --------------------------------------------------------------------------------------
# Stage 2: allocation
# --------------------------------------------------------------------------------------
@dataclass(eq=False)
class _Storage:
    """One storage to emit."""

    nbytes: object
    """PrimExpr size in bytes."""
    dtype: str
    scope: str
    tokens: list
    """Token ids placed in it, in program order (the first one decides where it is emitted)."""
    site: tuple = None
    """``(block id, position, is_dataflow_var, is_tvm_site)``: emit before that binding."""


@dataclass(eq=False)
class _Plan:
    """Everything the rewriter needs."""

    storages: list
    tok_storage: np.ndarray
    """int64[n_tok]: index into ``storages``."""
    tok_offset: np.ndarray
    """int64[n_tok]: byte offset in the storage."""
    tvm_bytes: int = 0
    """Bytes of the constant-size TVM-mode storages (before arena packing)."""
    arena_bytes: int = 0
    """Bytes of the constant-size storages of the chosen plan."""
    lower_bound: int = 0
    """Sum over (function, scope, device) pools of the max-live bytes of constant-size tokens."""

    def __post_init__(self):
        self.tok_storage_list = self.tok_storage.tolist()
        if self.tok_offset is None:  # TVM mode: every offset is 0
            self.tok_offset = np.zeros(len(self.tok_storage_list), dtype=np.int64)
            self.tok_offset_list = [0] * len(self.tok_storage_list)
        else:
            self.tok_offset_list = self.tok_offset.tolist()


class _StorageAllocator:
    """Port of TVM ``StorageAllocator`` / ``TokenAllocator1D`` (src/relax/transform/
    static_plan_block_memory.cc) over flat arrays: the event program of
    :class:`~memcore_py.analysis.storage_tokens.StorageTokens` goes to
    :func:`memcore.plan_tokens` (TVM's reuse rules live in the engine). Differs from TVM in
    the pool key, which includes the device (``key_device``); see DIFFERENCES.md.
    """

    def __init__(self, tokens: StorageTokens, *, key_device: bool = True):
        self.tokens = tokens
        self.key_device = key_device

    def plan_tokens(self):
        """Run the event program; return ``(TokenPlan, tok_pool)``."""
        import memcore

        st = self.tokens
        tok_pool, _keys = st.pools(key_device=self.key_device)
        if any(info[0] < 0 for info in st.infos):  # some symbolic size
            tok_sym = st.sym_classes(tok_pool)
            tok_bytes = np.where(st.tok_const >= 0, st.tok_const, 0)
        else:  # all constant: tok_sym's default
            tok_sym = None
            tok_bytes = st.tok_const
        plan = memcore.plan_tokens(
            tok_bytes, tok_pool, st.tok_refs, st.ev_kind, st.ev_tok, tok_sym=tok_sym, match_range=16
        )
        return plan, tok_pool

    def tvm_storages(self):
        """The TVM-mode plan: ``(storages, tok_storage)``; storage sizes are the engine's
        (maximum requested) for constant sizes, the first token's expression otherwise."""
        st = self.tokens
        plan, _ = self.plan_tokens()
        storage_of = np.asarray(plan.storage_of, dtype=np.int64)
        n_storage = plan.n_storage
        # tokens of each storage, in token (= program) order
        members = [[] for _ in range(n_storage)]
        for t, k in enumerate(storage_of.tolist()):
            members[k].append(t)
        sizes = plan.storage_bytes.tolist()
        infos, tok_info = st.infos, st.tok_info.tolist()
        storages = []
        for k in range(n_storage):
            toks = members[k]
            info = infos[tok_info[toks[0]]]
            nbytes = IntImm(sizes[k]) if info[0] >= 0 else info[1]
            storages.append(_Storage(nbytes, info[2], info[3], toks))
        return storages, storage_of

    def arena_storages(self, alignment: int, time_limit=None):
        """Pack each (function, scope, device) pool into one arena where that is no larger
        than the TVM-mode storages of the same tensors. Returns a :class:`_Plan` (sites unset)."""
        import memcore

        st = self.tokens
        storages, tok_storage = self.tvm_storages()
        n_tok = st.n_tok
        tok_offset = np.zeros(n_tok, dtype=np.int64)
        groups = _arena_groups(st)
        tvm_total = sum(s.nbytes.value for s in storages if type(s.nbytes) is IntImm)
        lower_bound = 0
        keep = [True] * len(storages)
        new_storages = []
        for (_f, scope, _dev), idx in groups:
            toks = idx.tolist()
            start, end, size = st.tok_start[idx], st.tok_end[idx], st.tok_const[idx]
            lower_bound += int(memcore.max_live_bytes(start, end, size))
            used = sorted(set(tok_storage[idx].tolist()))
            tvm_bytes = sum(storages[s].nbytes.value for s in used)
            if len(toks) < 2:
                continue
            packed = memcore.plan_offsets(start, end, size, alignment=alignment, time_limit=time_limit)
            if packed.arena_bytes > tvm_bytes:
                continue
            dtypes = {st.infos[i][2] for i in np.unique(st.tok_info[idx]).tolist()}
            dtype = dtypes.pop() if len(dtypes) == 1 else "uint8"
            for s in used:
                keep[s] = False
            new_storages.append((_Storage(IntImm(int(packed.arena_bytes)), dtype, scope, list(toks)), idx,
                                 packed.offset))
        # renumber: kept TVM storages first (creation order), then arenas
        remap = np.full(len(storages), -1, dtype=np.int64)
        final = []
        for s, entry in enumerate(storages):
            if keep[s]:
                remap[s] = len(final)
                final.append(entry)
        tok_storage = remap[tok_storage] if len(storages) else tok_storage
        for entry, idx, offsets in new_storages:
            k = len(final)
            final.append(entry)
            tok_storage[idx] = k
            tok_offset[idx] = offsets
        # emission order is by first use; sort storages by their first token
        final_bytes = sum(s.nbytes.value for s in final if type(s.nbytes) is IntImm)
        plan = _Plan(final, tok_storage, tok_offset, tvm_bytes=tvm_total, arena_bytes=final_bytes,
                     lower_bound=lower_bound)
        return plan


def _arena_groups(st: StorageTokens):
    """Constant-size tokens grouped by (function, scope, device): ``[(key, token ids), ...]``
    (token ids in program order)."""
    group, keys = st.group_ids(lambda info: (info[5], info[3], info[4]))
    const = st.tok_const >= 0
    toks = np.flatnonzero(const)
    g = group[toks]
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(len(keys) + 1))
    out = []
    for k, key in enumerate(keys):
        idx = toks[order[bounds[k]:bounds[k + 1]]]
        if idx.shape[0]:
            out.append((key, idx))
    return out


# --------------------------------------------------------------------------------------
# Where a storage is emitted
# --------------------------------------------------------------------------------------
def _scope_chain(st: StorageTokens, sid: int) -> list:
    chain = []
    while sid >= 0:
        chain.append(sid)
        sid = st.scope_parent[sid]
    chain.reverse()
    return chain


def _emission_site(st: StorageTokens, toks: list):
    """``(block id, position, dataflow_var, is_tvm_site)`` for a storage used by ``toks``
    (token ids in program order): emit the storage right before binding ``position``.

    TVM emits a storage right before its first allocation, in that allocation's block, as a
    DataflowVar in a dataflow block. That is kept whenever it dominates every use. Otherwise
    the storage goes right before the binding of the innermost scope containing all uses
    that contains the first use, and it is a plain Var unless all uses are in one dataflow
    block.
    """
    tok_block = st.tok_block
    first = toks[0]
    b0 = tok_block[first]
    i0 = st.tok_index[first]
    df0 = st.block_is_dataflow[b0]
    if len(toks) == 1 or itemgetter(*toks)(tok_block).count(b0) == len(toks):  # all in block b0
        return (b0, i0, df0, True)
    chains = [_scope_chain(st, st.block_scope[tok_block[t]]) for t in toks]
    depth = min(len(c) for c in chains)
    lca = 0
    for i in range(depth):
        s = chains[0][i]
        if all(c[i] == s for c in chains):
            lca = i
        else:
            break
    lca_scope = chains[0][lca]
    s0 = st.block_scope[b0]
    if s0 == lca_scope:
        # Same scope: TVM's position dominates unless a dataflow block is left.
        return (b0, i0, False, not df0)
    # Walk up from the first use to the child scope of the common scope.
    sid = s0
    while st.scope_parent[sid] != lca_scope:
        sid = st.scope_parent[sid]
    anchor_block, _anchor_binding, anchor_index = st.scope_anchor[sid]
    return (anchor_block, anchor_index, False, False)


# --------------------------------------------------------------------------------------
# Stage 3: rewrite
# --------------------------------------------------------------------------------------
def _same_shape(values, shape) -> bool:
    if len(values) != len(shape):
        return False
    for a, b in zip(values, shape):
        if a is b:
            continue
        ta = type(a)
        if ta is not type(b):
            return False
        if ta is IntImm:
            if a.value != b.value or a.dtype != b.dtype:
                return False
        elif ta is PrimVar:
            if a.name != b.name:
                return False
        else:
            return False
    return True


def _new_call(op, args, ty):
    """``Call(op, args, ty=ty)`` without re-validating arguments built here (hot path: one per
    planned allocation)."""
    c = _object_new(Call)
    _set(c, "op", op)
    _set(c, "args", args)
    _set(c, "attrs", _NO_ATTRS)
    _set(c, "ty_args", ())
    _set(c, "ty", ty)
    return c


def _new_binding(var, value):
    """``VarBinding(var, value)`` for a var and value known to be valid (hot path)."""
    b = _object_new(VarBinding)
    _set(b, "var", var)
    _set(b, "value", value)
    return b


def _updated_function(func: Function, body: SeqExpr, attrs: dict) -> Function:
    """``Function(func.params, body, func.ret_ty, attrs, func.is_pure)`` without re-validating
    the (unchanged) parameters: the new body has the old one's type, so the function type is
    the old one too."""
    if body.ty is not func.body.ty:
        return Function(func.params, body, func.ret_ty, attrs, func.is_pure)
    f = _object_new(Function)
    _set(f, "params", func.params)
    _set(f, "body", body)
    _set(f, "ret_ty", func.ret_ty)
    _set(f, "attrs", dict(attrs) if attrs else {})
    _set(f, "is_pure", func.is_pure)
    _set(f, "ty", func.ty)
    return f


def _with_functions(mod: IRModule, updates: dict) -> IRModule:
    """``mod.with_functions(updates)`` for updates that replace functions of ``mod`` (same
    GlobalVars, so the same names) by valid ``Function`` nodes: skips re-validating every
    function of the module."""
    new = _object_new(IRModule)
    funcs = dict(mod.functions)
    funcs.update(updates)
    new.functions = funcs
    new.attrs = dict(mod.attrs)
    new.global_infos = dict(mod.global_infos)
    new._by_name = dict(mod._by_name)
    return new


class _StorageAllocationRewriter:
    """Port of TVM ``StorageAllocationRewriter`` (src/relax/transform/
    static_plan_block_memory.cc).

    TVM re-emits every binding through an ``ExprMutator``; this port knows from the analysis
    where each change goes (block id and position of every planned allocation, emission site
    of every storage, position of every ``If`` on the way) and rebuilds only those blocks,
    copying the unchanged runs of bindings as slices. Emission positions come precomputed
    from the plan (see :func:`_emission_site`, where the port differs from TVM for unsound
    placements).
    """

    def __init__(self, mod: IRModule, st: StorageTokens, plan: _Plan, zero_offset_views: bool = False):
        self.mod = mod
        self.st = st
        self.plan = plan
        self.zero_offset_views = zero_offset_views
        self._n_storage = 0  # storage names handed out
        # block id -> {position: [storage ids to emit before it]}
        self.emit_before: dict = {}
        for k, s in enumerate(plan.storages):
            self.emit_before.setdefault(s.site[0], {}).setdefault(s.site[1], []).append(k)
        # block id -> {position: token}, positions increasing (tokens are in program order)
        self.allocs: dict = {}
        allocs = self.allocs
        tok_block = st.tok_block
        if tok_block and tok_block.count(tok_block[0]) == len(tok_block):
            # every planned allocation in one block (the common case)
            allocs[tok_block[0]] = dict(zip(st.tok_index, range(len(tok_block))))
            tok_block = ()
        for t, (bid, i) in enumerate(zip(tok_block, st.tok_index)):
            d = allocs.get(bid)
            if d is None:
                d = allocs[bid] = {}
            d[i] = t
        # Case 2 candidates: unplanned allocations in functions with the attribute
        self.dynamic: dict = {}
        plan_dyn = {f for f, (_gv, func, _b, _sid) in enumerate(st.functions)
                    if _truthy(func.attrs.get(ATTR_PLAN_DYNAMIC_FUNC_OUTPUT))}
        if plan_dyn:
            for binding, bid, i, f in st.unplanned_allocs:
                if f in plan_dyn:
                    self.dynamic.setdefault(bid, {})[i] = binding
        # scopes that contain a change (and so every scope around them)
        dirty = set()
        for bid in list(self.emit_before) + list(self.allocs) + list(self.dynamic):
            sid = st.block_scope[bid]
            while sid >= 0 and sid not in dirty:
                dirty.add(sid)
                sid = st.scope_parent[sid]
        self.dirty = dirty
        self.storage_var: list = [None] * len(plan.storages)
        self._dtype_imm: dict = {}
        self._scope_imm: dict = {}
        self._offset_imm: dict = {0: _ZERO}
        self._shape_imm: dict = {}
        self._args_cache: dict = {}
        self._func_name = ""
        self._bounds = None

    def rewrite(self) -> IRModule:
        updates = {}
        for gv, func, bounds, sid in self.st.functions:
            self._func_name = gv.name
            self._bounds = bounds
            body = self._seq(func.body, sid)
            attrs = func.attrs
            if ATTR_PLAN_DYNAMIC_FUNC_OUTPUT in attrs:
                attrs = {k: v for k, v in attrs.items() if k != ATTR_PLAN_DYNAMIC_FUNC_OUTPUT}
            if body is not func.body or attrs is not func.attrs:
                updates[gv] = _updated_function(func, body, attrs)
        return _with_functions(self.mod, updates) if updates else self.mod

    # ------------------------------------------------------------------ helpers
    def _dtype(self, dtype):
        imm = self._dtype_imm.get(dtype)
        if imm is None:
            imm = self._dtype_imm[dtype] = DataTypeImm(dtype)
        return imm

    def _scope(self, scope):
        imm = self._scope_imm.get(scope)
        if imm is None:
            imm = self._scope_imm[scope] = StringImm(scope)
        return imm

    def _offset(self, offset):
        imm = self._offset_imm.get(offset)
        if imm is None:
            imm = self._offset_imm[offset] = PrimValue(IntImm(offset))
        return imm

    def _shape_expr(self, call, ty):
        """TVM uses the tensor type's shape; the allocation's own shape argument is the same
        expression in well-typed input and is reused then."""
        arg0 = call.args[0]
        if type(arg0) is ShapeExpr and _same_shape(arg0.values, ty.shape):
            return arg0
        imm = self._shape_imm.get(ty)
        if imm is None:
            imm = self._shape_imm[ty] = ShapeExpr(ty.shape)
        return imm

    def _storage_binding(self, nbytes, dev, scope_imm, dtype, dataflow):
        # Built as VarBinding(Var(name, ObjectType()), Call(alloc_storage, (ShapeExpr((nbytes,)),
        # ...), ty=ObjectType())) without re-validating (nbytes is a PrimExpr); names are
        # "storage", "storage1", ... as NameTable.fresh("storage") hands them out.
        k = self._n_storage
        self._n_storage = k + 1
        var = _object_new(DataflowVar if dataflow else Var)
        _set(var, "name", f"storage{k}" if k else "storage")
        _set(var, "ty", _OBJECT)
        values = (nbytes,)
        shape_ty = _object_new(ShapeType)
        _set(shape_ty, "values", values)
        _set(shape_ty, "ndim", 1)
        shape = _object_new(ShapeExpr)
        _set(shape, "values", values)
        _set(shape, "ty", shape_ty)
        call = _new_call(_ALLOC_STORAGE, (shape, dev, scope_imm, self._dtype(dtype)), _OBJECT)
        return _new_binding(var, call)

    # ------------------------------------------------------------------ walk
    def _seq(self, seq: SeqExpr, sid: int) -> SeqExpr:
        if sid not in self.dirty:
            return seq
        blocks = []
        changed = False
        for block, bid in zip(seq.blocks, self.st.scope_blocks[sid]):
            new = self._block(block, bid)
            changed = changed or new is not block
            blocks.append(new)
        if not changed:
            return seq
        return SeqExpr(blocks, seq.body, seq.ty)

    def _block(self, block: BindingBlock, bid: int) -> BindingBlock:
        emit = self.emit_before.get(bid)
        allocs = self.allocs.get(bid)
        dynamic = self.dynamic.get(bid)
        ifs = self.st.block_ifs.get(bid)
        dirty_ifs = None
        if ifs:
            dirty = self.dirty
            dirty_ifs = {i: sids for i, sids in ifs if sids[0] in dirty or sids[1] in dirty}
        if not (emit or allocs or dynamic or dirty_ifs):
            return block
        is_df = type(block) is DataflowBlock
        bindings = block.bindings
        allocs = allocs or {}
        special = set()
        for d in (emit, dynamic, dirty_ifs):
            if d:
                special.update(d)
        emit = emit or {}
        dynamic = dynamic or {}
        dirty_ifs = dirty_ifs or {}
        zero_offset_views = self.zero_offset_views
        tok_storage = self.plan.tok_storage_list
        tok_offset = self.plan.tok_offset_list
        if zero_offset_views:
            # allocations at a non-zero offset get a view binding: general loop below
            special.update([i for i, t in allocs.items() if tok_offset[t]])
        # Only the special positions go through the loop below; every planned allocation but
        # the zero-offset views is rebuilt afterwards by _rebuild_allocs (its storage is emitted
        # at a special position of this block or of an enclosing one, so before it is needed).
        positions = sorted(special)
        out = list(bindings)
        inserts = []  # (position, bindings to insert before it), increasing positions
        args_cache = self._args_cache
        new = _object_new
        mem_alloc_tensor = _MEM_ALLOC_TENSOR
        handled = set()  # planned allocations rebuilt in this loop (zero-offset views)
        for i in positions:
            b = out[i]
            if special and i in special:
                pre = emit.get(i)
                if pre is not None:
                    inserts.append((i, self._emit_storages(pre)))
                if i in dynamic:
                    storage_binding, nb = self._dynamic_output(b, is_df)
                    if storage_binding is not None:
                        inserts.append((i, [storage_binding]))
                    out[i] = nb
                    continue
                sids = dirty_ifs.get(i)
                if sids is not None:
                    value = b.value
                    t_b, f_b = self._seq(value.true_branch, sids[0]), self._seq(value.false_branch, sids[1])
                    if t_b is not value.true_branch or f_b is not value.false_branch:
                        new_if = If(value.cond, t_b, f_b, value.ty)
                        out[i] = MatchCast(b.var, new_if, b.ty) if type(b) is MatchCast else VarBinding(b.var, new_if)
                    continue
            t = allocs.get(i)
            if t is None or not (zero_offset_views and tok_offset[t]):
                continue  # none, or rebuilt by _rebuild_allocs below (its storage is emitted now)
            handled.add(i)
            # planned allocation: R.memory.alloc_tensor(storage, offset, shape, dtype, dev)
            var = b.var
            call = b.value
            ty = var.ty
            key = (tok_storage[t], tok_offset[t], ty, call.args[2])
            new_args = args_cache.get(key)
            if new_args is None:
                new_args = args_cache[key] = self._alloc_tensor_args(key, call)
            c = new(Call)
            _call_op(c, mem_alloc_tensor)
            _call_args(c, new_args)
            _call_attrs(c, _NO_ATTRS)
            _call_ty_args(c, ())
            _expr_ty(c, ty)
            nb = new(VarBinding)
            if zero_offset_views and tok_offset[t]:
                # R.memory.ensure_zero_offset: TVM's kernels reject a tensor with a non-zero
                # byte_offset; the view advances the data pointer instead (no copy when the
                # offset is a multiple of 64).
                # (nodes built as Var(name, ty), VarBinding(var, Call(op, (raw,), ty=ty)),
                # without re-validating what is known valid)
                raw = new(DataflowVar if is_df else Var)
                _set(raw, "name", var.name + "_raw")
                _set(raw, "ty", ty)
                _binding_var(nb, raw)
                _binding_value(nb, c)
                inserts.append((i, [nb]))
                out[i] = _new_binding(var, _new_call(_ENSURE_ZERO_OFFSET, (raw,), ty))
                continue
            _binding_var(nb, var)
            _binding_value(nb, c)
            out[i] = nb
        if allocs:
            _rebuild_allocs(out, allocs, handled, tok_storage, tok_offset, args_cache, self._alloc_tensor_args,
                            mem_alloc_tensor, _NO_ATTRS, self.storage_var, self._dtype_imm, _ZERO)
        if inserts:
            merged = []
            last = 0
            for i, extra in inserts:
                merged.extend(out[last:i])
                merged.extend(extra)
                last = i
            merged.extend(out[last:])
            out = merged
        # every element is a binding of the input block or one built here: skip re-validation
        nblock = _object_new(DataflowBlock if is_df else BindingBlock)
        _block_bindings(nblock, tuple(out))
        return nblock

    def _emit_storages(self, storage_ids):
        out = []
        plan = self.plan
        st = self.st
        for k in storage_ids:
            s = plan.storages[k]
            dev = st.tok_binding[s.tokens[0]].value.args[2]
            sb = self._storage_binding(s.nbytes, dev, self._scope(s.scope), s.dtype, s.site[2])
            self.storage_var[k] = sb.var
            out.append(sb)
        return out

    def _alloc_tensor_args(self, key, call):
        """Arguments of the ``R.memory.alloc_tensor`` replacing ``call`` (shared between
        allocations with the same storage, offset, type and device)."""
        k, offset, ty, dev = key
        storage = self.storage_var[k]
        if storage is None:  # pragma: no cover - internal invariant
            raise AssertionError(f"internal error: storage {k} used before its emission site")
        return (storage, self._offset(offset) if offset else _ZERO, self._shape_expr(call, ty), self._dtype(ty.dtype), dev)

    def _dynamic_output(self, b, in_dataflow):
        """Case 2: an unplanned allocation with a symbolic shape gets its own storage of the
        upper-bounded size. Returns ``(storage binding or None, new binding)``."""
        shape, dtype, _dev, _scope = alloc_tensor_info(b, self._func_name)
        if all(type(d) is IntImm for d in shape):
            return None, b
        try:
            ub = upper_bound_shape(shape, self._bounds)
        except UnsupportedBound:
            raise PassError(
                f"function {self._func_name!r}, binding {b.var.name!r}: the upper bound of shape "
                f"{list(shape)!r} needs a sign condition (T.Select), which is not supported"
            ) from None
        nbytes = dynamic_output_bytes(ub, dtype)
        call = b.value
        args = call.args
        scope_imm = args[3] if len(args) > 3 else self._scope("global")
        sb = self._storage_binding(nbytes, args[2], scope_imm, dtype, in_dataflow)
        ty = b.var.ty
        new_call = _new_call(_MEM_ALLOC_TENSOR, (sb.var, _ZERO, self._shape_expr(call, ty), self._dtype(dtype), args[2]),
                             ty)
        return sb, _new_binding(b.var, new_call)


def _truthy(v) -> bool:
    if v is None:
        return False
    if isinstance(v, IntImm):
        return v.value != 0
    if isinstance(v, PrimValue) and isinstance(v.value, IntImm):
        return v.value.value != 0
    try:
        return bool(v)
    except Exception:  # noqa: BLE001
        return False


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------
from ..planning.arena_options import ARENA_TIME_LIMIT  # noqa: E402  (default search budget)


def _make_plan(st: StorageTokens, mode: str, alignment: int, key_device: bool = True, time_limit=None) -> _Plan:
    allocator = _StorageAllocator(st, key_device=key_device)
    if mode == "tvm":
        storages, tok_storage = allocator.tvm_storages()
        total = sum(s.nbytes.value for s in storages if type(s.nbytes) is IntImm)
        plan = _Plan(storages, tok_storage, None, tvm_bytes=total, arena_bytes=total)
    else:
        plan = allocator.arena_storages(alignment, time_limit)
    for s in plan.storages:
        s.tokens.sort()  # token ids are in program order
        s.site = _emission_site(st, s.tokens)
    return plan


def _check_options(mode, alignment, time_limit=None):
    if mode not in MODES:
        raise PassError(f"StaticPlanBlockMemory mode must be one of {MODES}; got {mode!r}")
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1:
        raise PassError(f"StaticPlanBlockMemory alignment must be an int >= 1; got {alignment!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0):
        raise PassError(f"StaticPlanBlockMemory time_limit must be None or a positive number of seconds; "
                        f"got {time_limit!r}")


def static_plan_block_memory(mod: IRModule, mode: str = "tvm", *, alignment: int = 64, time_limit=ARENA_TIME_LIMIT,
                             zero_offset_views: bool = True, ctx: PassContext | None = None) -> IRModule:
    """Plan the storage of every Relax function of ``mod`` (see the module docstring).

    Parameters
    ----------
    mod : IRModule
        A module after CallTIRRewrite (``R.builtin.alloc_tensor`` + direct DPS calls).
    mode : {"tvm", "arena"}
        ``"tvm"``: TVM's plan and IR (documented differences only where TVM is unsound).
        ``"arena"``: one storage with offsets per (function, scope, device) pool.
    alignment : int, default 64
        Arena mode: byte alignment of tensor offsets.
    time_limit : float or None, default ARENA_TIME_LIMIT (0.1)
        Arena mode: seconds of :func:`memcore.plan_offsets`'s anytime search per pool, used only
        while the heuristics are above the lower bound (None: the best heuristic only).
    zero_offset_views : bool, default True
        Arena mode: bind a tensor placed at a non-zero offset as
        ``v_raw = R.memory.alloc_tensor(storage, offset, ...)`` followed by
        ``v = R.memory.ensure_zero_offset(v_raw)``, because TVM's compiled kernels reject a
        non-zero ``byte_offset`` (the view moves the data pointer instead).
    ctx : PassContext, optional
        Receives a trace note per function when tracing.

    Returns
    -------
    IRModule
        A new module (``mod`` itself when nothing is planned and no attribute is removed).

    Raises
    ------
    PassError
        Bad options, a malformed ``R.builtin.alloc_tensor``, a bad ``tir_var_*`` attribute.
    """
    _check_options(mode, alignment, time_limit)
    # The pass allocates a few objects per binding and frees nothing until it returns; the
    # cyclic garbage collector would rescan the whole (acyclic) IR again and again on large
    # functions (2-5x the running time at 300k bindings), so it is paused meanwhile.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        st = analyze_storage_tokens(mod)
        plan = _make_plan(st, mode, alignment, time_limit=time_limit)
        if ctx is not None and ctx.tracing:
            _trace(ctx, st, plan, mode)
        return _StorageAllocationRewriter(mod, st, plan, zero_offset_views and mode == "arena").rewrite()
    finally:
        if gc_was_enabled:
            gc.enable()


def plan_statistics(mod: IRModule, mode: str = "tvm", *, alignment: int = 64, time_limit=ARENA_TIME_LIMIT) -> dict:
    """Numbers of the plan for ``mod`` without rewriting it: ``n_planned`` tensors,
    ``n_storage``, ``tvm_bytes`` / ``planned_bytes`` (constant-size storages of TVM mode / of
    ``mode``), ``lower_bound`` (sum of max-live bytes per (function, scope, device) pool)."""
    _check_options(mode, alignment, time_limit)
    st = analyze_storage_tokens(mod)
    plan = _make_plan(st, mode, alignment, time_limit=time_limit)
    if mode == "tvm":
        import memcore

        lb = 0
        for _key, idx in _arena_groups(st):
            lb += int(memcore.max_live_bytes(st.tok_start[idx], st.tok_end[idx], st.tok_const[idx]))
        plan.lower_bound = lb
    return {
        "n_planned": st.n_tok,
        "n_storage": len(plan.storages),
        "tvm_bytes": plan.tvm_bytes,
        "planned_bytes": plan.arena_bytes,
        "lower_bound": plan.lower_bound,
    }


def differences_from_tvm(mod: IRModule, *, per_function: bool = False):
    """Which documented differences (DIFFERENCES.md) make ``StaticPlanBlockMemory()(mod)``
    differ from Apache TVM's output on ``mod``.

    Returns
    -------
    list of str, or dict
        A subset of ``[DIFF_DEVICE_POOLS, DIFF_DOMINATING_STORAGE,
        DIFF_DUPLICATE_CROSS_BLOCK_LEAF]``; empty means the output is TVM's, exactly. With
        ``per_function``, a dict from function name to such a list for the functions where
        one applies (for ``DIFF_DUPLICATE_CROSS_BLOCK_LEAF`` TVM fails on the whole module
        containing that function).
    """
    st = analyze_storage_tokens(mod)
    found: dict = {}

    def add(f, what):
        lst = found.setdefault(f, [])
        if what not in lst:
            lst.append(what)

    for name in st.tvm_check_failures:
        add(name, DIFF_DUPLICATE_CROSS_BLOCK_LEAF)
    ours, _ = _StorageAllocator(st, key_device=True).plan_tokens()
    theirs, _ = _StorageAllocator(st, key_device=False).plan_tokens()
    funcs = st.tok_func
    for f in np.unique(funcs).tolist():
        idx = np.flatnonzero(funcs == f)
        a, b = ours.storage_of[idx], theirs.storage_of[idx]
        # same partition of the function's tokens into storages, and the same sizes
        _, ia = np.unique(a, return_inverse=True)
        _, ib = np.unique(b, return_inverse=True)
        if not np.array_equal(ia, ib) or not np.array_equal(
            np.sort(ours.storage_bytes[np.unique(a)]), np.sort(theirs.storage_bytes[np.unique(b)])
        ):
            add(st.functions[f][0].name, DIFF_DEVICE_POOLS)
    plan = _make_plan(st, "tvm", 64, key_device=False)
    for s in plan.storages:
        if not s.site[3]:
            add(st.functions[int(st.tok_func[s.tokens[0]])][0].name, DIFF_DOMINATING_STORAGE)
    if per_function:
        return found
    out = []
    for lst in found.values():
        for what in lst:
            if what not in out:
                out.append(what)
    return out


def _trace(ctx, st, plan, mode):
    per_func = {}
    for k, s in enumerate(plan.storages):
        f = int(st.tok_func[s.tokens[0]])
        per_func.setdefault(f, [0, 0])[0] += 1
        per_func[f][1] += len(s.tokens)
    for f, (gv, _func, _b, _sid) in enumerate(st.functions):
        n_storage, n_tok = per_func.get(f, [0, 0])
        ctx.note(StaticPlanBlockMemory.name,
                 f"function {gv.name!r}: {n_tok} allocations planned into {n_storage} storages ({mode} mode)")
    hoisted = sum(1 for s in plan.storages if not s.site[3])
    if hoisted:
        ctx.note(StaticPlanBlockMemory.name,
                 f"{hoisted} storages emitted at a dominating position (see DIFFERENCES.md: {DIFF_DOMINATING_STORAGE})")


class StaticPlanBlockMemory(ModulePass):
    """Reuse storage between the intermediate tensors of each function (TVM's pass of the
    same name; see :mod:`memcore_py.transform.static_plan_block_memory`).

    Parameters
    ----------
    mode : {"tvm", "arena"}, default "tvm"
    alignment : int, default 64
        Arena mode: byte alignment of tensor offsets.
    time_limit : float or None, default ARENA_TIME_LIMIT (0.1)
        Arena mode: seconds of anytime offset search per pool, spent only while the best
        heuristic is above the max-live lower bound (None: heuristics only, deterministic).
    zero_offset_views : bool, default True
        Arena mode: reach tensors at a non-zero offset through ``R.memory.ensure_zero_offset``.

    Notes
    -----
    Run after CallTIRRewrite (and normally ToNonDataflow and RemovePurityChecking). No kill
    ops are inserted: run KillAfterLastUse (after LowerAllocTensor) for those.
    """

    name = "static-plan-block-memory"

    def __init__(self, mode: str = "tvm", alignment: int = 64, time_limit=ARENA_TIME_LIMIT,
                 zero_offset_views: bool = True):
        _check_options(mode, alignment, time_limit)
        self.mode = mode
        self.alignment = alignment
        self.time_limit = time_limit
        self.zero_offset_views = bool(zero_offset_views)

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return static_plan_block_memory(mod, self.mode, alignment=self.alignment, time_limit=self.time_limit,
                                        zero_offset_views=self.zero_offset_views, ctx=ctx)

    def __repr__(self):
        return f"StaticPlanBlockMemory(mode={self.mode!r})"
