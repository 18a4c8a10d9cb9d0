"""The module level shared by the passes that run by extraction (:mod:`.lower_alloc_extract`,
:mod:`.kill_extract`): they rewrite single Relax functions on the TVM objects, and a new module
is made of the old GlobalVars with the rewritten functions and the others as they are."""
from __future__ import annotations

from . import _ffi_reader, _ffi_writer
from .from_tvm import _layout

__all__ = ["UNCHANGED", "rewrite_functions"]

#: what a function rewrite returns for a function the pass leaves as it is
UNCHANGED = 0


def rewrite_functions(api, tvm_mod, rewrite):
    """``tvm_mod`` with each Relax function rewritten by ``rewrite(layout, keep, name,
    address)``: the address of the new function (owned by ``keep``), :data:`UNCHANGED`, or
    None to decline. Returns ``tvm_mod`` itself when no function changed, and None (the full
    conversion must run) when a rewrite declined, the compiled reader is unavailable, the
    module has global infos (a tensor's vdevice indexes them) or an entry is neither a Relax
    function nor a PrimFunc. ``keep`` holds ``tvm_mod``: every address read points into it."""
    layout = _layout(api)
    if layout is None:
        return None
    mod_addr = tvm_mod.__chandle__()
    if _ffi_reader.module_has_global_infos(layout, mod_addr):
        return None
    entries = _ffi_reader.module_functions(layout, mod_addr)
    if entries is None:
        return None
    keep = _ffi_writer.Keep()
    keep.hold(tvm_mod)
    new_funcs = {}
    for kind, name, _gv, f_addr in entries:
        if kind == 0:
            continue
        if kind != 1:
            return None
        new = rewrite(layout, keep, name, f_addr)
        if new is None:
            return None
        if new != UNCHANGED:
            new_funcs[f_addr] = new
    if not new_funcs:
        return tvm_mod
    pairs = []
    for _kind, _name, gv, f_addr in entries:
        pairs.append(gv)
        pairs.append(new_funcs.get(f_addr, f_addr))
    funcs = _ffi_writer.object_at(_ffi_writer.map_of(keep, pairs))
    return api.ir_ffi.IRModule(funcs, tvm_mod.attrs, {})
