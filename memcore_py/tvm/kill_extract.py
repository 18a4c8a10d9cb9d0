"""The native KillAfterLastUse: the kills are computed by the pass's rule kernel over the binding
table and written onto the TVM objects; nothing is converted.

Design
------
KillAfterLastUse is *reader -> binding table -> rule kernel -> edits -> writer* on either
object model. Here, for each Relax function:

1. :class:`~memcore_py.tvm._table_reader.TVMReader` reads it into the binding table (the op
   table's kill roles compiled into the callee flags, variable types into ``TY_*`` codes), and
   :func:`_match_casts_read` whether each ``MatchCast`` casts to its value's type;
2. :func:`~memcore_py.analysis._kill_rules.kill_rules`, the one statement of the pass's rules,
   says which rebindings go and what is killed after which binding, with its rebinding rule
   (``rebind=True``: TVM runs CanonicalizeBindings first), which keeps a dataflow block the plan
   leaves as it is;
3. :class:`~memcore_py.tvm._kill_writer.KillWriter` applies that to the function's scopes (the
   body and every ``If`` branch); where a branch changed, its new ``SeqExpr`` and ``If`` are
   made through TVM's Python API, and the function with its new body by the compiled writer
   (:func:`~memcore_py.tvm._ffi_writer.function_with_body`); the module keeps the other
   functions as they are.

The portable path (the full conversion, :func:`~memcore_py.tvm.passes.apply_memcore_pass`, which
runs the same kernel on memcore's IR) runs instead (:func:`kill_after_last_use_extracted`
returns None) when the reader declines a function (:mod:`._table_reader` lists when), when the
function needs more of CanonicalizeBindings than the kernel's rebinding rule (``needs_canonical``:
a dataflow block the plan changes, ...) or a match_cast through which CanonicalizeBindings'
symbolic stage may substitute a variable (:func:`_match_casts_read`; that stage rewrites types),
when a variable that may be killed has a type the reader does not know, when a kill call is
malformed (the portable path reports it), when the writer cannot build a rewritten expression,
or when a function body has no type.

What the reader does not look into it does not check, as for the extracted LowerAllocTensor
(:mod:`.lower_alloc_extract`): a call of an op memcore does not model stays the same TVM
object, where the full conversion raises :class:`~memcore_py.tvm.TVMConversionError` naming
it. Tests compare this path with the full conversion and with TVM's pass on every shipped
model and on random modules.
"""
from __future__ import annotations

from .._compiled import load_compiled
from ..ir.op import kill_op
from ..transform.canonicalize_bindings import match_cast_substitutes
from . import _ffi_writer, _kill_writer, _table_reader
from ._api import TVMConversionError
from ._extraction import (
    extern_flags, if_with_branches, module_callees, module_entries, module_with, op_flags, seq_with,
)
from .from_tvm import _Reader

__all__ = ["kill_after_last_use_extracted"]

_KILL_OPS: list = []


def _kill_ops_and_unit(api):
    """The kill ops' addresses by kind and the address of an ``R.Tuple()`` type, made once
    (the objects are held here, so the addresses stay valid)."""
    if not _KILL_OPS:
        kill = [api.Op.get(kill_op(kind).name) for kind in range(3)]
        unit = api.ir_ffi.TupleType([], None)
        _KILL_OPS.append((tuple(op.__chandle__() for op in kill), unit.__chandle__(), (kill, unit)))
    return _KILL_OPS[0]


def kill_after_last_use_extracted(api, tvm_mod, tvm_scoping: bool = False):
    """KillAfterLastUse on ``tvm_mod`` natively (module docstring): a ``tvm.IRModule``
    (``tvm_mod`` itself when no function changes), or None when the portable path must run.
    ``tvm_scoping``: TVM's placement around nested scopes (DIFFERENCES.md)."""
    found = module_entries(api, tvm_mod)
    if found is None:
        return None
    layout, entries = found
    kill_ops, unit, _held = _kill_ops_and_unit(api)
    uses_args = load_compiled("memcore_py.analysis._binding_table").CALLEE_USES_ARGS
    module = module_callees(entries, uses_args)  # a PrimFunc of the module uses its arguments
    table = load_compiled("memcore_py.analysis._binding_table").BindingTable()
    reader = _table_reader.TVMReader(table, layout, op_flags(api), module, extern_flags)
    kill_rules = load_compiled("memcore_py.analysis._kill_rules").kill_rules
    keep = _ffi_writer.Keep()
    keep.hold(tvm_mod)

    def rebuild_if(if_addr, cond, then, other):
        return _rebuilt_if(api, keep, if_addr, cond, then, other)

    def rebuild_cast(cast_addr, value):
        old = _ffi_writer.object_at(cast_addr)
        return keep.hold(api.MatchCast(old.var, _ffi_writer.object_at(value), old.ty))

    new_funcs = {}
    for e in entries:
        if e.kind == 0:
            continue
        f_addr = e.func
        got = reader.read_function(f_addr, e.name)
        if got is None:
            return None
        sid = got.scope
        casts = table.match_cast_refs()
        if casts and not _match_casts_read(api, tvm_mod, table, casts):
            return None
        edits = kill_rules(table, table.n_functions - 1, tvm_scoping, True)
        if edits.needs_canonical or edits.unknown_type or edits.error_item >= 0:
            return None
        if not edits.changed and len(table.scope_blocks[sid]) <= 1:
            continue
        writer = _kill_writer.KillWriter(layout, keep, table, edits, kill_ops, unit, rebuild_if, rebuild_cast)
        out = writer.scope(sid, got.seq)
        if out is None:
            return None
        if out.changed:
            new = _ffi_writer.function_with_body(layout, keep, f_addr, out.blocks, out.result)
            if not new:
                return None  # the old body has no type: the portable path infers it
            new_funcs[f_addr] = new
    return module_with(api, layout, keep, tvm_mod, entries, new_funcs)


def _match_casts_read(api, tvm_mod, table, casts) -> bool:
    """Read what the kernel asks of the function's ``MatchCast`` s (``casts``: the table's
    ``(item, binding address)`` pairs): whether each casts to exactly its value's type, by TVM's
    ``StructuralEqual`` as CanonicalizeBindings asks it (``i_same_type``). False when
    CanonicalizeBindings' symbolic stage may substitute a variable through one of them
    (:func:`~memcore_py.transform.canonicalize_bindings.match_cast_substitutes`, asked of the
    types read as memcore's): that stage rewrites types, which only the portable path does."""
    from tvm_ffi import structural_equal as equal  # TVM's StructuralEqual, free variables unmapped
    types = _Reader(api, tvm_mod)  # only its type reader is used
    object_at = _ffi_writer.object_at
    try:
        for item, ref in casts:
            cast = object_at(ref)
            value_ty = cast.value.ty
            if match_cast_substitutes(types.ty(cast.ty), types.ty(value_ty)):
                return False
            table.set_same_type(item, equal(cast.var.ty, value_ty))
    except TVMConversionError:
        return False  # a type memcore does not model: the portable path reports it
    return True


def _rebuilt_if(api, keep, if_addr, cond, then, other):
    """The address of a new ``If`` of the one at ``if_addr`` with the condition at ``cond`` and
    the branches ``then`` and ``other`` (each a :class:`~memcore_py.tvm._kill_writer.ScopeRewrite`:
    an unchanged branch is the old one), of the old If's type."""
    object_at = _ffi_writer.object_at
    old = object_at(if_addr)
    branches = [seq_with(api, seq, [object_at(b) for b in out.blocks], object_at(out.result))
                if out.changed else seq
                for out, seq in ((then, old.true_branch), (other, old.false_branch))]
    return keep.hold(if_with_branches(api, old, object_at(cond), *branches))
