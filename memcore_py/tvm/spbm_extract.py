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
(:func:`~memcore_py.analysis.storage_tokens.token_size`); a storage of a symbolic size is
written with the writer, in the function's own symbolic variables.

The full conversion runs instead (:func:`static_plan_block_memory_extracted` returns None) when
the reader declines a function (a ``SeqExpr`` or function nested in an expression, an object of
an unexpected class, a callee that is not an ``Op``, a GlobalVar of the module or an
``ExternFunc``), when a storage must be emitted inside an ``If`` bound by a ``MatchCast``,
when a function has the attribute
``relax.memory_plan_dynamic_func_output`` (Case-2 allocations), a bound attribute or an
allocation the full pass rejects or the sizer does not size (the full conversion then reports
it), a body without a type that a ``MatchCast`` may name, when the module has global infos or a
function entry that is neither a Relax function nor a PrimFunc, or when the compiled reader is
unavailable.

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
    upper_bound_dim,
)
from ..analysis.storage_tokens import (
    AllocationSites,
    TokenInfo,
    token_size,
    walk_program,
)
from ..errors import MemcoreError, PassError
from ..ir.construct import new_shape_expr
from ..ir.prim import IntImm
from ..planning.allocate import plan_memory
from ..planning.emission import emission_sites
from ..transform.static_plan_block_memory import ATTR_PLAN_DYNAMIC_FUNC_OUTPUT
from . import _ffi_reader, _ffi_writer, _spbm_extract, _table_reader
from ._extraction import (
    NO_INFOS,
    any_type,
    dtype_const,
    extern_flags,
    function_with_blocks,
    if_with_branches,
    int64_imm,
    module_callees,
    module_entries,
    module_with,
    seq_with,
    shape_of_bytes,
)
from ._node_map import AddrMap, NodeMap
from .from_tvm import _Reader
from .to_tvm import _Writer
from .values import dict_attrs_from_tvm

__all__ = ["static_plan_block_memory_extracted"]

#: function attributes that bound symbolic sizes (read by the full pass's own reader)
_BOUND_ATTRS = frozenset((ATTR_TIR_VAR_UPPER_BOUND, ATTR_TIR_VAR_LOWER_BOUND, ATTR_TIR_NON_NEGATIVE_VAR))


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
        #: function index -> the writer of its storages' sizes (all owned by one pass call's keep)
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
        naming the binding)."""
        reader = self._reader()
        try:
            shape = reader.prims_of(_ffi_writer.object_at(dims_addr))
            sized = token_size(shape, dtype, self.bounds, self.name, "?")
        except MemcoreError:
            return None
        self.sources[self.func_idx] = {pv.name: reader.prim_sources[h] for h, pv in reader.prims.items()}
        return sized

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
            writer = self.writers[func_idx] = _Writer(self.api, NO_INFOS, keep=keep)
            writer.where = "a storage's size"
            writer.prims = dict(self.sources.get(func_idx, {}))
        addr = self.shapes[key] = writer.expr_addr(new_shape_expr((nbytes,)))
        return addr

class _PlanWriter:
    """Writes a plan into the functions' scopes, on TVM's objects: each storage bound at its
    emission site (:func:`~memcore_py.planning.emission.emission_sites`, the full rewriter's
    rule), in the order the full rewriter visits the sites (which names them), each planned
    allocation rewritten (:func:`~._spbm_extract.rewrite_block`), and the blocks, ``If`` s and
    branches on the way to a change rebuilt; every other object stays TVM's."""

    def __init__(self, api, layout, keep, table, planned, sites: AllocationSites, storage_site: list):
        self.api, self.layout, self.keep, self.table, self.planned = api, layout, keep, table, planned
        sites_rewrite = load_compiled("memcore_py.transform._alloc_rewrite")
        # block id -> {position: storages emitted before it}; block id -> {position: token}
        self.emit_before, self.allocs = sites_rewrite.site_tables(storage_site, sites.tok_block, sites.tok_index)
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
        changed branches rewritten (the same variable, the old ``If`` 's type), or None."""
        object_at = _ffi_writer.object_at
        binding = object_at(self.table.scope_anchor[sids[0]][1])
        relax = self.api.tvm.relax
        if type(binding) is not relax.VarBinding:
            return None
        old = binding.value
        branches = []
        for sid, seq in ((sids[0], old.true_branch), (sids[1], old.false_branch)):
            if sid in self.dirty:
                changed = self.blocks_of(sid)
                if changed is None:
                    return None
                blocks = list(seq.blocks)
                for j, h in zip(*changed):
                    blocks[j] = object_at(h)
                seq = seq_with(self.api, seq, blocks, seq.body)
            branches.append(seq)
        new_if = if_with_branches(self.api, old, old.cond, *branches)
        return self.keep.hold(relax.VarBinding(binding.var, new_if))


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
    known = module_callees(api, entries, prim)  # a PrimFunc of the module uses its arguments
    reader = _table_reader.TVMReader(table, layout, known, extern_flags)
    kernel = rules.InitRules(table, recorder, PassError)
    sizer = _spbm_extract.TVMSizer(layout, recorder, TokenInfo)
    symbolic = sizer.symbolic = _Symbolic(api, layout, tvm_mod)
    functions = []
    for name, f_addr in ((e.name, e.func) for e in entries if e.kind == 1):  # TVM's order
        attrs = _ffi_reader.function_attrs(layout, f_addr)
        try:
            if attrs is None:
                attrs = dict_attrs_from_tvm(_ffi_writer.object_at(f_addr).attrs, f"function {name!r}")
            if ATTR_PLAN_DYNAMIC_FUNC_OUTPUT in attrs:
                return None  # Case-2 allocations: the full pass
            symbolic.begin(name, len(functions), f_addr, attrs)
        except MemcoreError:
            return None  # the full conversion reports it
        got = reader.read_function(f_addr, name)
        if got is None:
            return None
        sizer.begin_function(len(functions))
        try:
            if not kernel.run_function(len(functions), sizer):
                return None
        except PassError:
            return None  # a malformed module: the full conversion reports it
        functions.append((name, f_addr, got))
    program, (tok_block, tok_binding, tok_index) = walk_program(recorder, [name for name, _f, _g in functions],
                                                                kernel.extra_refs)
    plan = plan_memory(program, mode, alignment=alignment, time_limit=time_limit)
    storages = plan.storages
    if not storages:
        return tvm_mod
    keep = _ffi_writer.Keep()
    keep.hold(tvm_mod)
    tok_storage = plan.tok_storage.tolist()
    storage_first = [s.tokens[0] for s in storages]
    storage_shape = [shape_of_bytes(api, s.nbytes.value) if type(s.nbytes) is IntImm
                     else symbolic.shape_addr(keep, s.func, s.nbytes) for s in storages]
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
    planned = _spbm_extract.PlannedModule(
        tok_block=tok_block, tok_index=tok_index, tok_binding=tok_binding, tok_storage=tok_storage,
        tok_offset_imm=offset_imm, storage_first=storage_first, storage_shape=storage_shape,
        storage_dtype=storage_dtype, storage_dataflow=[site.dataflow_var for site in storage_site],
        zero=int64_imm(api, 0), any_ty=any_type(api), op_alloc_storage=rewrite_ops[0],
        op_alloc_tensor=rewrite_ops[1], op_ensure_zero_offset=rewrite_ops[2], views=bool(zero_offset_views))
    writer = _PlanWriter(api, layout, keep, table, planned, sites, storage_site)
    new_funcs = {}
    for _name, f_addr, got in functions:
        if got.scope not in writer.dirty:
            continue
        changed = writer.blocks_of(got.scope)
        if changed is None:
            return None
        new_funcs[f_addr] = function_with_blocks(layout, keep, f_addr, got.blocks, changed[0], changed[1], got.ty)
    return module_with(api, layout, keep, tvm_mod, entries, new_funcs)
