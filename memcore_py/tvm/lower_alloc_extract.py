"""The native LowerAllocTensor by extraction: only the allocations are read and rewritten.

Design
------
LowerAllocTensor changes nothing in a function but its ``R.builtin.alloc_tensor`` bindings:
each becomes a storage binding and an ``R.memory.alloc_tensor`` binding of the same variable
(:mod:`memcore_py.transform.lower_alloc_tensor`). The full conversion
(:func:`~memcore_py.tvm.passes.apply_memcore_pass`) reads the whole module into memcore's IR
for that, which costs more than TVM's own pass: it visits each binding once.
Here, on the TVM objects:

1. :func:`~memcore_py.tvm._ffi_reader.flat_function_calls` scans the blocks of each Relax
   function in C for the allocations, and checks that the function is flat (the rule of
   :func:`~memcore_py.transform.dead_code_elimination.is_flat`: the allocations can then
   only be binding values of its top-level blocks, and nothing else changes). A function
   that is not flat (an ``If``, a nested call) is read into a binding table
   (:class:`~memcore_py.tvm._table_reader.TVMReader`), which tells where its allocations are
   (``BindingTable.binding_calls``): when every one is a binding of the body's own blocks,
   those blocks are lowered as a flat function's and the rest (an ``If`` and its branches
   included) stays the objects it is, as TVM's mutator leaves what it does not change;
2. when every allocation of the function has a variable typed exactly as its lowered call
   (the common case), :mod:`~memcore_py.tvm._lower_extract` lowers them in C, the storages
   named as memcore's lowerer names them, each size folded by LowerAllocTensor's one rule
   (``memcore_py/ir/_const_fold.pyx``, which :func:`~memcore_py.transform.lower_alloc_tensor.
   storage_bytes_expr` follows too): a constant one there, a symbolic one built of the shape
   argument's own dim objects (:func:`~._lower_extract.symbolic_shape`); otherwise each allocation
   binding is read alone (:func:`~memcore_py.tvm._ffi_reader.read_binding_at`, or the Python
   reader :class:`~.from_tvm._Reader` for what it declines) and lowered by memcore's own
   lowerer (``_AllocTensorLowerer``, one per function, so storage names follow the same
   sequence as in the full pass), then written back by the writer (:class:`~.to_tvm._Writer`:
   the same types and argument objects as a full write-back);
3. the block is a new ``ffi.Array`` of the old bindings' addresses with the new ones spliced
   in (:func:`~memcore_py.tvm._ffi_writer.array_spliced`), then a new block, ``SeqExpr``
   (the old blocks array with the new blocks spliced in, the old result and type),
   ``Function`` (the old parameters, return type, purity and attrs) and module (the old
   GlobalVars, the other functions as they are).

Measured against TVM's pass by bench ``test_native_lower_alloc_tensor`` and
``test_fixed_cost_native_lowering``; figures in bench/README.md ("TVM bridge").

A module with no allocation left is returned as it is. The full conversion runs instead
(:func:`lower_alloc_tensor_extracted` returns None) when an allocation of a function is
not a binding of its body's own blocks (it is in an ``If`` branch, nested in an expression or
matched) or the table reader declines the function, a lowering would give its variable a new type
(later uses would change: TVM's
``ReEmitBinding``), a function body has no type (not normalized), the module has global
infos (a tensor's vdevice indexes them), a function entry is neither a Relax function nor
a PrimFunc, or the compiled reader is unavailable.

What the extraction does not read it does not check: a binding calling an op memcore does
not model passes through as the same TVM object, where the full conversion raises
:class:`~memcore_py.tvm.TVMConversionError` naming it. Nothing is dropped either way (the
block keeps TVM's own objects), and LowerAllocTensor has nothing to do with such a
binding; what it lowers, memcore's lowerer checks as in the full pass. Tests compare both
paths and TVM's own pass on every shipped model, dynamic shapes included, and on random
modules.
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..errors import MemcoreError
from ..transform.lower_alloc_tensor import _AllocTensorLowerer
from . import _ffi_reader, _ffi_writer, _lower_extract, _table_reader
from ._node_map import AddrMap, NodeMap
from ._extraction import UNCHANGED, any_type, dtype_const, function_with_blocks, int64_imm, rewrite_functions
from ._extraction import NO_INFOS, extern_flags, module_callees, op_flags, shape_of_bytes
from .from_tvm import _Reader
from .to_tvm import _Writer

__all__ = ["lower_alloc_tensor_extracted"]



def lower_alloc_tensor_extracted(api, tvm_mod):
    """LowerAllocTensor on ``tvm_mod`` by extraction (module docstring): a ``tvm.IRModule``
    (``tvm_mod`` itself when nothing is lowered), or None when the full conversion must run.

    Raises
    ------
    memcore_py.errors.PassError
        An allocation memcore's LowerAllocTensor rejects (wrong arguments), as the full pass.
    """
    op = _alloc_op_address(api)
    callees = []  # the module's callee properties, made for the first function with control flow
    symbolic_shapes = {}  # the R.shape([bytes]) of this call's symbolic sizes, by dims and dtype

    def rewrite(layout, keep, name, f_addr):
        found = _ffi_reader.flat_function_calls(layout, f_addr, op)
        if found is None:
            if not callees:
                callees.append(module_callees(_ffi_reader.module_functions(layout, tvm_mod.__chandle__()) or ()))
            found = _body_calls(layout, op_flags(api), callees[0], name, f_addr)
            if found is None:
                return None
        if not any(b.positions for b in found.block_calls):
            return UNCHANGED
        return _lower_function(api, layout, tvm_mod, keep, name, _ffi_writer.object_at(f_addr), symbolic_shapes,
                               found)

    return rewrite_functions(api, tvm_mod, rewrite)


def _body_calls(layout, ops, module, name, f_addr):
    """:func:`~memcore_py.tvm._ffi_reader.flat_function_calls`' answer for a function that is
    not flat (an ``If``, a nested call), read into a binding table of its own: its body's blocks
    with the positions of their allocations, when every allocation is a binding of one of those
    blocks (none in an ``If`` branch, nested in an expression or matched); else None. The
    other bindings stay the objects they are, ``If`` s included."""
    binding_table = load_compiled("memcore_py.analysis._binding_table")
    table = binding_table.BindingTable()
    got = _table_reader.TVMReader(table, layout, ops, module, extern_flags).read_function(f_addr, name)
    if got is None:
        return None
    sites = table.binding_calls(binding_table.CALLEE_ALLOCATES)
    if sites is None:
        return None
    body = table.scope_blocks[got.scope]
    positions = {b: [] for b in body}
    for block, pos in sites:
        if block not in positions:
            return None  # in an If branch
        positions[block].append(pos)
    refs, dataflow = table.block_refs(), table.block_is_dataflow
    return _ffi_reader.FlatFunction(got.seq, got.blocks,
                                    [_ffi_reader.BlockCalls(0, dataflow[b], refs[b], positions[b]) for b in body])


_OP_ADDRESS = []


def _alloc_op_address(api) -> int:
    if not _OP_ADDRESS:
        op = api.Op.get("relax.builtin.alloc_tensor")
        _OP_ADDRESS.append((op, op.__chandle__()))  # the Op object holds the address valid
    return _OP_ADDRESS[0][1]


def _lower_function(api, layout, tvm_mod, keep, name, func, symbolic_shapes, flat):
    """The address of ``func`` (flat; ``flat``: its
    :func:`~memcore_py.tvm._ffi_reader.flat_function_calls`) with its allocations lowered, or
    None (a variable would be remapped, or the body has no type). ``symbolic_shapes``: the
    pass call's shapes of symbolic sizes (:func:`_lower_sized`)."""
    object_at = _ffi_writer.object_at
    old = object_at(flat.seq)
    if old.ty.is_missing():  # not normalized: TVM's pass would infer the body's type
        return None
    blocks = flat.block_calls
    sizes = []
    for b in blocks:
        sizes.append(_lower_extract.allocation_sizes(layout, b.bindings, b.positions) if b.positions else [])
        if sizes[-1] is None:
            break
    else:  # every allocation exactly typed: lowered in C
        return _lower_sized(api, layout, tvm_mod, keep, name, func, flat.blocks, blocks, sizes, symbolic_shapes)
    record = NodeMap()
    reader = _Reader(api, tvm_mod, record=record)
    reader.where = f"function {name!r}"
    reader.prims = {}
    reader.leaves = AddrMap()
    lowerer = _AllocTensorLowerer(name)
    lowerer.flat = True
    lowered = []  # (block index, [the memcore bindings replacing each position])
    for k, b in enumerate(blocks):
        if not b.positions:
            continue
        arr = b.bindings
        lowerer.in_dataflow = b.is_dataflow
        per_position = []
        for i in b.positions:
            binding = _ffi_reader.read_binding_at(layout, reader, arr, i)
            if binding is None:
                binding = reader.binding(object_at(arr)[i])
            out = []
            lowerer.visit_binding(binding, out)
            if lowerer.var_remap:
                return None
            per_position.append(out)
        lowered.append((k, per_position))
    writer = _Writer(api, NO_INFOS, reuse=record, keep=keep)
    writer.where = reader.where
    writer.prims = {pv.name: reader.prim_sources[h] for h, pv in reader.prims.items()}
    rx = api.rx_ffi
    changed, new_blocks = [], []
    for k, per_position in lowered:
        b = blocks[k]
        replacements = [[writer.binding_addr(binding) for binding in out] for out in per_position]
        new_arr = object_at(_ffi_writer.array_spliced(keep, b.bindings, b.positions, replacements))
        changed.append(k)
        new_blocks.append(keep.hold((rx.DataflowBlock if b.is_dataflow else rx.BindingBlock)(new_arr, None)))
    return function_with_blocks(layout, keep, func.__chandle__(), flat.blocks, changed, new_blocks, 0)


def _lower_sized(api, layout, tvm_mod, keep, name, func, blocks_addr, blocks, sizes, shapes_of_call):
    """:func:`_lower_function` when :func:`~._lower_extract.allocation_sizes` accepted every
    allocation (``sizes``: theirs, per block): the blocks built in C, a symbolic size's
    ``R.shape([bytes])`` of the shape argument's own dims (:func:`~._lower_extract.symbolic_shape`);
    None when one is not built (the full conversion reports it). ``shapes_of_call``: the pass
    call's ``{(dims key, dtype): shape address}``, so that allocations of structurally equal
    dims of the same variables share one object."""
    ops = _lower_ops(api)
    lowering = _lower_extract.FunctionLowering(uint8=dtype_const(api, "uint8"), zero=int64_imm(api, 0),
                                               any_ty=any_type(api), op_storage=ops[0], op_alloc=ops[1])
    changed, new_blocks = [], []
    for k, (b, block_sizes) in enumerate(zip(blocks, sizes)):
        if not b.positions:
            continue
        shapes = []
        for size in block_sizes:
            if type(size) is int:
                shapes.append(shape_of_bytes(api, size))
                continue
            key = (size.key, size.dtype) if size.key is not None else None
            shape = shapes_of_call.get(key) if key is not None else None
            if shape is None:
                try:
                    shape = _lower_extract.symbolic_shape(layout, keep, size, *_size_ctors(api))
                except (ValueError, MemcoreError):
                    return None
                if key is not None:
                    shapes_of_call[key] = shape
            shapes.append(shape)
        changed.append(k)
        new_blocks.append(_lower_extract.lower_block(layout, keep, lowering, b.bindings, b.positions, shapes,
                                                     b.is_dataflow))
    return function_with_blocks(layout, keep, func.__chandle__(), blocks_addr, changed, new_blocks, 0)


#: the function handles of the constructors a symbolic size is built with (held here)
_SIZE_CTORS: list = []


def _size_ctors(api) -> tuple:
    """The addresses of TVM's ``ir.IntImm``, ``prim.Mul`` and ``relax.ShapeExpr`` constructors."""
    if not _SIZE_CTORS:
        funcs = [api.ir_ffi.IntImm, api.prim_ffi.Mul, api.rx_ffi.ShapeExpr]
        _SIZE_CTORS.extend((tuple(f.__chandle__() for f in funcs), funcs))
    return _SIZE_CTORS[0]


_LOWER_OPS = []


def _lower_ops(api):
    """The addresses of ``relax.memory.alloc_storage`` and ``alloc_tensor`` (held here)."""
    if not _LOWER_OPS:
        ops = [api.Op.get("relax.memory.alloc_storage"), api.Op.get("relax.memory.alloc_tensor")]
        _LOWER_OPS.extend((tuple(op.__chandle__() for op in ops), ops))
    return _LOWER_OPS[0]
