"""CallTIRRewrite: make the outputs of destination-passing calls explicit allocations.

Port of TVM ``CallTIRRewrite`` (src/relax/transform/call_tir_rewrite.cc, ``CallTIRMutator``),
a module pass, as TVM 0.27.0.post1 behaves (checked in the venv).

Rewrite
-------
For every ``R.call_tir(f, (a, b), out_ty=T)``, ``R.call_tir_inplace(...)`` and
``R.call_dps_packed("g", (a, b), out_ty=T)`` (arguments rewritten first, post-order):

1. one ``alloc = R.builtin.alloc_tensor(R.shape(T.shape), R.dtype(T.dtype), dev, R.str(scope),
   ty_args=(T,))`` binding per output tensor, in output order (name hint ``"alloc"``); for
   ``call_tir_inplace`` no allocation for an output whose ``inplace_indices`` entry is not
   -1: that output *is* the argument at that index;
2. the direct DPS call ``_ = f(a, b, alloc, ...)`` (name hint ``"_"``): the argument-tuple
   fields followed by the new allocations (for in-place calls only the freshly allocated
   ones). The callee is the GlobalVar / ExternFunc from the call, so a PrimFunc call has
   type ``R.Tuple()`` and a packed call (``R.call_packed("g", ...)``) type ``R.Object``.
   When the arguments are not a tuple literal, the call is ``f(args, alloc, ...)`` (or
   ``f(args)`` for an in-place call);
3. the original call is replaced by the allocation (one output) or the tuple of outputs,
   so ``y = R.call_tir(...)`` becomes ``y = alloc`` (``t = alloc, alloc1`` for tuples).

``out_ty`` is ``ty_args[0]`` of the call (a TensorType, or a TupleType for several
outputs; a one-element ``out_ty=[T]`` is a single output). Every output tensor type must
have a known shape and dtype. ``dev``/``scope`` are ``0``/``"global"`` unless the output
type names a virtual device listed in the module's ``global_infos["vdevice"]``, whose index
and memory scope are used (see :func:`_device_of`).

Names come from one :class:`~memcore_py.ir.builder.NameTable` for the whole module (TVM
uses one builder for all functions), so numbering continues across functions in module
order: ``alloc, alloc1, ...`` and ``_, _1, ...``. The table knows only names it made, so
they can repeat names already in the input (the printer disambiguates, as TVM's does).
Inside a dataflow block the new variables are DataflowVars (TVM's builder does the same).

A third argument (``tir_vars``, a shape of symbolic values) is not accepted by TVM 0.27's
``call_tir`` (it raises); we lower it as earlier TVM releases did, to
``_ = R.vm.call_tir_dyn(f, (a, b, alloc, tir_vars))`` — see DIFFERENCES.md.

Example::

    before:  y = R.call_tir(cls.add, (x, x), out_ty=R.Tensor((2, 3), "float32"))
    after:   alloc = R.builtin.alloc_tensor(R.shape([2, 3]), R.dtype("float32"), 0,
                                            R.str("global"), ty_args=(R.Tensor((2, 3), "float32"),))
             _ = cls.add(x, x, alloc)
             y = alloc

Preconditions: calls of these ops carry ``ty_args``. Postconditions: no ``call_tir``,
``call_tir_inplace`` or ``call_dps_packed`` remains. Bad input (missing or non-tensor
output type, unknown shape, bad ``inplace_indices``) raises
:class:`~memcore_py.errors.PassError` naming the function and binding.
"""
from __future__ import annotations

from ..ir.builder import NameTable
from ..ir.expr import (
    Call,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    PrimFunc,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    Var,
    VarBinding,
)
from ..ir.module import IRModule
from ..ir.op import get_op
from ..ir.prim import IntImm
from ..ir.types import FuncType, ObjectType, TensorType, TupleType
from ..ir._util import gc_paused
from ..ir.types import VOID
from ._lowering_utils import BindingTrackingMutator
from .pass_infra import ModulePass, PassContext

__all__ = ["call_tir_rewrite", "CallTIRRewrite"]

_CALL_TIR = get_op("relax.call_tir")
_CALL_TIR_INPLACE = get_op("relax.call_tir_inplace")
_CALL_DPS_PACKED = get_op("relax.call_dps_packed")
_ALLOC_TENSOR = get_op("relax.builtin.alloc_tensor")
_CALL_TIR_DYN = get_op("relax.vm.call_tir_dyn")
_DPS_OPS = (_CALL_TIR, _CALL_TIR_INPLACE, _CALL_DPS_PACKED)

#: Key of the in-place output indices in ``call_tir_inplace`` attributes.
ATTR_INPLACE_INDICES = "inplace_indices"


def _vdevice_list(mod: IRModule):
    infos = getattr(mod, "global_infos", None) or {}
    return list(infos.get("vdevice", ()) or ())


def _vdevice_fields(vd):
    """(kind, memory_scope) of a global_infos vdevice entry, whatever its representation."""
    kind = getattr(vd, "kind", None)
    scope = getattr(vd, "memory_scope", None)
    if isinstance(vd, dict):
        kind = vd.get("kind", kind)
        scope = vd.get("memory_scope", scope)
        target = vd.get("target")
        if kind is None and isinstance(target, dict):
            kind = target.get("kind")
        if kind is None and isinstance(target, str):
            kind = target.split()[0]
    if kind is None:
        target = getattr(vd, "target", None)
        if isinstance(target, dict):
            kind = target.get("kind")
        elif isinstance(target, str):
            kind = target.split()[0]
    return kind, scope or "global"


def _device_of(mod: IRModule, ty: TensorType):
    """(device index, storage scope) for an output of type ``ty`` (TVM ``GetDeviceIndex`` /
    ``GetDeviceIndexByScope``): ``(0, "global")`` without a virtual device; otherwise the
    position in ``global_infos["vdevice"]`` of the ``i``-th device of that kind named by
    ``vdevice="kind:i[:scope]"``, and its memory scope."""
    vdev = ty.vdevice
    if not vdev:
        return 0, "global"
    parts = str(vdev).split(":")
    kind = parts[0]
    idx = int(parts[1]) if len(parts) > 1 and parts[1].lstrip("-").isdigit() else 0
    scope = parts[2] if len(parts) > 2 and parts[2] else "global"
    seen = 0
    for pos, vd in enumerate(_vdevice_list(mod)):
        vkind, vscope = _vdevice_fields(vd)
        if vkind == kind:
            if seen == idx:
                return pos, vscope
            seen += 1
    return 0, scope


class _CallTIRMutator(BindingTrackingMutator):
    """Port of TVM ``CallTIRMutator``; one instance (one name table) per module."""

    pass_name = "call-tir-rewrite"

    def __init__(self, mod: IRModule):
        super().__init__()
        self.mod = mod
        self.names = NameTable()

    # Emission into the block being rebuilt, before the binding under construction.
    def _emit(self, value, hint, ty):
        var = (DataflowVar if self.in_dataflow else Var)(self.names.fresh(hint), ty)
        self._out.append(VarBinding(var, value))
        return var

    def visit_call(self, call: Call):
        call = self.visit_call_default(call)  # post-order
        op = call.op
        if op not in _DPS_OPS:
            return call
        if self._out is None:
            raise self._fail(f"{op.name} must be the value of a binding")
        if len(call.args) < 2:
            raise self._fail(f"{op.name} needs a callee and an argument tuple; got {len(call.args)} arguments")
        is_inplace = op is _CALL_TIR_INPLACE
        out_ty = call.ty_args[0] if call.ty_args else call.ty
        if type(out_ty) is TensorType:
            out_types = [out_ty]
        elif type(out_ty) is TupleType:
            out_types = list(out_ty.fields)
        else:
            raise self._fail(f"the output type of {op.name} must be a tensor or a tuple of tensors; got {out_ty!r}")
        inplace = self._inplace_indices(call, len(out_types)) if is_inplace else None
        arg_tuple = call.args[1]
        outs = []
        for i, t in enumerate(out_types):
            if type(t) is not TensorType:
                raise self._fail(f"{op.name} expects tensor outputs; output {i} has type {t!r}")
            if inplace is not None and inplace[i] != -1:
                if type(arg_tuple) is not Tuple or not 0 <= inplace[i] < len(arg_tuple.fields):
                    raise self._fail(f"in-place index {inplace[i]} of output {i} does not name an argument")
                outs.append(arg_tuple.fields[inplace[i]])
                continue
            if t.shape is None:
                raise self._fail(f"output {i} of {op.name} must have a known shape; got {t!r}")
            if not t.dtype:
                raise self._fail(f"output {i} of {op.name} must have a known dtype; got {t!r}")
            dev, scope = _device_of(self.mod, t)
            alloc = Call(
                _ALLOC_TENSOR,
                [ShapeExpr(t.shape), DataTypeImm(t.dtype), PrimValue(IntImm(dev)), StringImm(scope)],
                ty_args=(t,),
                ty=t,
            )
            outs.append(self._emit(alloc, "alloc", t))
        callee = call.args[0]
        new_outs = outs if inplace is None else [o for o, k in zip(outs, inplace) if k == -1]
        if type(arg_tuple) is Tuple:
            args = list(arg_tuple.fields) + new_outs
            if len(call.args) == 2:
                self._emit(Call(callee, args, ty=self._callee_ret(callee)), "_", self._callee_ret(callee))
            else:  # tir_vars: the pre-0.27 "unpack" form
                args.append(call.args[2])
                self._emit(Call(_CALL_TIR_DYN, [callee, Tuple(args)], ty=VOID), "_", VOID)
        else:
            args = [arg_tuple] + (new_outs if inplace is None else [])
            self._emit(Call(callee, args, ty=self._callee_ret(callee)), "_", self._callee_ret(callee))
        if len(outs) == 1:
            return outs[0]
        return Tuple(outs)

    def _inplace_indices(self, call, n_outputs):
        raw = call.attrs.get(ATTR_INPLACE_INDICES) if call.attrs else None
        if raw is None:
            raise self._fail("call_tir_inplace needs the attribute inplace_indices")
        if isinstance(raw, (int, IntImm)):
            raw = [raw]
        try:
            idx = [int(getattr(v, "value", v)) for v in raw]
        except (TypeError, ValueError):
            raise self._fail(f"inplace_indices must be a list of ints; got {raw!r}") from None
        if len(idx) != n_outputs:
            raise self._fail(f"call_tir_inplace has {n_outputs} outputs but {len(idx)} inplace_indices")
        if n_outputs == 1 and idx[0] == -1:
            raise self._fail("a call_tir_inplace with one output must compute it in place (index -1 given)")
        return idx

    def _callee_ret(self, callee):
        if type(callee) is ExternFunc:
            return ObjectType()
        if type(callee) is GlobalVar:
            func = self.mod.functions.get(callee)
            if func is None and callee.name in self.mod:
                func = self.mod[callee.name]
            if isinstance(func, PrimFunc):
                return VOID
            if isinstance(func, Function):
                return func.ty.ret
            if isinstance(callee.ty, FuncType):
                return callee.ty.ret
            return VOID
        if isinstance(callee.ty, FuncType):
            return callee.ty.ret
        return ObjectType()


def call_tir_rewrite(mod: IRModule) -> IRModule:
    """``mod`` with every DPS call made explicit (see the module docstring)."""
    m = _CallTIRMutator(mod)
    updates = {}
    with gc_paused():
        for gv, func in mod.functions.items():
            if type(func) is Function:
                m.func_name = gv.name
                new = m.visit_function(func)
                if new is not func:
                    updates[gv] = new
    return mod.with_functions(updates) if updates else mod


class CallTIRRewrite(ModulePass):
    """Module pass: :func:`call_tir_rewrite`."""

    name = "call-tir-rewrite"

    def transform(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return call_tir_rewrite(mod)
