"""The native AttachAttrLayoutFreeBuffers: the ``call_tir`` bindings are read and rewritten on
TVM's objects, the attributed PrimFuncs are TVM's own with the attribute set; nothing is
converted.

Design
------
The pass (:mod:`memcore_py.transform.attach_attr_layout_free_buffers`) changes a module in
three ways: every ``R.call_tir`` binding of a Relax function calls a copy of its PrimFunc
carrying ``layout_free_buffers`` (the positions of the arguments that are weights or
constants); the copies are added as ``BlockBuilder::AddFunction`` adds them (an equal one is
shared, a new one named by the name supply); and DeadCodeElimination then drops the bindings
nothing reads and what no entry function reaches. Here, for each Relax function, in the
module's order:

1. :class:`~memcore_py.tvm._table_reader.TVMReader` reads it into a binding table; the op
   table gives ``R.call_tir`` the ``CALLEE_CALL_TIR`` property, and the table says where
   those calls are bound, in visit order (``BindingTable.binding_calls``), ``If`` branches
   included; :func:`~memcore_py.tvm._ffi_reader.call_arguments` reads their arguments;
2. the pass's own rules decide: :func:`layout_free_positions` (weights from
   :func:`num_input_of`), one copy per (callee, positions) in visit order, names from
   :class:`~memcore_py.transform._prim_func_registry.GlobalNames`; a copy equal to a function
   of the module that already carries the attribute, or to an earlier copy (TVM's structural
   equality of the originals, compared with each earlier one of the same positions and
   attribute key, :func:`_attrs_key`, or only with those of equal structural hash in a large
   group: :data:`PAIRWISE_LIMIT`), is that function. A copy is the original TVM object with
   the attribute set and its definitions renewed (TVM's FFI ``BaseFuncWithAttr``, which
   ``BaseFunc.with_attr`` calls, then ``s_tir.RenewDefs``: what TVM's pass makes), its
   GlobalVar typed as the function. The PrimFuncs' attributes are read by the compiled reader
   of a function's attributes (``attrs`` is a field of ``BaseFunc``), through the Python API
   only when it cannot read a value;
3. the writer: each rewritten binding is a new ``VarBinding`` of the same variable to a call
   with the copy as its callee (:func:`~memcore_py.tvm._ffi_writer.binding_with_call_args`);
   the blocks, ``If`` s and ``SeqExpr`` s around them are rebuilt, everything else stays
   TVM's object;
4. DeadCodeElimination: its unused-binding rule, the kernel
   :func:`~memcore_py.analysis._dce_rules.unused_binding_sites` over the same table (read
   with every call's arguments), the purity of each callee by memcore's rule
   (:class:`_ModulePurity`), says which bindings go; the writer drops them and leaves every
   scope's blocks in TVM's normal form (:func:`~memcore_py.ir.functor.normal_groups`: an
   emptied block dropped, adjacent blocks of one kind merged). Its reachability rule
   (:func:`~memcore_py.transform.dead_code_elimination.reachable_names`, entries by
   :func:`~memcore_py.transform.dead_code_elimination.has_external_linkage`) over the
   GlobalVars each function refers to (tvm_ffi's compiled structural walk) then drops the
   functions no entry reaches.

The full conversion runs instead (:func:`attach_attr_extracted` returns None) when the table
reader declines a function, when a ``call_tir`` is not a binding (nested, matched, a result)
or is malformed (the pure pass reports it), when ``num_input`` is not an int or an attribute
is not read, when an ``If`` to rebuild is bound by a ``MatchCast``, when a function body or a
rewritten call has no type (not normalized), when a callee's purity is not known (an op
memcore does not model that declares no ``FPurity``), or when
:func:`~._extraction.module_entries` declines.
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..errors import MemcoreError
from ..ir.expr import ExternFunc
from ..ir.functor import blocks_are_normal, normal_groups
from ..transform._prim_func_registry import GlobalNames
from ..transform.attach_attr_layout_free_buffers import (
    LAYOUT_FREE_ATTR, call_tir_arguments, layout_free_positions, num_input_of,
)
from ..transform.dead_code_elimination import (
    has_external_linkage, is_impure_callee, module_function_is_impure, reachable_names,
)
from . import _ffi_reader, _ffi_writer, _table_reader
from ._extraction import extern_flags, module_callees, module_entries, op_flags, type_global_var
from .from_tvm import _TIRBody, global_var_names, memcore_op
from .values import dict_attrs_from_tvm, to_tvm_value

__all__ = ["attach_attr_extracted"]

_CALL_TIR: list = []


def _call_tir_address(api) -> int:
    if not _CALL_TIR:
        op = api.Op.get("relax.call_tir")
        _CALL_TIR.append((op, op.__chandle__()))  # the Op object holds the address valid
    return _CALL_TIR[0][1]


#: Up to this many copies made with the same positions (and attributes, :func:`_attrs_key`), a
#: new original is compared with each of theirs (structural equality fails fast on unequal
#: PrimFuncs); beyond, only with those of equal structural hash (a hash costs a whole
#: traversal).
PAIRWISE_LIMIT = 32

#: The attribute values :func:`_attrs_key` compares: equal under TVM's structural equality
#: only if equal in Python (a float is not: TVM's NaN equals NaN)
_EXACT = (int, str, bool)


def _attrs_key(attrs: dict):
    """What two PrimFuncs with the attributes ``attrs`` (the compiled reader's dict) must share
    to be structurally equal: the attribute names, with the value of those holding an int, a
    string or a bool. A necessary condition only: the copies of two originals of equal key are
    still compared by TVM's structural equality."""
    return frozenset((k, v) if type(v) in _EXACT else k for k, v in attrs.items())


class _Copies:
    """The attributed copies of one pass call: made once per (callee, positions), shared when
    equal (``AddFunction``), in the order they were made."""

    def __init__(self, api, keep, renew, prims: dict, attrs_keys: dict, taken, attributed: list):
        import tvm_ffi

        self.renew = renew  # s_tir.RenewDefs
        self.with_attr = api.ir_ffi.BaseFuncWithAttr  # what ``BaseFunc.with_attr`` calls (a new function)
        self.global_var = api.ir_ffi.GlobalVar
        self.equal = tvm_ffi.structural_equal
        self.hash = tvm_ffi.structural_hash
        self.api = api
        self.keep = keep
        self.prims = prims  # name -> the PrimFunc (TVM object)
        # name -> :func:`_attrs_key` of its attributes; empty when some PrimFunc's were not read by
        # the compiled reader (the copies are then grouped by positions only)
        self.attrs_keys = attrs_keys
        self.attributed = attributed  # [(name, GlobalVar address, PrimFunc)] of the module's with the attribute
        self.names = GlobalNames(taken)
        self.by_key: dict = {}  # (callee, positions) -> (name, GlobalVar address)
        self.made: list = []  # (name, GlobalVar, PrimFunc, original's name)
        self.groups: dict = {}  # (positions, attributes key) -> [(original's name, key)] of the copies made
        self.hashes: dict = {}  # original's name -> its structural hash (asked for only in large groups)

    def gvar(self, callee: str, positions: tuple) -> int:
        """The address of the GlobalVar of the copy of ``callee`` with ``positions``."""
        key = (callee, positions)
        hit = self.by_key.get(key)
        if hit is None:
            hit = self.by_key[key] = self._add(callee, positions, key)
        return hit[1]

    def _add(self, callee, positions, key):
        original = self.prims[callee]
        value = to_tvm_value(positions, f"attribute {LAYOUT_FREE_ATTR!r}")
        node = None
        if self.attributed:  # a function of the module may equal the copy
            node = self.with_attr(original, LAYOUT_FREE_ATTR, value)
            for name, gv_addr, func in self.attributed:
                if self.equal(node, func):
                    return name, gv_addr
        made = self.groups.setdefault((positions, self.attrs_keys.get(callee)), [])
        if len(made) > PAIRWISE_LIMIT:  # a large group: compare only originals of equal hash
            h = self._hash(callee)
            made_equal_hash = [m for m in made if self._hash(m[0]) == h]
        else:
            made_equal_hash = made
        for other, other_key in made_equal_hash:  # or an earlier copy, when the originals are equal
            if self.equal(self.prims[other], original):
                return self.by_key[other_key]
        made.append((callee, key))
        if node is None:
            node = self.with_attr(original, LAYOUT_FREE_ATTR, value)
        node = self.renew(node)
        name = self.names.fresh(callee)
        gv = self.global_var(name)
        type_global_var(self.api, gv, node)
        self.keep.hold(node)
        self.made.append((name, gv, node, callee))
        return name, self.keep.hold(gv)

    def _hash(self, callee: str) -> int:
        h = self.hashes.get(callee)
        if h is None:
            h = self.hashes[callee] = self.hash(self.prims[callee])
        return h


def attach_attr_extracted(api, tvm_mod, keep_tir_vars: bool = True):
    """AttachAttrLayoutFreeBuffers on ``tvm_mod`` natively (module docstring): a
    ``tvm.IRModule`` (``tvm_mod`` itself when nothing changes), or None when the full
    conversion must run. ``keep_tir_vars``: False drops a third ``call_tir`` argument as TVM
    does (``tvm_compat``)."""
    renew = api.tvm.get_global_func("s_tir.RenewDefs", allow_missing=True)
    if renew is None:
        return None
    found = module_entries(api, tvm_mod)
    if found is None:
        return None
    layout, entries = found
    object_at = _ffi_writer.object_at
    prims, external, attributed, attrs_keys = {}, {}, [], {}
    for e in entries:
        if e.kind == 0:
            name, func = e.name, object_at(e.func)
            attrs = _ffi_reader.function_attrs(layout, e.func)  # ``attrs`` is BaseFunc's field: a PrimFunc's too
            if attrs is None:  # a value the compiled reader does not read (the attribute's array)
                attrs = list(func.attrs.keys()) if func.attrs is not None else []
                attrs_keys = None
            elif attrs_keys is not None:
                attrs_keys[name] = _attrs_key(attrs)
            if LAYOUT_FREE_ATTR in attrs:
                attributed.append((name, e.gvar, func))
            prims[name] = func
            external[name] = has_external_linkage("global_symbol" in attrs, attrs)
    binding_table = load_compiled("memcore_py.analysis._binding_table")
    unused_binding_sites = load_compiled("memcore_py.analysis._dce_rules").unused_binding_sites
    # every call's arguments read (DeadCodeElimination's readers): no callee counts as allocating
    ops = op_flags(api, binding_table.CALLEE_ALLOCATES)
    module = module_callees(entries)
    purity = _ModulePurity(api, entries)
    gv_names = {e.gvar: e.name for e in entries}
    keep = _ffi_writer.Keep()
    keep.hold(tvm_mod)
    copies = _Copies(api, keep, renew, prims, attrs_keys or {}, gv_names.values(), attributed)
    edits = {}  # function address -> {block id: {position: new binding address}}
    read = []  # (function address, body blocks address, body scope id, table) of the Relax functions
    for e in entries:
        if e.kind != 1:
            continue
        name, f_addr = e.name, e.func
        try:
            attrs = _ffi_reader.function_attrs(layout, f_addr)
            if attrs is None:  # a value the C reader does not read (a map of bounds)
                attrs = dict_attrs_from_tvm(object_at(f_addr).attrs, f"function {name!r}")
            k = num_input_of(attrs, f"function {name!r}")
        except MemcoreError:
            return None  # the full conversion reports it
        external[name] = has_external_linkage(False, attrs)
        table = binding_table.BindingTable()  # one per function: its questions are the function's
        reader = _table_reader.TVMReader(table, layout, ops, module, extern_flags)
        got = reader.read_function(f_addr, name)
        if got is None or not got.typed:
            return None  # not normalized: the portable path infers the types
        dead = ()
        if table.unread_bindings():  # DeadCodeElimination may remove bindings (none unread: none removed)
            impure = purity.impure_flags(reader.callee_addresses())
            if impure is None:
                return None
            dead = unused_binding_sites(table, table.n_functions - 1, impure)
        sites = table.binding_calls(binding_table.CALLEE_CALL_TIR)
        if sites is None:
            return None
        function_edits = edits[f_addr] = {}
        read.append((f_addr, got.blocks, got.scope, table, dead))
        if not sites:
            continue
        weights = set((_ffi_reader.function_params(layout, f_addr) or [])[k:]) if k is not None and k >= 0 else set()
        refs = table.block_refs()
        per_block = {}
        for block, pos in sites:
            per_block.setdefault(block, []).append(pos)
        arguments = {}
        for block, positions in per_block.items():
            got_args = _ffi_reader.call_arguments(layout, refs[block], positions)
            if got_args is None:
                return None
            arguments.update(((block, pos), a) for pos, a in zip(positions, got_args))
        for block, pos in sites:  # visit order: the copies are made and named in it
            call = arguments[block, pos]
            args = call.args
            callee = gv_names.get(args[0])
            if call.tuple_fields is None or callee not in prims:
                return None  # malformed: the pure pass reports it
            positions = layout_free_positions(call.tuple_fields, weights, frozenset(call.constant_fields).__contains__)
            new_args = list(call_tir_arguments(copies.gvar(callee, positions), args, keep_tir_vars))
            h = _ffi_writer.binding_with_call_args(layout, keep, call.binding, new_args)
            if not h:
                return None  # an untyped call: the portable path infers its type
            function_edits.setdefault(block, {})[pos] = h
    new_funcs = {}
    for f_addr, blocks_addr, sid, table, dead in read:
        if edits[f_addr] or dead or not _normal_blocks(table):
            new = _ScopeWriter(api, layout, keep, table, dead).function(f_addr, blocks_addr, sid, edits[f_addr])
            if new is None:
                return None
            if new != f_addr:
                new_funcs[f_addr] = new
    return _module(api, layout, keep, tvm_mod, entries, new_funcs, copies, external, prims)


class _ModulePurity:
    """TVM ``IsImpureCall`` of the callees of one module's Relax functions, by address, asked of
    memcore's rule (:func:`~memcore_py.transform.dead_code_elimination.is_impure_callee`): an op
    as memcore's op table (or TVM's ``FPurity`` for an op it does not model) says, a function of
    the module by :func:`~memcore_py.transform.dead_code_elimination.module_function_is_impure`,
    a packed function always."""

    def __init__(self, api, entries):
        self.api = api
        self.entries = {e.gvar: e for e in entries}
        self.by_address: dict = {}

    def impure_flags(self, addresses):
        """One flag per callee address (1: impure), or None when a callee's purity is not known
        (an op memcore does not model declaring none: the portable path reports it)."""
        flags = bytearray(len(addresses))
        for k, address in enumerate(addresses):
            impure = self.by_address.get(address)
            if impure is None:
                impure = self.by_address[address] = self._impure(address)
            if impure < 0:
                return None
            flags[k] = impure
        return bytes(flags)

    def _impure(self, address) -> int:
        entry = self.entries.get(address)
        if entry is not None:
            is_relax = entry.kind == 1
            return module_function_is_impure(is_relax, is_relax and bool(_ffi_writer.object_at(entry.func).is_pure))
        obj = _ffi_writer.object_at(address)
        if type(obj) is self.api.Op:
            op = memcore_op(obj)
            return -1 if op is None else is_impure_callee(op)
        if type(obj) is self.api.ExternFunc:
            return is_impure_callee(ExternFunc(str(obj.global_symbol)))
        return -1


def _normal_blocks(table) -> bool:
    """Whether every scope of the function read into ``table`` has its blocks in TVM's normal
    form (DeadCodeElimination would otherwise merge or drop some)."""
    sizes, dataflow = table.block_sizes(), table.block_is_dataflow
    return all(blocks_are_normal((dataflow[b], sizes[b]) for b in blocks) for blocks in table.scope_blocks)


class _ScopeWriter:
    """Rebuilds the scopes of a function read into ``table`` as the pass leaves them: its new
    bindings spliced in, the bindings DeadCodeElimination removes (``dead``: ``(block id,
    position)`` pairs) dropped, and every scope's blocks in TVM's normal form
    (:func:`~memcore_py.ir.functor.normal_groups`: empty blocks dropped, adjacent ones of a kind
    merged); an ``If`` whose branch changed (same condition and type), a branch's ``SeqExpr``
    (same result and type) and the function (same parameters, return type, purity and
    attributes)."""

    def __init__(self, api, layout, keep, table, dead):
        self.api, self.layout, self.keep, self.table = api, layout, keep, table
        self.refs = table.block_refs()
        self.sizes = table.block_sizes()
        self.dead: dict = {}  # block id -> positions of its bindings removed
        for block, pos in dead:
            self.dead.setdefault(block, []).append(pos)

    def function(self, f_addr: int, blocks_addr: int, sid: int, edits: dict):
        """The address of the function at ``f_addr`` (its body's blocks ``Array`` at
        ``blocks_addr``, its scope ``sid``) with ``edits`` (block id -> {position: new
        binding address}) applied (``f_addr`` itself when nothing changes); None when an
        ``If`` to rebuild is bound by a ``MatchCast``."""
        changed = self.blocks(sid, edits)
        if changed is None:
            return None
        if not changed:
            return f_addr
        return _ffi_writer.function_with_blocks(self.layout, self.keep, f_addr, blocks_addr,
                                                [k for k, _b in changed], [b for _k, b in changed], 0)

    def blocks(self, sid: int, edits: dict) -> list:
        """``[(index among the scope's blocks, its replacement)]`` of the blocks of scope ``sid``
        that change, in order: a replacement is a new block's address, or an empty list when
        the block goes (emptied, or merged into the one before it). None when an ``If`` to
        rebuild is bound by a ``MatchCast``."""
        table, layout, keep = self.table, self.layout, self.keep
        scope = table.scope_blocks[sid]
        replaced = []  # per block of the scope: {position: [new binding addresses]} ([]: removed)
        sizes = []
        for block in scope:
            new = {pos: [address] for pos, address in edits.get(block, {}).items()}
            dead = self.dead.get(block, ())
            for pos, (then_sid, else_sid) in table.block_ifs.get(block, ()):
                if pos in dead:
                    continue
                then_blocks, else_blocks = self.blocks(then_sid, edits), self.blocks(else_sid, edits)
                if then_blocks is None or else_blocks is None:
                    return None
                if not then_blocks and not else_blocks:
                    continue
                h = _ffi_writer.if_binding_with_blocks(layout, keep, self.refs[block], pos,
                                                       [j for j, _b in then_blocks], [b for _j, b in then_blocks],
                                                       [j for j, _b in else_blocks], [b for _j, b in else_blocks])
                if not h:
                    return None
                new[pos] = [h]
            for pos in dead:
                new[pos] = []
            replaced.append(new)
            sizes.append(self.sizes[block] - len(dead))
        out = []
        kept = set()
        for group in normal_groups(zip((table.block_is_dataflow[b] for b in scope), sizes)):
            kept.update(group)
            if len(group) > 1:
                out.append((group[0], self._merged([scope[k] for k in group], [replaced[k] for k in group])))
                out += [(k, []) for k in group[1:]]
            elif replaced[group[0]]:
                block, new = scope[group[0]], replaced[group[0]]
                positions = sorted(new)
                out.append((group[0], _ffi_writer.block_spliced(keep, self.refs[block], positions,
                                                                [new[p] for p in positions],
                                                                table.block_is_dataflow[block])))
        out += [(k, []) for k in range(len(scope)) if k not in kept]
        out.sort(key=lambda change: change[0])
        return out

    def _merged(self, blocks: list, replaced: list) -> int:
        """The address of one new block (of the kind of ``blocks``) of the bindings of
        ``blocks`` in order, each block's ``replaced`` positions replaced (through TVM's
        Python API: blocks merge only where the pass emptied one, or the input was not
        normal)."""
        object_at = _ffi_writer.object_at
        bindings = []
        for block, new in zip(blocks, replaced):
            for pos, binding in enumerate(object_at(self.refs[block])):
                if pos in new:
                    bindings += [object_at(address) for address in new[pos]]
                else:
                    bindings.append(binding)
        rx = self.api.rx_ffi
        make = rx.DataflowBlock if self.table.block_is_dataflow[blocks[0]] else rx.BindingBlock
        return self.keep.hold(make(bindings, None))


def _module(api, layout, keep, tvm_mod, entries, new_funcs, copies, external, prims):
    """The output module: the old GlobalVars with the rewritten Relax functions, then the
    copies, without the functions no entry reaches (DeadCodeElimination's reachability)."""
    object_at = _ffi_writer.object_at
    relax = {e.name: new_funcs.get(e.func, e.func) for e in entries if e.kind == 1}
    original_of = {name: original for name, _gv, _node, original in copies.made}

    def callees_of(name):
        if name in relax:
            return global_var_names(object_at(relax[name]))
        name = original_of.get(name, name)
        return _TIRBody(prims[name]).callees() if name in prims else None

    entry_names = [name for name, is_external in external.items() if is_external]
    entry_names += [name for name, _gv, _node, original in copies.made if external[original]]
    reachable = reachable_names(entry_names, callees_of)
    if reachable is None:
        reachable = set(relax) | set(prims) | set(original_of)
    if not new_funcs and not copies.made and len(reachable) == len(entries):
        return tvm_mod
    pairs = []
    for e in entries:
        if e.name in reachable:
            pairs += [e.gvar, new_funcs.get(e.func, e.func)]
    for name, gv, node, _original in copies.made:
        if name in reachable:
            pairs += [gv.__chandle__(), node.__chandle__()]
    return object_at(_ffi_writer.module_with_functions(layout, keep, tvm_mod.__chandle__(), pairs))
