"""The native KillAfterLastUse by extraction: the kills are computed and spliced in on the TVM
objects, nothing is converted.

Design
------
The full conversion (:func:`~memcore_py.tvm.passes.apply_memcore_pass`) reads the whole module
into memcore's IR, runs :class:`memcore_py.transform.KillAfterLastUse` and writes the result
back. On a small module the pass itself was a small part of that: the rest was reading every
binding and writing the function back. KillAfterLastUse only drops re-bindings (``y = x``),
rewrites the calls that used them, and inserts kill bindings; every other binding stays the
same object. Here, for each Relax function:

1. :func:`~memcore_py.tvm._kill_extract.kill_function` walks the function's bindings in C
   with the flat walk's own rules and tables (its docstring lists what it handles) and
   builds the new block: the old bindings by address, the rebuilt calls and the kill
   bindings through the compiled writer's constructors;
2. a new ``SeqExpr`` (the block, the result with re-bindings resolved, typed as the
   result), ``Function`` (the old parameters, return type, purity and attrs) and module
   (the old GlobalVars, the other functions as they are) are made through TVM's Python API.

The full conversion runs instead (:func:`kill_after_last_use_extracted` returns None) when a
function is not of that form (a match_cast, tuples, nested scopes, dataflow blocks,
constant-bound variables), a function body has no type, the module has global infos, a
function entry is neither a Relax function nor a PrimFunc, or the compiled reader is
unavailable. A native pass chain (StaticPlanBlockMemory, LowerAllocTensor,
KillAfterLastUse in one pipeline) does not come here: the previous pass hands its memcore
module over and nothing is read (:class:`~memcore_py.tvm.passes._Handoff`).

What the extraction does not read it does not check, as for the extracted LowerAllocTensor
(:mod:`.lower_alloc_extract`): a call of an op memcore does not model stays the same TVM
object, where the full conversion raises :class:`~memcore_py.tvm.TVMConversionError` naming
it. Nothing is dropped either way, and KillAfterLastUse only reads such a call's arguments.
Tests compare the extraction with the full conversion and with TVM's pass (where TVM's
placement is the same, DIFFERENCES.md) on every shipped model and on random modules.

``KillAfterLastUse(tvm_scoping=True)`` (a differential-testing mode) always runs the full
conversion; the two placements differ only around nested scopes and dataflow blocks, which
the extraction declines anyway.
"""
from __future__ import annotations

from . import _ffi_writer, _kill_extract
from ..ir.op import kill_op, ops_with_kill_role
from ._extraction import UNCHANGED, rewrite_functions

__all__ = ["kill_after_last_use_extracted"]

_OPS = []


def _ops_and_unit(api):
    """TVM's ops by kill role (:class:`~._kill_extract.KillRoleOps`, from memcore's op table)
    and the address of an ``R.Tuple()`` type, made once (the objects are held here, so the
    addresses stay valid)."""
    if not _OPS:
        def tvm_ops(ops):
            return [api.Op.get(op.name) for op in ops]

        kill = tvm_ops(kill_op(kind) for kind in range(3))
        storage = tvm_ops(ops_with_kill_role("storage"))
        no_register = tvm_ops(ops_with_kill_role("no_register"))
        unit = api.ir_ffi.TupleType([], None)
        roles = _kill_extract.KillRoleOps(tuple(op.__chandle__() for op in kill),
                                         tuple(op.__chandle__() for op in storage),
                                         tuple(op.__chandle__() for op in no_register))
        _OPS.append((kill + storage + no_register, unit, roles, unit.__chandle__()))
    return _OPS[0][2], _OPS[0][3]


def kill_after_last_use_extracted(api, tvm_mod):
    """KillAfterLastUse on ``tvm_mod`` by extraction (module docstring): a ``tvm.IRModule``
    (``tvm_mod`` itself when no function changes), or None when the full conversion must
    run."""
    ops, unit = _ops_and_unit(api)
    kill_function = _kill_extract.kill_function

    def rewrite(layout, keep, _name, f_addr):
        out = kill_function(layout, keep, f_addr, ops, unit)
        if out is None or out is False:
            return UNCHANGED if out is False else None
        return _rebuilt_function(api, keep, f_addr, *out)

    return rewrite_functions(api, tvm_mod, rewrite)


def _rebuilt_function(api, keep, f_addr, block_addr, result_addr):
    """The address of the function at ``f_addr`` with the body ``block_addr`` (0: no
    binding) and ``result_addr``, or None when its old body has no type (not normalized:
    the full conversion infers it)."""
    object_at = _ffi_writer.object_at
    func = object_at(f_addr)
    old = func.body
    if old.ty.is_missing():
        return None
    result = object_at(result_addr)
    rx = api.rx_ffi
    seq = rx.SeqExpr([object_at(block_addr)] if block_addr else [], result, None)
    rx.UpdateType(seq, old.ty if result.same_as(old.body) else result.ty)
    return keep.hold(rx.Function(func.params, seq, func.ret_ty, func.is_pure, func.attrs, None))
