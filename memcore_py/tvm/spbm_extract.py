"""The native StaticPlanBlockMemory by extraction: the module is read in place into the
binding table, the one rule kernel finds the tokens, and the plan is written on the TVM
objects; only allocations of symbolic shapes are read into memcore's IR.

Design
------
The full conversion (:func:`~memcore_py.tvm.passes.apply_memcore_pass`) reads the whole module
into memcore's IR, runs :class:`memcore_py.transform.StaticPlanBlockMemory` and writes the result
back. On a small module that cost more than TVM's own pass: reading every binding and
writing the function back cost more than the analysis and the plan together.
StaticPlanBlockMemory reads of most bindings only which variables they pass to which kind
of callee, and changes only the planned allocations. Here:

1. :class:`~memcore_py.tvm._table_reader.TVMReader` reads each Relax function (``If``
   branches, dataflow blocks, nested calls, ``MatchCast`` s included) into the binding table
   (``analysis/_binding_table.pxd``), with each callee's properties from memcore's op table
   (:func:`~memcore_py.analysis.storage_tokens.callee_flags`, per op, GlobalVar and packed
   symbol); the Init rule kernel (:class:`~memcore_py.analysis._storage_walk.InitRules`, the
   same as on memcore's IR) walks it and records tokens and events, each allocation sized by
   :class:`~memcore_py.tvm._spbm_extract.TVMSizer`, so that
   :func:`~memcore_py.analysis.storage_tokens.walk_program` makes the same
   :class:`~memcore_py.analysis.storage_tokens.TokenProgram` as the full pass;
2. :func:`~memcore_py.planning.allocate.plan_memory`, the full pass's planner, plans it (TVM
   or arena mode, the same options);
3. :class:`_PlanWriter` writes the plan: each storage is bound at its emission site, the full
   rewriter's rule (:func:`~memcore_py.planning.emission.emission_sites`: right before its first
   allocation when that dominates every use, else before the ``If`` that holds the uses; a
   ``DataflowVar`` when all uses are in one dataflow block), in the order the full rewriter
   visits the sites, which names them; :func:`~memcore_py.tvm._spbm_extract.rewrite_block`
   rebuilds, in C, each block holding a storage or a planned allocation (the storage bindings
   and the rewritten allocations built through the compiled writer's constructors, every other
   binding the object it was); the ``If`` s, branches, bodies, functions and the module on the
   way to a change are made new (:mod:`._extraction`).
4. "Case 2": in a function whose attribute ``relax.memory_plan_dynamic_func_output`` is true
   (:func:`~memcore_py.transform.static_plan_block_memory.plans_dynamic_output`), each allocation
   whose token was discarded (left unplanned:
   returned, escaping), in program order, whose type has a symbolic shape, gets a storage of
   its own, sized by the full pass's rule (:meth:`_Symbolic.dynamic_output_bytes`:
   :func:`~memcore_py.analysis.arith.upper_bound_shape` then
   :func:`~memcore_py.analysis.arith.dynamic_output_bytes`). It is written as one more token
   and storage of the plan: the storage bound right before the allocation, after the plan's
   storages emitted there (named in that order, as the full rewriter names them), and the
   allocation rewritten by ``rewrite_block`` as ``R.memory.alloc_tensor(storage, 0, shape,
   dtype, device)``. Such a function loses the attribute (``without_attr`` on the written
   function); a false one keeps it, as in TVM.

The storages' ``R.shape([bytes])`` and the offsets' ``IntImm`` s are TVM objects shared across
calls (bounded caches below), as the writer shares constant leaves.

Allocations of symbolic shapes are the one place where memcore's IR is read. In a function
with bounds (after :func:`~memcore_py.analysis.arith.bounds_from_attrs` on its signature and
attributes, for the TIR vars TVM lists in its type), the sizer bounds each distinct symbolic
dim (interned by structure in C) with the bound kernel the full pass's rule
(:func:`~memcore_py.analysis.arith.upper_bound_dim`) calls first (``memcore_py/ir/
_int_bound.pyx``, the dim encoded from TVM's objects); only a dim the kernel does not bound by
a constant, or does not encode, is read with the full conversion's reader and bounded by that
rule (:meth:`_Symbolic.dim_bound`); an allocation
whose every dim has a constant bound is then sized in C as a constant one. Any other symbolic
allocation (the sizer has checked it as the full pass checks it) is handed to
:class:`_Symbolic` once per distinct type of a function, which reads its dims with the same
reader and sizes them with the full pass's own code
(:func:`~memcore_py.analysis.storage_tokens.token_size`); in a function without bounds that
size depends only on the dims' structure with their variables by name
(:func:`~memcore_py.tvm._spbm_extract.named_dims`, read in C) and the dtype, and is looked up by
that key across calls (:data:`_TOKEN_SIZES`) before anything is read. A storage of a symbolic
size is written with the writer, in the function's own symbolic variables. The shape of a Case-2
allocation is read with the same reader, and its storage's size written the same way.

The full conversion runs instead (:func:`static_plan_block_memory_extracted` returns None) when
the reader declines a function (a ``SeqExpr`` or function nested in an expression, an object of
an unexpected class, a callee that is not an ``Op``, a GlobalVar of the module or an
``ExternFunc``), when a storage must be emitted inside an ``If`` bound by a ``MatchCast`` (a
planned storage or a Case-2 one alike), a bound attribute or an allocation the full pass
rejects or the sizer does not size (the full conversion then reports it), a dim of a Case-2
allocation the reader does not read or whose upper bound needs ``T.Select``, a body without a
type that a ``MatchCast`` may name, when the module has global infos or a function entry that
is neither a Relax function nor a PrimFunc, or when the compiled reader is unavailable.

What the extraction does not read it does not check, as for the other extracted passes
(:mod:`.lower_alloc_extract`, :mod:`.kill_extract`): a call of an op memcore does not model
stays the same TVM object (its arguments' tokens are discarded, TVM's rule for any other
call), where the full conversion raises :class:`~memcore_py.tvm.TVMConversionError` naming it.
Nothing is dropped either way. An allocation the sizer does not accept (a malformed one
included) declines, so the full pass reports it as it would.

Measured against TVM's pass by bench ``test_fixed_cost_native_spbm`` and
``test_native_static_plan_block_memory``; figures in bench/README.md ("TVM bridge").
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..analysis.arith import (
    ATTR_TIR_NON_NEGATIVE_VAR,
    ATTR_TIR_VAR_LOWER_BOUND,
    ATTR_TIR_VAR_UPPER_BOUND,
    EMPTY_BOUNDS,
    UnsupportedBound,
    bounds_from_attrs,
    dynamic_output_bytes,
    upper_bound_dim,
    upper_bound_shape,
)
from ..analysis.storage_tokens import (
    AllocationSites,
    TokenInfo,
    token_size,
    walk_program,
)
from ..errors import MemcoreError, PassError
from ..ir.memo import MEMO
from ..ir.prim import IntImm
from ..planning.allocate import plan_memory
from ..planning.emission import emission_sites
from ..transform.static_plan_block_memory import ATTR_PLAN_DYNAMIC_FUNC_OUTPUT, plans_dynamic_output
from . import _ffi_reader, _ffi_writer, _spbm_extract, _table_reader
from ._extraction import (
    any_type,
    dtype_const,
    extern_flags,
    function_with_blocks,
    int64_imm,
    module_callees,
    module_entries,
    module_with,
    op_flags,
    shape_of_bytes,
)
from ._node_map import AddrMap, NodeMap
from .from_tvm import _Reader
from .to_tvm import _PrimWriter
from .values import dict_attrs_from_tvm

__all__ = ["static_plan_block_memory_extracted"]

#: function attributes that bound symbolic sizes (read by the full pass's own reader)
_BOUND_ATTRS = frozenset((ATTR_TIR_VAR_UPPER_BOUND, ATTR_TIR_VAR_LOWER_BOUND, ATTR_TIR_NON_NEGATIVE_VAR))


#: Across calls: ``(dims key, dtype)`` -> ``(const bytes, bytes)`` of a token in a function
#: without bounds (:meth:`_Symbolic.__call__`; the key: :func:`~._spbm_extract.named_dims`,
#: the dims' structure with their variables by name, all :func:`token_size` reads of them).
#: A memo table (memcore_py.ir.memo).
_TOKEN_SIZES_GROUP = MEMO.group("tvm.spbm_extract.token_sizes")
_TOKEN_SIZES = _TOKEN_SIZES_GROUP.table


class _Symbolic:
    """The sizes of allocations of symbolic shapes, and the ``R.shape([bytes])`` of their
    storages: the full pass's own code on the few bindings the sizer hands over, read by the
    full conversion's reader (made at the first one), one function at a time."""

    def __init__(self, api, layout, tvm_mod):
        self.api, self.layout, self.tvm_mod = api, layout, tvm_mod
        self.reader = None
        self.read_for = -1  # the function index the reader was last started on
        self.name = ""
        self.func_idx = -1
        self.bounds = EMPTY_BOUNDS
        #: function index -> {symbolic var name: its TVM var}, for the storages' sizes
        self.sources: dict = {}
        #: function index -> the PrimExpr writer of its storages' sizes (its symbolic vars the
        #: function's own; the shapes written are held by the pass call's keep)
        self.writers: dict = {}
        #: (function index, id of a size the plan holds) -> its ``R.shape([bytes])``'s address:
        #: storages of one size class share the object
        self.shapes: dict = {}

    def _reader(self):
        """The reader, started on the current function (its symbolic vars and leaves are
        per function, as the full conversion's)."""
        reader = self.reader
        if reader is None:
            # recording: the reader then keeps each symbolic var's TVM object (prim_sources)
            reader = self.reader = _Reader(self.api, self.tvm_mod, record=NodeMap())
        if self.read_for != self.func_idx:
            self.read_for = self.func_idx
            reader.where = f"function {self.name!r}"
            reader.prims = {}
            reader.leaves = AddrMap()
        return reader

    def begin(self, name: str, func_idx: int, f_addr: int, attrs: dict):
        """Start the function ``name``: read its bounds when it has ``tir_var_*`` attributes,
        for the TIR vars of its signature as TVM lists them (``TIRVarsInType`` of its type,
        what TVM's ``SetTIRVarRangeConstraints`` reads; read in C by
        :func:`~._ffi_reader.signature_var_names`, else asked of TVM).

        Raises
        ------
        PassError
            A bound attribute of the wrong type (as the full pass).
        """
        self.name, self.func_idx = name, func_idx
        if _BOUND_ATTRS.isdisjoint(attrs):  # the common case: nothing to read
            self.bounds = EMPTY_BOUNDS
            return
        names = _ffi_reader.signature_var_names(self.layout, f_addr)
        if names is None:  # a type the compiled reader does not read: TVM's own analysis
            func = _ffi_writer.object_at(f_addr)
            names = [str(v.name) for v in self.api.tvm.relax.analysis.tir_vars_in_type(func.ty)]
        self.bounds = bounds_from_attrs(attrs, names, name)

    def __call__(self, dims_addr: int, dtype: str):
        """``(const bytes, bytes)`` of the :class:`TokenInfo` of an allocation the sizer checked,
        of ``dtype`` and the dims ``Array`` at ``dims_addr`` (its type's), in the current
        function (:func:`~memcore_py.analysis.storage_tokens.token_size`); None when a dim is
        not read or the full pass would reject the size (the full conversion then reports it,
        naming the binding).

        In a function without bounds the size depends only on the dims' structure, their
        variables by name (:func:`~._spbm_extract.named_dims`), and the dtype: it is looked up
        by that key across calls (:data:`_TOKEN_SIZES`) before the dims are read. Its variables
        are then named by name only (the storages' sizes are written in the function's own
        variables, :meth:`shape_addr`; the reuse classes are keyed by structure)."""
        named = _spbm_extract.named_dims(self.layout, dims_addr) if self.bounds is EMPTY_BOUNDS else None
        if named is not None:
            key, var_addrs = named
            sized = _TOKEN_SIZES.get((key, dtype))
            if sized is not None:
                object_at = _ffi_writer.object_at
                sources = self.sources.setdefault(self.func_idx, {})
                for name, addr in var_addrs.items():
                    if name not in sources:
                        sources[name] = object_at(addr)
                return sized
        try:
            sized = token_size(self._shape(_ffi_writer.object_at(dims_addr)), dtype, self.bounds, self.name, "?")
        except MemcoreError:
            return None
        if named is not None:
            _TOKEN_SIZES_GROUP.put((named[0], dtype), sized)
        return sized

    def _shape(self, dims):
        """The dims ``Array`` ``dims`` read into memcore's PrimExprs by the reader of the current
        function, whose symbolic variables then name the storages' sizes (:meth:`shape_addr`).

        Raises
        ------
        MemcoreError
            A dim the reader does not read.
        """
        reader = self._reader()
        shape = reader.prims_of(dims)
        sources = self.sources.setdefault(self.func_idx, {})
        for h, pv in reader.prims.items():
            sources[pv.name] = reader.prim_sources[h]
        return shape

    def dynamic_output_bytes(self, binding_addr: int, dtype: str):
        """The size of the "Case 2" storage of the unplanned allocation bound at
        ``binding_addr`` (of ``dtype``) in the current function: the full pass's rule
        (``_StorageAllocationRewriter._dynamic_output``: the upper-bounded shape,
        :func:`~memcore_py.analysis.arith.upper_bound_shape`, folded by
        :func:`~memcore_py.analysis.arith.dynamic_output_bytes`), or None when its type's shape
        is constant (it keeps no storage of its own).

        Raises
        ------
        MemcoreError
            A dim the reader does not read.
        UnsupportedBound
            The upper bound needs ``T.Select`` (the full pass reports it).
        """
        shape = self._shape(_ffi_writer.object_at(binding_addr).var.ty.shape.values)
        if all(type(d) is IntImm for d in shape):
            return None
        return dynamic_output_bytes(upper_bound_shape(shape, self.bounds), dtype)

    @property
    def bounded(self) -> bool:
        """The current function bounds its symbolic variables (``tir_var_*`` attributes)."""
        return bool(self.bounds)

    def dim_bound(self, addr: int) -> int:
        """The upper bound of the dim PrimExpr at ``addr`` in the current function
        (:func:`~memcore_py.analysis.arith.upper_bound_dim`) when it is a non-negative
        constant, else -1 (the allocation is then sized whole, by :meth:`__call__`)."""
        try:
            ub = upper_bound_dim(self._reader().prim(_ffi_writer.object_at(addr)), self.bounds)
        except (MemcoreError, UnsupportedBound):
            return -1
        return ub.value if type(ub) is IntImm and ub.value >= 0 else -1

    def shape_addr(self, keep, func_idx: int, nbytes) -> int:
        """The address (owned by ``keep``) of ``R.shape([nbytes])`` for a storage of the
        ``func_idx``-th function, its symbolic vars that function's own (one object per
        size object of the plan, which outlives the call)."""
        key = (func_idx, id(nbytes))
        addr = self.shapes.get(key)
        if addr is not None:
            return addr
        writer = self.writers.get(func_idx)
        if writer is None:
            writer = self.writers[func_idx] = _PrimWriter(self.api, dict(self.sources.get(func_idx, {})))
            writer.where = "a storage's size"
        addr = self.shapes[key] = keep.hold(self.api.rx_ffi.ShapeExpr([writer.prim(nbytes)], None))
        return addr

class _PlanWriter:
    """Writes a plan into the functions' scopes, on TVM's objects: each storage bound at its
    emission site (:func:`~memcore_py.planning.emission.emission_sites`, the full rewriter's
    rule), in the order the full rewriter visits the sites (which names them), each planned
    allocation rewritten (:func:`~._spbm_extract.rewrite_block`), and the blocks, ``If`` s and
    branches on the way to a change rebuilt; every other object stays TVM's.

    ``dynamic``: the "Case 2" allocations, ``(block id, position, token, storage)`` each, a
    token and a storage of ``planned`` past the plan's: each storage is bound right before its
    allocation, after the plan's storages emitted there (the full rewriter's order), and the
    allocation rewritten as a planned one at offset 0."""

    def __init__(self, api, layout, keep, table, planned, sites: AllocationSites, storage_site: list,
                 dynamic: list):
        self.api, self.layout, self.keep, self.table, self.planned = api, layout, keep, table, planned
        sites_rewrite = load_compiled("memcore_py.transform._alloc_rewrite")
        # block id -> {position: storages emitted before it}; block id -> {position: token}
        self.emit_before, self.allocs = sites_rewrite.site_tables(storage_site, sites.tok_block, sites.tok_index)
        if dynamic:
            blocks_with_dynamic = set()
            for bid, position, tok, k in dynamic:
                self.emit_before.setdefault(bid, {}).setdefault(position, []).append(k)
                self.allocs.setdefault(bid, {})[position] = tok
                blocks_with_dynamic.add(bid)
            for bid in blocks_with_dynamic:  # positions increasing, as rewrite_block takes them
                self.allocs[bid] = dict(sorted(self.allocs[bid].items()))
        #: the scopes holding a change, and every scope around them
        self.dirty = sites_rewrite.dirty_scopes((self.emit_before, self.allocs), sites.block_scope,
                                                sites.scope_parent)
        self.block_refs = table.block_refs()

    def blocks_of(self, sid: int):
        """``(indices, new block addresses)`` of the changed blocks of scope ``sid`` (in order),
        or None when a change cannot be written here (an ``If`` bound by a ``MatchCast``)."""
        table, dirty = self.table, self.dirty
        indices, new_blocks = [], []
        for j, bid in enumerate(table.scope_blocks[sid]):
            emit = self.emit_before.get(bid)
            allocs = self.allocs.get(bid)
            ifs = {pos: sids for pos, sids in table.block_ifs.get(bid, ())
                   if sids[0] in dirty or sids[1] in dirty}
            if not (emit or allocs or ifs):
                continue
            replaced = {}
            for pos in sorted(ifs):
                # the storages emitted up to the If are named before those in its branches, in
                # the order the full rewriter visits them
                for p in sorted(emit or ()):
                    if p > pos:
                        break
                    for k in emit[p]:
                        _spbm_extract.emit_storage(self.layout, self.keep, self.planned, k)
                h = self._if_binding(ifs[pos])
                if h is None:
                    return None
                replaced[pos] = h
            positions = list(allocs) if allocs else []  # increasing (site_tables)
            new_blocks.append(_spbm_extract.rewrite_block(
                self.layout, self.keep, self.planned, self.block_refs[bid], positions,
                [allocs[p] for p in positions], emit or {}, replaced, table.block_is_dataflow[bid]))
            indices.append(j)
        return indices, new_blocks

    def _if_binding(self, sids):
        """The address of a new binding of the ``If`` whose branches are scopes ``sids``, its
        changed branches rewritten (the same variable, the old ``If`` 's type; built in C by
        :func:`~._ffi_writer.if_binding_with_blocks`), or None (an ``If`` bound by a
        ``MatchCast``)."""
        bid, _binding, pos = self.table.scope_anchor[sids[0]]
        changes = []
        for sid in sids:
            changed = self.blocks_of(sid) if sid in self.dirty else ([], [])
            if changed is None:
                return None
            changes.extend(changed)
        return _ffi_writer.if_binding_with_blocks(self.layout, self.keep, self.block_refs[bid], pos, *changes) or None


#: made once per process: the rewrite's op addresses and the ops themselves, held
_REWRITE_OPS: list = []


def _rewrite_ops(api) -> tuple:
    if not _REWRITE_OPS:
        ops = [api.Op.get(n) for n in ("relax.memory.alloc_storage", "relax.memory.alloc_tensor",
                                       "relax.memory.ensure_zero_offset")]
        _REWRITE_OPS.append((tuple(op.__chandle__() for op in ops), ops))
    return _REWRITE_OPS[0][0]


def static_plan_block_memory_extracted(api, tvm_mod, mode: str = "tvm", alignment: int = 64, time_limit=None,
                                       zero_offset_views: bool = True):
    """StaticPlanBlockMemory on ``tvm_mod`` by extraction (module docstring): a
    ``tvm.IRModule`` (``tvm_mod`` itself when nothing is planned), or None when the full
    conversion must run. The options are :class:`memcore_py.transform.StaticPlanBlockMemory`'s
    (validated by the caller)."""
    found = module_entries(api, tvm_mod)
    if found is None:
        return None
    layout, entries = found
    rewrite_ops = _rewrite_ops(api)
    rules = load_compiled("memcore_py.analysis._storage_walk")
    recorder = rules.TokenRecorder()
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    prim = load_compiled("memcore_py.analysis._binding_table").CALLEE_USES_ARGS
    module = module_callees(entries, prim)  # a PrimFunc of the module uses its arguments
    reader = _table_reader.TVMReader(table, layout, op_flags(api), module, extern_flags)
    kernel = rules.InitRules(table, recorder, PassError)
    sizer = _spbm_extract.TVMSizer(layout, recorder, TokenInfo)
    symbolic = sizer.symbolic = _Symbolic(api, layout, tvm_mod)
    functions = []
    #: the "Case 2" allocations: (function index, block id, position, binding address, bytes)
    dynamic = []
    #: the addresses of the functions that plan Case 2 and lose the attribute
    attr_funcs = set()
    for name, f_addr in ((e.name, e.func) for e in entries if e.kind == 1):  # TVM's order
        attrs = _ffi_reader.function_attrs(layout, f_addr)
        try:
            if attrs is None:
                attrs = dict_attrs_from_tvm(_ffi_writer.object_at(f_addr).attrs, f"function {name!r}")
            plan_dynamic = plans_dynamic_output(attrs)
            if plan_dynamic:
                attr_funcs.add(f_addr)
            symbolic.begin(name, len(functions), f_addr, attrs)
        except MemcoreError:
            return None  # the full conversion reports it
        got = reader.read_function(f_addr, name)
        if got is None:
            return None
        first_tok = len(recorder.t_block)
        sizer.begin_function(len(functions))
        try:
            if not kernel.run_function(len(functions), sizer):
                return None
            if plan_dynamic:
                _dynamic_outputs(recorder, first_tok, symbolic, dynamic)
        except (PassError, UnsupportedBound):
            return None  # a malformed module or an unsupported bound: the full conversion reports it
        except MemcoreError:
            return None  # a dim the reader does not read
        functions.append((name, f_addr, got))
    program, (tok_block, tok_binding, tok_index) = walk_program(recorder, [name for name, _f, _g in functions],
                                                                kernel.extra_refs)
    plan = plan_memory(program, mode, alignment=alignment, time_limit=time_limit)
    storages = plan.storages
    if not storages and not attr_funcs:
        return tvm_mod
    keep = _ffi_writer.Keep()
    keep.hold(tvm_mod)
    tok_storage = plan.tok_storage.tolist()
    storage_first = [s.tokens[0] for s in storages]
    storage_shape = [_storage_shape(api, keep, symbolic, s.func, s.nbytes) for s in storages]
    infos, tok_info = program.infos, program.tok_info
    storage_dtype = [0 if s.dtype == infos[tok_info[t]].dtype else dtype_const(api, s.dtype)
                     for s, t in zip(storages, storage_first)]
    offset_imm = None
    if plan.mode == "arena":
        offsets = plan.tok_offset.tolist()
        if any(offsets):
            offset_imm = [int64_imm(api, o) if o else 0 for o in offsets]
    sites = AllocationSites(tok_binding, tok_block, tok_index, [], table.block_scope, table.block_is_dataflow,
                            table.block_ifs, table.scope_parent, table.scope_anchor, table.scope_blocks)
    storage_site = emission_sites(sites, plan)
    storage_dataflow = [site.dataflow_var for site in storage_site]
    # each Case-2 allocation: one more token, at offset 0, of one more storage, its first
    # allocation (so the storage takes its device, scope and dtype), bound in its block
    n_tok, n_storage = len(tok_block), len(storages)
    dynamic_sites = []
    if dynamic:
        tok_block, tok_index, tok_binding = list(tok_block), list(tok_index), list(tok_binding)
        if offset_imm is not None:
            offset_imm = offset_imm + [0] * len(dynamic)
        for j, (func_idx, bid, position, binding, nbytes) in enumerate(dynamic):
            tok_block.append(bid)
            tok_index.append(position)
            tok_binding.append(binding)
            tok_storage.append(n_storage + j)
            storage_first.append(n_tok + j)
            storage_shape.append(_storage_shape(api, keep, symbolic, func_idx, nbytes))
            storage_dtype.append(0)
            storage_dataflow.append(table.block_is_dataflow[bid])
            dynamic_sites.append((bid, position, n_tok + j, n_storage + j))
    planned = _spbm_extract.PlannedModule(
        tok_block=tok_block, tok_index=tok_index, tok_binding=tok_binding, tok_storage=tok_storage,
        tok_offset_imm=offset_imm, storage_first=storage_first, storage_shape=storage_shape,
        storage_dtype=storage_dtype, storage_dataflow=storage_dataflow,
        zero=int64_imm(api, 0), any_ty=any_type(api), op_alloc_storage=rewrite_ops[0],
        op_alloc_tensor=rewrite_ops[1], op_ensure_zero_offset=rewrite_ops[2], views=bool(zero_offset_views))
    writer = _PlanWriter(api, layout, keep, table, planned, sites, storage_site, dynamic_sites)
    new_funcs = {}
    for _name, f_addr, got in functions:
        new_func = None
        if got.scope in writer.dirty:
            changed = writer.blocks_of(got.scope)
            if changed is None:
                return None
            new_func = function_with_blocks(layout, keep, f_addr, got.blocks, changed[0], changed[1], got.ty)
        if f_addr in attr_funcs:  # the attribute is removed where it is true (TVM's rule)
            func = _ffi_writer.object_at(f_addr if new_func is None else new_func)
            new_func = keep.hold(func.without_attr(ATTR_PLAN_DYNAMIC_FUNC_OUTPUT))
        if new_func is not None:
            new_funcs[f_addr] = new_func
    return module_with(api, layout, keep, tvm_mod, entries, new_funcs)


def _storage_shape(api, keep, symbolic: _Symbolic, func_idx: int, nbytes) -> int:
    """The address of the ``R.shape([nbytes])`` of a storage of the ``func_idx``-th function
    (``nbytes`` a memcore PrimExpr, held by the caller until the module is written)."""
    if type(nbytes) is IntImm:
        return shape_of_bytes(api, nbytes.value)
    return symbolic.shape_addr(keep, func_idx, nbytes)


def _dynamic_outputs(recorder, first_tok: int, symbolic: _Symbolic, dynamic: list) -> None:
    """Append to ``dynamic`` the "Case 2" allocations of the function just walked (its tokens
    ``first_tok`` on in ``recorder``): each allocation whose token was discarded (left
    unplanned), in program order, whose type has a symbolic shape, as ``(function index, block
    id, position, binding address, bytes)`` (:meth:`_Symbolic.dynamic_output_bytes`).

    Raises
    ------
    MemcoreError, UnsupportedBound
        :meth:`_Symbolic.dynamic_output_bytes`' (the caller declines).
    """
    discarded = recorder.discarded
    if not discarded:
        return
    t_block, t_index, t_binding, t_info = recorder.t_block, recorder.t_index, recorder.t_binding, recorder.t_info
    for t in range(first_tok, len(t_block)):
        if t not in discarded:
            continue
        nbytes = symbolic.dynamic_output_bytes(t_binding[t], t_info[t].dtype)
        if nbytes is not None:
            dynamic.append((symbolic.func_idx, t_block[t], t_index[t], t_binding[t], nbytes))
