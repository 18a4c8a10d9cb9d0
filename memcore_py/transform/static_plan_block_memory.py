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
   used in another block) and records the event program of stage 2 as flat arrays
   (:class:`~memcore_py.analysis.storage_tokens.TokenProgram`), apart from where the
   allocations sit (:class:`~memcore_py.analysis.storage_tokens.AllocationSites`).
2. **Allocate** (:mod:`memcore_py.planning.allocate`, TVM ``StorageAllocator`` +
   ``TokenAllocator1D``): :func:`memcore.plan_tokens` runs the event program — fresh storage
   or reuse of a released one of the same pool within the size window ``[s/16, 16*s]``,
   symbolic sizes only among provably equal ones, 0-reference tokens never pooled. In arena
   mode the same tokens and lifetimes are also packed with :func:`memcore.plan_offsets`
   (below). The result is a :class:`~memcore_py.planning.memory_plan.MemoryPlan`; where each
   storage is emitted is :mod:`memcore_py.planning.emission`'s.
3. **Rewrite** (:class:`_StorageAllocationRewriter`, TVM ``StorageAllocationRewriter``): each
   planned allocation becomes ``R.memory.alloc_tensor(storage, offset, shape, dtype, dev)``
   (binding var kept); each storage is emitted once, ``storage = R.memory.alloc_storage(
   R.shape([bytes]), dev, R.str(scope), R.dtype(dtype))``, immediately before the first
   allocation that uses it, in the same block (a DataflowVar inside a dataflow block). Names
   ``storage``, ``storage1``, ... continue across the functions of the module. With the
   function attribute ``relax.memory_plan_dynamic_func_output`` every *unplanned* allocation
   with a symbolic shape also gets its own storage of the upper-bounded size ("Case 2"), and
   the attribute is removed.

Rules and where each lives
--------------------------
- Which ops share their input's storage (``R.reshape``, ``memory.view``, the packed reshape):
  the op table (``Op.shares_storage``), read by every walk.
- Sizing an allocation (bytes, the upper bound of a symbolic shape under the function's
  bounds, dtype, scope, device, validation): :func:`~memcore_py.analysis.storage_tokens.
  alloc_token_info`; the kernel asks memcore's IR through ``AllocSizer`` (once per distinct
  allocation), and TVM's objects through ``tvm/_spbm_extract.TVMSizer``, which hands every
  symbolic allocation to it (reading only that binding) but sizes constant shapes itself.
  The constant ``elem * prod(dims)`` of both is the fold kernel's (``ir/_const_fold.pyx``,
  ``product_fold``: :func:`~memcore_py.analysis.arith.tensor_bytes` and ``TVMSizer`` call it);
  so is the element size of a dtype (``storage_bytes`` in ``ir/_const_fold.pxd``, which
  ``element_bytes`` in ``tvm/_ffi_reader.pxd`` and ``dtype_bytes`` in ``ir/types.py`` call on
  a dtype each reads from its object model). The constant upper bound of a symbolic
  dim (TVM's ``ConstIntBound`` and ``ModularSet`` rules): once, the compiled kernel
  ``ir/_int_bound.pyx``, which :func:`~memcore_py.analysis.arith.upper_bound_dim` and
  ``TVMSizer`` both call (each encoding the dim from its own object model).
- Which calls use their arguments (a PrimFunc of the module, an ``ExternFunc``,
  ``R.vm.call_tir_dyn``), allocate or share storage: :func:`~memcore_py.analysis.
  storage_tokens.callee_flags`, recorded per callee in the binding table by the reader.
- The Init walk's rules (uses by those calls, discards of tokens that escape -- returned,
  passed to another kind of call, into an ``If``, used in another block -- re-bindings,
  storage-sharing ops, tuples and get-items, the steps): once, in the rule kernel
  :class:`memcore_py.analysis._storage_walk.InitRules` over the binding table
  (``analysis/_binding_table.pxd``). Two readers fill the table and apply no rule: memcore's
  IR through ``analysis/_ir_reader.pyx``, TVM's objects through ``tvm/_table_reader.pyx``
  (the native pass, :mod:`memcore_py.tvm.spbm_extract`). Both record into one
  ``TokenRecorder``, decoded into the :class:`~memcore_py.analysis.storage_tokens.
  TokenProgram` by one ``walk_program``.
- Allocation (the token program, TVM mode and arena packing): :func:`memcore.plan_tokens` and
  :func:`memcore.plan_offsets`, once.
- The rewrite: :class:`_StorageAllocationRewriter` on memcore's IR, ``_PlanWriter`` of
  ``tvm/spbm_extract.py`` (over ``rewrite_block`` of ``tvm/_spbm_extract.pyx``) on TVM's
  objects: two writers of one plan, both placing storages by :mod:`memcore_py.planning.emission`.

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

from dataclasses import dataclass

import numpy as np

from .._compiled import load_compiled
from ..ir._util import gc_paused
from ..analysis.arith import UnsupportedBound, dynamic_output_bytes, upper_bound_shape
from ..analysis.storage_tokens import StorageTokens, alloc_tensor_info, analyze_storage_tokens
from ..errors import PassError
from ..ir.construct import function_with_body, module_with_functions, new_binding, new_block, new_call, new_if
from ..ir.construct import new_match_cast, new_seq
from ..ir.expr import (
    BindingBlock,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    MatchCast,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Var,
)
from ..ir.memo import MEMO
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm
from ..ir.types import ObjectType
from ..planning.allocate import MODES, plan_memory, run_token_program
from ..planning.arena_options import ARENA_TIME_LIMIT
from ..planning.emission import emission_sites
from ..planning.memory_plan import MemoryPlan
from .pass_infra import ModulePass, PassContext

__all__ = [
    "StaticPlanBlockMemory",
    "static_plan_block_memory",
    "plan_block_memory",
    "PlannedModule",
    "plan_statistics",
    "differences_from_tvm",
    "ATTR_PLAN_DYNAMIC_FUNC_OUTPUT",
    "plans_dynamic_output",
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

_ALLOC_STORAGE = get_op("relax.memory.alloc_storage")
_MEM_ALLOC_TENSOR = get_op("relax.memory.alloc_tensor")
_ENSURE_ZERO_OFFSET = get_op("relax.memory.ensure_zero_offset")
_OBJECT = ObjectType()
_ZERO = PrimValue(IntImm(0))
#: Leaf nodes of the rewritten allocations, shared across calls (IR nodes are immutable):
#: dtype -> DataTypeImm, scope -> StringImm, offset -> PrimValue. Memo tables
#: (memcore_py.ir.memo), trimmed when a rewrite starts.
_LEAF_IMMS = MEMO.group("transform.static_plan_block_memory.leaf_imms", 3)
_DTYPE_IMMS, _SCOPE_IMMS, _OFFSET_IMMS = _LEAF_IMMS.tables


# --------------------------------------------------------------------------------------
# Stage 3: rewrite
# --------------------------------------------------------------------------------------
class _StorageAllocationRewriter:
    """Port of TVM ``StorageAllocationRewriter`` (src/relax/transform/
    static_plan_block_memory.cc).

    TVM re-emits every binding through an ``ExprMutator``; this port knows from the analysis
    where each change goes (block id and position of every planned allocation, emission site
    of every storage, position of every ``If`` on the way) and rebuilds only those blocks,
    copying the unchanged runs of bindings as slices. Emission positions come precomputed
    (:mod:`memcore_py.planning.emission`, where the port differs from TVM for unsound
    placements). The rebuild of the planned allocations is compiled
    (:class:`memcore_py.transform._alloc_rewrite.AllocRewrite`).
    """

    # one instance per rewrite: slots make its fields cheaper to set, read and free
    __slots__ = ("mod", "sites", "plan", "zero_offset_views", "storage_site", "emit_before", "allocs", "dynamic",
                 "dirty", "storage_var", "_dtype_imm", "_scope_imm", "_offset_imm", "_shape_imm", "tok_storage",
                 "tok_offset", "_compiled", "_allocs_rewrite", "_func_name", "_bounds")

    def __init__(self, mod: IRModule, st: StorageTokens, plan: MemoryPlan, zero_offset_views: bool = False):
        self.mod = mod
        sites = self.sites = st.sites
        self.plan = plan
        self.zero_offset_views = zero_offset_views
        storage_site = self.storage_site = emission_sites(sites, plan)
        compiled = load_compiled("memcore_py.transform._alloc_rewrite")
        # block id -> {position: [storage ids to emit before it]}; block id -> {position:
        # token}, positions increasing (tokens are in program order)
        self.emit_before, self.allocs = compiled.site_tables(storage_site, sites.tok_block, sites.tok_index)
        # Case 2 candidates: unplanned allocations in functions with the attribute
        self.dynamic: dict = {}
        if sites.unplanned_allocs:
            plan_dyn = None
            for f, entry in enumerate(sites.functions):
                attrs = entry[1].attrs  # .func
                if plans_dynamic_output(attrs):
                    if plan_dyn is None:
                        plan_dyn = set()
                    plan_dyn.add(f)
            if plan_dyn:
                for u in sites.unplanned_allocs:
                    if u.func in plan_dyn:
                        self.dynamic.setdefault(u.block, {})[u.position] = u.binding
        # scopes that contain a change (and so every scope around them)
        self.dirty = compiled.dirty_scopes((self.emit_before, self.allocs, self.dynamic), sites.block_scope,
                                           sites.scope_parent)
        self.storage_var: list = [None] * len(plan.storages)
        # immutable leaf nodes, shared across calls (bounded caches)
        _LEAF_IMMS.trim()
        self._dtype_imm: dict = _DTYPE_IMMS
        self._scope_imm: dict = _SCOPE_IMMS
        self._offset_imm: dict = _OFFSET_IMMS
        self._shape_imm: dict = {}
        self.tok_storage = plan.tok_storage.tolist()
        self.tok_offset = plan.tok_offset.tolist() if plan.mode == "arena" else [0] * len(self.tok_storage)
        self._compiled = compiled  # same_shape, splice
        # also names the storages (storage, storage1, ... across the module) and binds them
        self._allocs_rewrite = compiled.AllocRewrite(
            self.tok_storage, self.tok_offset, self.storage_var, self._dtype_imm, _MEM_ALLOC_TENSOR, _ZERO,
            _ALLOC_STORAGE, _OBJECT)
        self._func_name = ""
        self._bounds = None

    def rewrite(self) -> IRModule:
        updates = {}
        for gv, func, bounds, sid in self.sites.functions:
            self._func_name = gv.name
            self._bounds = bounds
            body = self._seq(func.body, sid)
            attrs = func.attrs
            if plans_dynamic_output(attrs):  # TVM removes the attribute only then
                attrs = {k: v for k, v in attrs.items() if k != ATTR_PLAN_DYNAMIC_FUNC_OUTPUT}
            if body is not func.body or attrs is not func.attrs:
                updates[gv] = function_with_body(func, body, attrs)
        return module_with_functions(self.mod, updates) if updates else self.mod

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
        if type(arg0) is ShapeExpr and self._compiled.same_shape(arg0.values, ty.shape):
            return arg0
        imm = self._shape_imm.get(ty)
        if imm is None:
            imm = self._shape_imm[ty] = ShapeExpr(ty.shape)
        return imm

    # ------------------------------------------------------------------ walk
    def _seq(self, seq: SeqExpr, sid: int) -> SeqExpr:
        if sid not in self.dirty:
            return seq
        blocks = []
        changed = False
        for block, bid in zip(seq.blocks, self.sites.scope_blocks[sid]):
            new = self._block(block, bid)
            changed = changed or new is not block
            blocks.append(new)
        if not changed:
            return seq
        return new_seq(blocks, seq.body, seq.ty)

    def _block(self, block: BindingBlock, bid: int) -> BindingBlock:
        emit = self.emit_before.get(bid)
        allocs = self.allocs.get(bid)
        dynamic = self.dynamic.get(bid)
        ifs = self.sites.block_ifs.get(bid)
        dirty_ifs = None
        if ifs:
            dirty = self.dirty
            dirty_ifs = {i: sids for i, sids in ifs if sids[0] in dirty or sids[1] in dirty}
        if not (emit or allocs or dynamic or dirty_ifs):
            return block
        is_df = type(block) is DataflowBlock
        if not (dynamic or dirty_ifs):
            # storages to emit and planned allocations only (the common case): one compiled pass
            # (a planned allocation at a non-zero offset is reached through a zero-offset view,
            # see below)
            out = self._allocs_rewrite.rewrite_block(
                block.bindings, emit, allocs, self.plan.storages, self.sites.tok_binding, self.storage_site,
                self._scope_imm, self._alloc_tensor_args, self._offset_imm,
                _ENSURE_ZERO_OFFSET if self.zero_offset_views else None, is_df)
            return new_block(DataflowBlock if is_df else BindingBlock, out)
        out = list(block.bindings)
        # Only the special positions (storages to emit, Case-2 allocations, Ifs with changes)
        # are visited; the planned allocations are rebuilt afterwards by AllocRewrite (their
        # storage is emitted at a special position of this block or of an enclosing one, so
        # before it is needed). inserts: (position, bindings to insert before it), increasing
        # positions.
        inserts = self._special_positions(out, emit or {}, dynamic or {}, dirty_ifs or {}, is_df)
        view_positions, views = [], []
        if allocs:
            if self.zero_offset_views:
                # a planned allocation at a non-zero offset is reached through
                # R.memory.ensure_zero_offset: TVM's kernels reject a tensor with a non-zero
                # byte_offset; the view advances the data pointer instead (no copy when the
                # offset is a multiple of 64). The raw allocation goes right before the view,
                # after any storage emitted at that position.
                self._allocs_rewrite.rebuild_views(out, allocs, self._alloc_tensor_args, _ENSURE_ZERO_OFFSET,
                                                   DataflowVar if is_df else Var, self._offset_imm,
                                                   view_positions, views)
            else:
                self._allocs_rewrite.rebuild(out, allocs, self._alloc_tensor_args, self._offset_imm)
        if inserts or views:
            # compiled merge of the two position-sorted insertion lists
            out = self._compiled.splice(out, inserts, view_positions, views)
        # every element is a binding of the input block or one built here: skip re-validation
        return new_block(DataflowBlock if is_df else BindingBlock, out)

    def _special_positions(self, out, emit, dynamic, dirty_ifs, is_df):
        """Visit the positions of a block (bindings ``out``, rewritten in place) that have
        storages to emit, a Case-2 allocation or an If with changes; returns the bindings to
        insert, ``[(position, [bindings]), ...]`` by increasing position."""
        special = set(emit)
        special.update(dynamic)
        special.update(dirty_ifs)
        inserts = []
        for i in sorted(special):
            pre = emit.get(i)
            if pre is not None:
                inserts.append((i, self._emit_storages(pre)))
            b = out[i]
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
                    node = new_if(value.cond, t_b, f_b, value.ty)
                    out[i] = new_match_cast(b.var, node, b.ty) if type(b) is MatchCast else new_binding(b.var, node)
        return inserts

    def _emit_storages(self, storage_ids):
        """The bindings of storages ``storage_ids`` (compiled: AllocRewrite.emit_storages)."""
        return self._allocs_rewrite.emit_storages(storage_ids, self.plan.storages, self.sites.tok_binding,
                                                  self.storage_site, self._scope_imm)

    def _alloc_tensor_args(self, key, call):
        """Arguments of the ``R.memory.alloc_tensor`` replacing ``call`` (shared between
        allocations with the same storage, offset, type and device)."""
        k, offset, ty, dev = key
        storage = self.storage_var[k]
        if storage is None:  # pragma: no cover - internal invariant
            raise AssertionError(f"internal error: storage {k} used before its emission site")
        return (
            storage,
            self._offset(offset) if offset else _ZERO,
            self._shape_expr(call, ty),
            self._dtype(ty.dtype),
            dev,
        )

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
        sb = self._allocs_rewrite.new_storage(nbytes, args[2], scope_imm, dtype, in_dataflow)
        ty = b.var.ty
        alloc = new_call(_MEM_ALLOC_TENSOR, (sb.var, _ZERO, self._shape_expr(call, ty), self._dtype(dtype), args[2]),
                         None, (), ty)
        return sb, new_binding(b.var, alloc)



def plans_dynamic_output(attrs) -> bool:
    """Whether a function with the attributes ``attrs`` plans its unplanned dynamic-shape
    allocations ("Case 2") and loses the attribute: ``relax.memory_plan_dynamic_func_output``
    is present and a nonzero integer. TVM reads it as an ``IntImm`` (``GetAttr<IntImm>``,
    absent or None as 0; a Python int or bool converts to one).

    Raises
    ------
    PassError
        The attribute is not an integer, a bool or None (a string, a float, a list: TVM's
        pass fails its ``IntImm`` conversion with a TypeError); the message names it.
    """
    if ATTR_PLAN_DYNAMIC_FUNC_OUTPUT not in attrs:
        return False
    return _int_attr(attrs[ATTR_PLAN_DYNAMIC_FUNC_OUTPUT])


def _int_attr(v) -> bool:
    if v is None:
        return False
    if isinstance(v, (int, np.integer)):  # bool included
        return bool(v != 0)
    if isinstance(v, IntImm):
        return v.value != 0
    if isinstance(v, PrimValue) and isinstance(v.value, IntImm):
        return v.value.value != 0
    raise PassError(f"StaticPlanBlockMemory: the function attribute {ATTR_PLAN_DYNAMIC_FUNC_OUTPUT!r} must be an "
                    f"integer or a bool (TVM reads it as an IntImm); got {type(v).__name__} {v!r}")


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------
@dataclass(eq=False)
class PlannedModule:
    """Result of :func:`plan_block_memory`: the rewritten module and the plan behind it."""

    module: IRModule
    plan: MemoryPlan
    tokens: StorageTokens
    """The analysis the plan was made from (token program and allocation sites)."""


def _check_options(mode, alignment, time_limit=None):
    if mode not in MODES:
        raise PassError(f"StaticPlanBlockMemory mode must be one of {MODES}; got {mode!r}")
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1:
        raise PassError(f"StaticPlanBlockMemory alignment must be an int >= 1; got {alignment!r}")
    if time_limit is not None and (isinstance(time_limit, bool) or not isinstance(time_limit, (int, float))
                                   or not time_limit > 0):
        raise PassError(f"StaticPlanBlockMemory time_limit must be None or a positive number of seconds; "
                        f"got {time_limit!r}")


def _plan_block_memory(mod, mode, alignment, time_limit, zero_offset_views, lower_bound, ctx) -> tuple:
    """``(rewritten module, plan, analysis)``: the three fields of a :class:`PlannedModule`."""
    st = analyze_storage_tokens(mod)
    plan = plan_memory(st.program, mode, alignment=alignment, time_limit=time_limit, lower_bound=lower_bound)
    if ctx is not None and ctx.tracing:
        _trace(ctx, st, plan, mode)
    if plan.storages or any(plans_dynamic_output(entry.func.attrs) for entry in st.sites.functions):
        out = _StorageAllocationRewriter(mod, st, plan, zero_offset_views and mode == "arena").rewrite()
    else:  # nothing planned and no Case-2 attribute: the module itself, as rewrite() returns it
        out = mod
    return out, plan, st


def plan_block_memory(mod: IRModule, mode: str = "tvm", *, alignment: int = 64, time_limit=ARENA_TIME_LIMIT,
                      zero_offset_views: bool = True, lower_bound: bool = False,
                      ctx: PassContext | None = None) -> PlannedModule:
    """Plan and rewrite ``mod`` (see :func:`static_plan_block_memory`), returning the plan too.

    ``lower_bound=True`` also computes the plan's max-live lower bound in TVM mode (arena
    mode always does). The other parameters are :func:`static_plan_block_memory`'s.
    """
    _check_options(mode, alignment, time_limit)
    with gc_paused():
        return PlannedModule(*_plan_block_memory(mod, mode, alignment, time_limit, zero_offset_views, lower_bound, ctx))


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
    # functions (a multiple of the pass's own time), so it is paused meanwhile. It is
    # resumed only after the analysis and the plan are released (taking the module out inside the
    # paused region), so that resuming does not start a collection over them.
    with gc_paused():
        return _plan_block_memory(mod, mode, alignment, time_limit, zero_offset_views, False, ctx)[0]


def plan_statistics(mod: IRModule, mode: str = "tvm", *, alignment: int = 64, time_limit=ARENA_TIME_LIMIT) -> dict:
    """Numbers of the plan for ``mod`` without rewriting it: ``n_planned`` tensors,
    ``n_storage``, ``tvm_bytes`` / ``planned_bytes`` (constant-size storages of TVM mode / of
    ``mode``), ``lower_bound`` (sum of max-live bytes per (function, scope, device) pool)."""
    _check_options(mode, alignment, time_limit)
    program = analyze_storage_tokens(mod).program
    plan = plan_memory(program, mode, alignment=alignment, time_limit=time_limit, lower_bound=True)
    return {
        "n_planned": program.n_tok,
        "n_storage": plan.n_storage,
        "tvm_bytes": plan.tvm_bytes,
        "planned_bytes": plan.planned_bytes,
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
    program = st.program
    found: dict = {}

    def add(f, what):
        lst = found.setdefault(f, [])
        if what not in lst:
            lst.append(what)

    for name in st.tvm_check_failures:
        add(name, DIFF_DUPLICATE_CROSS_BLOCK_LEAF)
    ours = run_token_program(program, key_device=True)
    theirs = run_token_program(program, key_device=False)
    funcs = program.tok_func
    for f in np.unique(funcs).tolist():
        idx = np.flatnonzero(funcs == f)
        a, b = ours.storage_of[idx], theirs.storage_of[idx]
        # same partition of the function's tokens into storages, and the same sizes
        _, ia = np.unique(a, return_inverse=True)
        _, ib = np.unique(b, return_inverse=True)
        if not np.array_equal(ia, ib) or not np.array_equal(
            np.sort(ours.storage_bytes[np.unique(a)]), np.sort(theirs.storage_bytes[np.unique(b)])
        ):
            add(program.function_names[f], DIFF_DEVICE_POOLS)
    plan = plan_memory(program, "tvm", key_device=False)
    for s, site in zip(plan.storages, emission_sites(st.sites, plan)):
        if not site.is_tvm_site:
            add(program.function_names[s.func], DIFF_DOMINATING_STORAGE)
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
    for s in plan.storages:
        counts = per_func.setdefault(s.func, [0, 0])
        counts[0] += 1
        counts[1] += len(s.tokens)
    for f, name in enumerate(st.program.function_names):
        n_storage, n_tok = per_func.get(f, [0, 0])
        ctx.note(StaticPlanBlockMemory.name,
                 f"function {name!r}: {n_tok} allocations planned into {n_storage} storages ({mode} mode)")
    hoisted = sum(1 for site in emission_sites(st.sites, plan) if not site.is_tvm_site)
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
        self._checked = (mode, alignment, time_limit)  # the option objects last validated

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        # the options are public attributes: validated again when one was replaced since
        checked = self._checked
        if self.mode is not checked[0] or self.alignment is not checked[1] or self.time_limit is not checked[2]:
            _check_options(self.mode, self.alignment, self.time_limit)
            self._checked = (self.mode, self.alignment, self.time_limit)
        with gc_paused():
            return _plan_block_memory(mod, self.mode, self.alignment, self.time_limit,
                                      self.zero_offset_views, False, ctx)[0]

    def __repr__(self):
        return f"StaticPlanBlockMemory(mode={self.mode!r})"
