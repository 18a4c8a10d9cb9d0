"""The module and function levels shared by the passes that run by extraction
(:mod:`.lower_alloc_extract`, :mod:`.kill_extract`, :mod:`.spbm_extract`,
:mod:`.inplace_extract`): they rewrite single Relax functions on the TVM objects, and a new
module is made of the old GlobalVars with the rewritten functions and the others as they are;
and the callee properties their table reader is given (:func:`module_callees`: memcore's op
table's, one place for every extraction)."""
from __future__ import annotations

from ..analysis.storage_tokens import callee_flags
from ..ir.expr import ExternFunc
from ..ir.memo import MEMO
from ..ir.module import IRModule
from ..ir.op import get_op, list_ops
from . import _ffi_reader, _ffi_writer, compat

__all__ = [
    "UNCHANGED",
    "NO_INFOS",
    "rewrite_functions",
    "module_entries",
    "module_with",
    "function_with_blocks",
    "shape_of_bytes",
    "int64_imm",
    "dtype_const",
    "any_type",
    "op_flags",
    "extern_flags",
    "module_callees",
    "seq_with",
    "if_with_branches",
    "type_global_var",
]

#: what a function rewrite returns for a function the pass leaves as it is
UNCHANGED = 0
#: an empty memcore module: the writer's context when an extraction writes a few nodes (no
#: global infos, so no vdevices: the extractions decline modules that have them)
NO_INFOS = IRModule({})

#: TVM leaves the extracted passes write, shared across calls as the writer shares constant
#: leaves (held here; memo tables, memcore_py.ir.memo): storage bytes -> ``R.shape([bytes])``;
#: value -> int64 ``IntImm``; dtype -> ``R.dtype(dtype)``; ``R.Object``. The tables are trimmed
#: only when an extraction starts (:func:`module_entries`): an address handed out during a
#: pass stays valid until the pass has built the objects that hold it.
_LEAVES = MEMO.group("tvm.extraction.leaves", 3)
_SHAPES, _INTS, _DTYPES = range(3)
_ANY: list = []


def _leaf(table: int, key, make) -> int:
    """The address of the TVM object ``key`` stands for in the leaf table ``table``, made by
    ``make()`` when missing."""
    cache = _LEAVES.tables[table]
    obj = cache.get(key)
    if obj is None:
        obj = cache[key] = make()
    return obj.__chandle__()


def shape_of_bytes(api, nbytes: int) -> int:
    """The address of a (shared) ``R.shape([nbytes])``."""
    return _leaf(_SHAPES, nbytes, lambda: api.rx_ffi.ShapeExpr([api.IntImm("int64", nbytes)], None))


def int64_imm(api, value: int) -> int:
    """The address of a (shared) int64 ``IntImm`` of ``value``."""
    return _leaf(_INTS, value, lambda: api.IntImm("int64", value))


def dtype_const(api, dtype: str) -> int:
    """The address of a (shared) ``R.dtype(dtype)``, as the writer makes it."""
    return _leaf(_DTYPES, dtype, lambda: api.ir_ffi.GenericConst(api.tvm.DataType(dtype), api.rx_ffi.AnyType(None),
                                                                 None))


def any_type(api) -> int:
    """The address of a (shared) ``R.Object`` (TVM's ``AnyType``)."""
    if not _ANY:
        _ANY.append(api.rx_ffi.AnyType(None))
    return _ANY[0].__chandle__()


def module_entries(api, tvm_mod):
    """``(layout, entries)`` of ``tvm_mod``: the compiled reader's layout and
    :func:`~._ffi_reader.module_functions`' entries (``_ffi_reader.FunctionEntry``: kind,
    name, GlobalVar and function addresses), in the map's order. None (the full conversion must run) when the
    compatibility gate turns the compiled reader off (:func:`~.compat.fast_layout`), the module has
    global infos (a tensor's vdevice indexes
    them) or an entry is neither a Relax function nor a PrimFunc."""
    layout = compat.fast_layout(api)
    if layout is None:
        return None
    _LEAVES.trim()
    mod_addr = tvm_mod.__chandle__()
    if _ffi_reader.module_has_global_infos(layout, mod_addr):
        return None
    entries = _ffi_reader.module_functions(layout, mod_addr)
    if entries is None or any(e.kind not in (0, 1) for e in entries):
        return None
    return layout, entries


def module_with(api, layout, keep, tvm_mod, entries, new_funcs: dict):
    """A new ``tvm.IRModule`` of ``tvm_mod``'s GlobalVars (``entries``: :func:`module_entries`')
    and attributes, each function replaced by ``new_funcs[function address]`` (an address
    owned by ``keep``) where there is one; ``tvm_mod`` itself when ``new_funcs`` is empty."""
    if not new_funcs:
        return tvm_mod
    pairs = []
    for e in entries:
        pairs.append(e.gvar)
        pairs.append(new_funcs.get(e.func, e.func))
    return _ffi_writer.object_at(_ffi_writer.module_with_functions(layout, keep, tvm_mod.__chandle__(), pairs))


def rewrite_functions(api, tvm_mod, rewrite):
    """``tvm_mod`` with each Relax function rewritten by ``rewrite(layout, keep, name,
    address)``: the address of the new function (owned by ``keep``), :data:`UNCHANGED`, or
    None to decline. Returns ``tvm_mod`` itself when no function changed, and None (the full
    conversion must run) when a rewrite declined or :func:`module_entries` did. ``keep`` holds
    ``tvm_mod``: every address read points into it."""
    found = module_entries(api, tvm_mod)
    if found is None:
        return None
    layout, entries = found
    keep = _ffi_writer.Keep()
    keep.hold(tvm_mod)
    new_funcs = {}
    for e in entries:
        if e.kind == 0:
            continue
        new = rewrite(layout, keep, e.name, e.func)
        if new is None:
            return None
        if new != UNCHANGED:
            new_funcs[e.func] = new
    return module_with(api, layout, keep, tvm_mod, entries, new_funcs)


#: ``function_with_blocks(layout, keep, function address, blocks Array address, changed, new
#: blocks, type address or 0)``: the address of the function with those blocks replaced
#: (compiled; :func:`~._ffi_writer.function_with_blocks`)
function_with_blocks = _ffi_writer.function_with_blocks


#: the ops memcore's op table gives a property, with their ``CALLEE_*`` flags (held, so that
#: their addresses stay valid), then ``{mask: {op address: flags & ~mask}}``, made once per
#: process
_OP_FLAGS: list = []


def op_flags(api, without: int = 0) -> dict:
    """TVM's ops with a callee property, by address: the properties memcore's op table gives
    them (:func:`~memcore_py.analysis.storage_tokens.callee_flags`), less the flags ``without``
    (a reader asked to read every call's arguments drops ``CALLEE_ALLOCATES``). The dict is
    shared by every call: read it, do not change it."""
    if not _OP_FLAGS:
        flagged = [(name, callee_flags(frozenset(), get_op(name))) for name in list_ops()]
        _OP_FLAGS.append([(api.Op.get(name), flags) for name, flags in flagged if flags])
        _OP_FLAGS.append({})
    by_mask = _OP_FLAGS[1]
    if without not in by_mask:
        by_mask[without] = {op.__chandle__(): flags & ~without for op, flags in _OP_FLAGS[0]}
    return by_mask[without]


def extern_flags(symbol: str) -> int:
    """The properties of an ``ExternFunc`` callee: memcore's for the same packed symbol."""
    return callee_flags(frozenset(), ExternFunc(symbol))


def module_callees(entries, prim_flags: int = 0) -> dict:
    """The properties of the callees a module defines, as a table reader is given them beside
    the ops' (:func:`op_flags`), for a module whose functions are ``entries``
    (:func:`module_entries`' ``FunctionEntry`` records): ``prim_flags`` for a GlobalVar of a
    PrimFunc and none for a Relax function's, by GlobalVar address."""
    return {e.gvar: prim_flags if e.kind == 0 else 0 for e in entries}


# ------------------------------------------------------------------ scopes rebuilt in Python
def seq_with(api, old, blocks: list, result):
    """A new ``SeqExpr`` of ``blocks`` and ``result`` (TVM objects) in place of the ``SeqExpr``
    ``old``: typed as ``old`` when the result is its result, else as the result (an ``If``
    branch a pass changed; the function level is :func:`function_with_blocks`)."""
    rx = api.rx_ffi
    seq = rx.SeqExpr(blocks, result, None)
    rx.UpdateType(seq, old.ty if result.same_as(old.body) else result.ty)
    return seq


def if_with_branches(api, old, cond, true_branch, false_branch):
    """A new ``If`` of ``cond`` and the two branches (TVM objects), of the type of the ``If``
    ``old`` it replaces (its branches changed, not what they produce)."""
    rx = api.rx_ffi
    new = rx.If(cond, true_branch, false_branch, None)
    rx.UpdateType(new, old.ty)
    return new


def type_global_var(api, gvar, func) -> None:
    """Give the new GlobalVar ``gvar`` the type of its function ``func``, in place, as TVM does
    (``BlockBuilder.add_func``, the script parser): relax's normalizer rejects a call of a
    GlobalVar without one. A function without a type leaves it untyped."""
    ty = func.ty
    if ty is not None and not ty.is_missing():
        api.rx_ffi.UpdateType(gvar, ty)
