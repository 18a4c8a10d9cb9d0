"""``to_tvm``: a memcore :class:`~memcore_py.ir.IRModule` -> a ``tvm.IRModule``, node by node
through TVM's FFI constructors (no TVMScript text for Relax functions).

The mapping is :mod:`memcore_py.tvm.from_tvm`'s, inverted. Conventions TVM's parser applies
to text and that are applied here too, so that ``to_tvm(m)`` equals
``tvm.script.from_source(m.script())``:

- a ``PrimValue`` is its ``PrimExpr`` itself; ``DataTypeImm`` is an ``ir.GenericConst`` of
  the dtype typed ``R.Any``; a ``Constant`` is ``MakeTensorConst`` of its array;
- ``R.builtin.alloc_tensor``'s ``ty_args`` are left out when the parser would imply them
  (the binding's annotation, or the arguments' own tensor type), as TVM never stores them;
- call attributes are built by TVM's own constructor of the op (:mod:`.values`); one holding
  a type or an expression is written in its function's context (:meth:`_Writer.attr_node`);
- a function without a return type (what memcore's builder leaves unset) is built without one,
  so TVM's constructor gives it its body's type, as TVM's parser does for ``def f(x: ...):``;
- symbolic dims are one ``ir.Var`` per name and function (TVM's parser binds a name once
  per function), typed ``PrimType(dtype)``;
- a tensor's vdevice ``"kind:index:scope"`` is the ``index``-th of the module's
  ``global_infos["vdevice"]`` of target kind ``kind`` (as TVM's parser reads it);
- a module's GlobalVar has its function's type (``ty``), as the parser and
  ``BlockBuilder.add_func`` give it (structural equality does not look at it, relax's
  normalizer does).

PrimFuncs: a PrimFunc carried from TVM (``PrimFunc.source``) is written back as that very
object. A copy of one with only its attributes edited and its text not yet written (as
AttachAttrLayoutFreeBuffers makes them) is that object with its definitions renewed and the
attributes changed, as TVM makes such copies (TVM's parser would not give every body back: a
buffer region's extent can come back int32 where TVM's is int64). A PrimFunc a memcore pass
wrote from a :class:`~memcore_py.transform.legalize_elementwise.TirKernel` (its ``source``:
DataflowUseInplaceCalls' in-place copies) is built as TVM objects from that kernel
(:mod:`.tir_writer`), with its attributes as edited. Any other PrimFunc memcore made itself
(importers, tests) has no TVM object; its text (or its signature-only text) is the one thing
parsed with TVM's script parser, function by function.

``reuse`` (internal, used by the TVM-native passes): a map from memcore nodes to the
addresses of the TVM objects :func:`~memcore_py.tvm.from_tvm` read them from (kept alive by a
:class:`~memcore_py.tvm._ffi_writer.Keep`). A node found there is written back as that TVM
object instead of being rebuilt, so a pass that changed a few bindings pays for those only;
every memcore pass keeps unchanged nodes identical, so this is exact. A function rebuilt with
the attrs dict and the parameter tuple it was read with (``function_with_body`` shares them)
gets the TVM ``DictAttrs`` and parameter ``Array`` it had (the ``_ATTRS`` / ``_PARAMS`` entries
of the map). The function map is built from addresses (``_ffi_writer.map_of``). Leaves, ops
and types that hold nothing of one module are shared by every conversion with their
addresses (``_SHARED``; the addresses are dropped with the objects).

Binding blocks are written by the compiled writer (:mod:`memcore_py.tvm._ffi_writer`: TVM's
constructors called through tvm_ffi's C API, objects kept as addresses), which hands every
binding it does not build itself back to :meth:`_Writer.binding_addr`; everything above a
block (sequences, functions, the module) and every binding, expression or type the compiled
writer declines is written here through TVM's Python API.
"""
from __future__ import annotations

import numpy as np

from ..ir.expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..errors import IRError
from ..ir._util import gc_paused
from ..ir.infer import infer_type
from ..ir.memo import MEMO
from ..ir.module import IRModule
from ..ir.op import Op
from ..ir.ops import builtin_alloc_own_type
from ..ir.prim import (Add, Cast, FloatImm, FloorDiv, FloorMod, IfThenElse, IntImm, Max, Min, Mul, Not, PrimExpr,
                       PrimVar, Select, Sub)
from ..ir.types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type, type_equal
from ..transform.legalize_elementwise import TirKernel
from . import _ffi_writer
from .compat import parse_script
from ._node_map import NodeMap
from ._api import TVMConversionError, tvm_api
from ._extraction import type_global_var
from .tir_writer import kernel_prim_func
from .from_tvm import _ATTRS, _PARAMS, _SYMBOLIC, CONDITION_PRIM_NODES, IF_THEN_ELSE_OP
from .values import call_attrs_to_tvm, to_tvm_value

__all__ = ["to_tvm"]

_BUILTIN_ALLOC = "relax.builtin.alloc_tensor"


#: TVM objects every conversion may share (see _Writer.__init__), a memo group
#: (memcore_py.ir.memo) trimmed when a conversion starts: dtypes, ops, ints, strings,
#: dtype_imms, constants, and the addresses of shared objects (leaves, ops, types; dropped with
#: the objects they point to). The singletons are never dropped.
_SHARED = MEMO.group("tvm.to_tvm.shared", 9)
_SINGLETONS: list = []


def _constant_key(dims):
    """The value key of a shape whose dims are all ``IntImm`` (its TVM objects can be shared by
    every conversion: they hold nothing of one module); None otherwise."""
    key = []
    for d in dims:
        if type(d) is not IntImm:
            return None
        key.append((d.value, d.dtype))
    return tuple(key)


_BINARY = {}


def _binary_constructors(api) -> dict:
    """memcore binary PrimExpr class -> TVM's constructor, built once per TVM."""
    r = _BINARY.get(id(api))
    if r is None:
        pf = api.prim_ffi
        r = {Add: pf.Add, Sub: pf.Sub, Mul: pf.Mul, FloorDiv: pf.FloorDiv, FloorMod: pf.FloorMod,
             Min: pf.Min, Max: pf.Max}
        r.update({node: getattr(pf, name) for name, node in CONDITION_PRIM_NODES})
        _BINARY.clear()
        _BINARY[id(api)] = r
    return r


class _PrimWriter:
    """memcore PrimExprs written as TVM's (:meth:`prim`): the symbolic variables of one
    function by name (``prims``, TVM vars made for names not given), integer constants and
    dtypes from the tables every conversion shares (``_SHARED``, trimmed here).

    Parameters
    ----------
    api : TVMApi
        The TVM in use.
    prims : dict, optional
        Symbolic var name -> the TVM var to write for it (taken, not copied).
    """

    def __init__(self, api, prims=None):
        self.api = api
        self.ir_ffi = api.ir_ffi
        self.binary = _binary_constructors(api)
        self.prims = {} if prims is None else prims
        self.where = "the module"
        _SHARED.trim()  # the addresses with the objects they point to
        self.shared = _SHARED.tables
        self.dtypes, self.ints = self.shared[0], self.shared[2]

    def fail(self, what: str):
        raise TVMConversionError(f"{what} (in {self.where}) cannot be converted to TVM")

    def dtype(self, s: str):
        r = self.dtypes.get(s)
        if r is None:
            r = self.dtypes[s] = self.ir_ffi.PrimType(s or "void")
        return r

    def prim(self, e):
        """The TVM PrimExpr of the memcore PrimExpr ``e`` (TVMConversionError for a node it does
        not write)."""
        t = type(e)
        if t is IntImm:
            key = (e.value, e.dtype)
            r = self.ints.get(key)
            if r is None:
                r = self.ints[key] = self.api.IntImm(e.dtype, e.value)
            return r
        if t is PrimVar:
            r = self.prims.get(e.name)
            if r is None:
                r = self.prims[e.name] = self.ir_ffi.Var(e.name, self.dtype(e.dtype), None)
            return r
        b = self.binary.get(t)
        if b is not None:
            return b(self.prim(e.a), self.prim(e.b), None)
        if t is FloatImm:
            return self.api.FloatImm(e.dtype, e.value)
        pf = self.api.prim_ffi
        if t is Cast:
            return pf.Cast(self.dtype(e.dtype), self.prim(e.value), None)
        if t is Select:
            return pf.Select(self.prim(e.condition), self.prim(e.true_value), self.prim(e.false_value), None)
        if t is IfThenElse:  # TIR's call, as ``tirx.if_then_else`` builds it (unfolded)
            args = [self.prim(e.condition), self.prim(e.true_value), self.prim(e.false_value)]
            return self.ir_ffi.Call(self.dtype(e.dtype), self.api.Op.get(IF_THEN_ELSE_OP), args, None, [], None)
        if t is Not:
            return pf.Not(self.prim(e.a), None)
        self.fail(f"symbolic expression {e!r}")


class _Writer(_PrimWriter):
    """One conversion: memo tables and the per-kind writers."""

    #: blocks written by the compiled writer (False: bindings through the Python API alone)
    compiled_blocks = True

    def __init__(self, api, mod: IRModule, reuse=None, record=None, keep=None):
        if not _ffi_writer.init(api):
            raise TVMConversionError("this tvm_ffi does not export the C API memcore's TVM bridge uses "
                                     "(TVMFFIFunctionCall, ...); install apache-tvm 0.27")
        super().__init__(api)
        self.rx_ffi = api.rx_ffi
        self.reuse = reuse if reuse is not None else NodeMap()
        self.mod = mod
        #: memcore node -> the address of the TVM object written for it (every node, reused
        #: or new), when the caller wants to hand the result to another native pass (passes.py)
        self.record = record
        #: owner of every object an address in ``record`` / ``vars`` points to
        self.keep = keep if keep is not None else _ffi_writer.Keep()
        self.obj = _ffi_writer.object_at
        #: memcore var -> address of its TVM var, for the vars defined so far
        self.vars = NodeMap()
        #: addresses of ops, GlobalVars and types for the compiled writer (objects kept alive
        #: by the memo tables below)
        self.gvar_addrs = {}
        self.type_addrs = {}
        #: leaf value key (``_ffi_writer.leaf_key``) -> address of its shared TVM object
        self.leaf_addrs = {}
        self.gvars = {}
        self.types = {}
        #: immutable leaves written once and shared (TVM shares them too). Per conversion:
        #: dims tuple -> ShapeExpr (dims may hold this module's symbolic vars); across
        #: conversions (_SHARED): dtype str -> PrimType, op -> Op, (value, dtype) -> IntImm,
        #: str -> StringImm / dtype constant, constant shapes and tensor types of constant
        #: shape (``_constant_key``), the missing type and ``R.Object``; and the addresses of
        #: those leaves by value (``_ffi_writer.constant_leaf_key``: ``shared_leaf_addrs``), of
        #: ops (``op_addrs``) and of those types (``shared_type_addrs``, by memcore type)
        self.shapes = {}
        (self.dtypes, self.ops, self.ints, self.strings, self.dtype_imms, self.constants, self.shared_leaf_addrs,
         self.op_addrs, self.shared_type_addrs) = self.shared
        singletons = _SINGLETONS
        if not singletons:  # the unit type: every kill and void call's (R.Tuple())
            singletons.extend((api.ir_ffi.TypeMissing(), api.rx_ffi.AnyType(None), api.ir_ffi.TupleType([], None)))
        self.missing, self.any, self.unit = singletons
        infos = mod.global_infos
        self.vdevices = [api.VDevice(_target(vd.target), vd.vdevice_id, vd.memory_scope)
                         for vd in infos.get("vdevice", ())] if infos else []

    # ------------------------------------------------------------------ types
    def ty(self, t):
        if t is None:
            return self.missing
        r = self.types.get(t)
        if r is not None:
            return r
        cls = type(t)
        key = None
        if cls is TensorType and t.vdevice is None and t.shape is not None:
            key = _constant_key(t.shape)
            if key is not None:  # shared across conversions, as the IntImms in it
                key = ("tensor", key, t.dtype)
                r = self.constants.get(key)
                if r is not None:
                    self.types[t] = r
                    return r
        if cls is TensorType:
            shape = None if t.shape is None else self.rx_ffi.ShapeExpr([self.prim(d) for d in t.shape], None)
            vd = None if t.vdevice is None else self.vdevice(t.vdevice)
            ndim = -1 if shape is not None else t.ndim
            r = self.rx_ffi.TensorType(shape, self.dtype(t.dtype) if t.dtype else None, ndim, vd, None)
        elif cls is TupleType:
            r = self.ir_ffi.TupleType([self.ty(f) for f in t.fields], None) if t.fields else self.unit
        elif cls is ObjectType:
            r = self.any
        elif cls is ShapeType:
            vals = None if t.values is None else [self.prim(d) for d in t.values]
            r = self.rx_ffi.ShapeType(vals, -1 if vals is not None else t.ndim, None)
        elif cls is PrimType:
            r = self.dtype(t.dtype)
        elif cls is FuncType:
            params = None if t.params is None else [self.ty(p) for p in t.params]
            if params is None:
                r = self.rx_ffi.FuncTypeOpaqueFunc(self.ty(t.ret), None, t.purity, None)
            else:
                r = self.rx_ffi.FuncType(params, self.ty(t.ret), t.purity, None)
        else:
            self.fail(f"type {t!r}")
        self.types[t] = r
        if key is not None:
            self.constants[key] = r
        return r

    def vdevice(self, name: str):
        """The module's vdevice ``"kind:index:scope"`` names: the ``index``-th of the module's
        vdevices whose target kind is ``kind`` (TVM's ``LookupVDevice``; the scope is not
        matched, as in TVM)."""
        parts = name.split(":")
        if len(parts) >= 2 and parts[1].isdigit():
            i = int(parts[1])
            same_kind = [vd for vd in self.vdevices if str(vd.target.kind.name) == parts[0]]
            if i < len(same_kind):
                return same_kind[i]
        self.fail(f"tensor vdevice {name!r} (not the index of a vdevice of that kind in the module's "
                  f"global_infos['vdevice'])")

    # ------------------------------------------------------------------ expressions
    def expr(self, e):
        r = self.reuse.get(e)
        if r is not None:
            return self.obj(r)
        f = _WRITERS.get(type(e))
        if f is None:
            self.fail(f"expression {type(e).__name__}")
        r = f(self, e)
        if self.record is not None:
            self.record[e] = self.keep.hold(r)
        return r

    def expr_addr(self, e) -> int:
        """The address of the TVM object written for ``e`` (for the compiled writer); a
        leaf's is remembered by value (``_ffi_writer.leaf_key``), as ``expr`` shares it."""
        r = self.reuse.get(e)
        if r is not None:
            return r
        if self.record is not None:
            r = self.record.get(e)
            if r is None:
                self.expr(e)
                r = self.record[e]
        else:
            r = self.keep.hold(self.expr(e))
        key = _ffi_writer.leaf_key_of(e)
        if key is not None:
            self.leaf_addrs[key] = r
            key = _ffi_writer.constant_leaf_key_of(e)
            if key is not None:  # the object is one of the shared tables': every conversion may use it
                self.shared_leaf_addrs[key] = r
        return r

    def attr_node(self, v):
        """An attribute value that is an IR node (a type, a symbolic or a Relax expression), as
        TVM's parser evaluates its text in this function (:func:`.values.to_tvm_value`)."""
        if isinstance(v, Type):
            return self.ty(v)
        if isinstance(v, PrimExpr):
            return self.prim(v)
        if type(v) is Var or type(v) is DataflowVar:
            return self.var_ref(v)
        return self.expr(v)

    def var_ref(self, v):
        r = self.vars.get(v)
        if r is None:
            r = self.reuse.get(v)
            if r is None:
                self.fail(f"use of variable {v.name!r} outside its scope")
        return self.obj(r)

    def def_var(self, v):
        return self.obj(self.def_var_addr(v))

    def def_var_addr(self, v) -> int:
        """Define ``v``: the address of its TVM variable (reused, or new)."""
        r = self.reuse.get(v)
        if r is None:
            if type(v) is DataflowVar:
                w = self.rx_ffi.DataflowVar(v.name, self.ty(v.ty), None)
            else:
                w = self.ir_ffi.Var(v.name, self.ty(v.ty), None)
            r = self.keep.hold(w)
        self.vars[v] = r
        if self.record is not None:
            self.record[v] = r
        return r

    def gvar(self, g):
        r = self.gvars.get(g)
        if r is None:
            a = self.gvar_addrs.get(g)
            if a is None:
                self.fail(f"reference to a GlobalVar {g.name!r} that is not in the module")
            r = self.gvars[g] = self.obj(a)
        return r

    def op_addr(self, op) -> int:
        r = self.op_addrs[op] = self.op(op).__chandle__()  # kept alive by the shared op table
        return r

    def alloc_ty_args_implied(self, call, bound_ty) -> bool:
        return _alloc_ty_args_implied(call, bound_ty)

    def ty_addr(self, t) -> int:
        r = self.type_addrs[t] = self.keep.hold(self.ty(t))
        cls = type(t)
        if cls is ObjectType or (cls is TensorType and t.vdevice is None and t.shape is not None
                                 and _constant_key(t.shape) is not None):
            self.shared_type_addrs[t] = r  # the object is a shared table's (``ty``)
        return r

    def op(self, op):
        r = self.ops.get(op)
        if r is None:
            try:
                r = self.ops[op] = self.ir_ffi.GetOp(op.name)
            except Exception as exc:  # noqa: BLE001 - TVM has no such op
                raise TVMConversionError(f"operator {op.name!r} (in {self.where}) is not registered in TVM") from exc
        return r

    def call(self, c, bound_ty=None):
        callee = c.op
        ct = type(callee)
        args = [self.expr(a) for a in c.args]
        ty_args = c.ty_args
        if ct is Op:
            tvm_op = self.op(callee)
            if callee.name == _BUILTIN_ALLOC and _alloc_ty_args_implied(c, bound_ty):
                ty_args = ()
            attrs = call_attrs_to_tvm(callee, tvm_op, c.attrs, args, f"a call to {callee.name} in {self.where}",
                                      self.attr_node)
            op = tvm_op
        else:
            if ct is GlobalVar:
                op = self.gvar(callee)
            elif ct is ExternFunc:
                op = self.extern_func(callee)
            else:
                op = self.expr(callee)
            attrs = None
            if c.attrs:
                attrs = self.api.ir.make_node("ir.DictAttrs", **{k: to_tvm_value(v, self.where, self.attr_node)
                                                                for k, v in c.attrs.items()})
        ty = c.ty
        if ty is None:  # memcore keeps a bound value's type on its var; TVM stores it on the call too
            ty = self.inferred_type(c, bound_ty)
        return self.ir_ffi.Call(self.ty(ty), op, args, attrs, [self.ty(t) for t in ty_args], None)

    def inferred_type(self, c, bound_ty):
        """The type TVM's normaliser gives a call memcore left untyped: memcore's type rule of
        the callee (``ir.infer.infer_type``, checked against TVM's), else the binding's."""
        try:
            ty = infer_type(c, self.mod)
        except IRError:
            ty = None
        return ty if ty is not None else bound_ty

    def shape_expr(self, e):
        vals = e.values
        r = self.shapes.get(vals)
        if r is None:
            key = _constant_key(vals)
            if key is not None:  # shared across conversions, as the IntImms in it
                r = self.constants.get(key)
            if r is None:
                r = self.rx_ffi.ShapeExpr([self.prim(d) for d in vals], None)
                if key is not None:
                    self.constants[key] = r
            self.shapes[vals] = r
        return r

    def prim_value(self, e):
        return self.prim(e.value)

    def string_imm(self, e):
        r = self.strings.get(e.value)
        if r is None:
            r = self.strings[e.value] = self.ir_ffi.StringImm(e.value, None)
        return r

    def dtype_imm(self, e):
        r = self.dtype_imms.get(e.value)
        if r is None:
            r = self.dtype_imms[e.value] = self.ir_ffi.GenericConst(self.api.tvm.DataType(e.value), self.any, None)
        return r

    def constant(self, e):
        if e.data is None:
            self.fail(f"constant {e!r} without data (a metadata reference whose array was not given)")
        arr = e.data if e.data.flags.c_contiguous else np.array(e.data, order="C")  # keeps 0-d arrays 0-d
        data = self.api.tvm.runtime.tensor(arr)
        return self.rx_ffi.MakeTensorConst(data, self.ty(e.ty), None)

    def _typed(self, node, ty):
        if ty is not None:
            self.rx_ffi.UpdateType(node, self.ty(ty))
        return node

    def tuple_expr(self, e):
        node = self.ir_ffi.Tuple([self.expr(f) for f in e.fields], None)
        return self._typed(node, e.ty) if node.ty.is_missing() else node

    def tuple_get_item(self, e):
        node = self.ir_ffi.TupleGetItem(self.expr(e.tuple_value), e.index, None)
        return self._typed(node, e.ty) if node.ty.is_missing() else node

    def if_expr(self, e):
        node = self.rx_ffi.If(self.expr(e.cond), self.seq(e.true_branch), self.seq(e.false_branch), None)
        return self._typed(node, e.ty) if node.ty.is_missing() else node

    def extern_func(self, e):
        return self.rx_ffi.ExternFunc(e.global_symbol, None, None)

    # ------------------------------------------------------------------ blocks
    def seq(self, s):
        r = self.reuse.get(s)
        if r is not None:
            return self.obj(r)
        blocks = [self.block(b) for b in s.blocks]
        node = self.rx_ffi.SeqExpr(blocks, self.expr(s.body), None)
        node = self._typed(node, s.ty) if node.ty.is_missing() else node
        if self.record is not None:
            self.record[s] = self.keep.hold(node)
        return node

    def block(self, b):
        r = self.reuse.get(b)
        if r is not None:
            return self.obj(r)
        if type(b) is DataflowBlock:
            dataflow = True
        elif type(b) is BindingBlock:
            dataflow = False
        else:
            self.fail(f"block {type(b).__name__}")
        if self.compiled_blocks:
            r = _ffi_writer.write_block(self, self.keep, b, dataflow, self.reuse, self.record, self.vars)
            node = self.obj(r)
        else:  # every binding through the Python API (the reference the compiled writer is tested against)
            out = []
            for bd in b.bindings:
                h = self.reuse.get(bd)
                out.append(self.obj(h if h is not None else self.binding_addr(bd)))
            node = (self.rx_ffi.DataflowBlock if dataflow else self.rx_ffi.BindingBlock)(out, None)
            r = self.keep.hold(node)
        if self.record is not None:
            self.record[b] = r
        return node

    def binding_addr(self, bd) -> int:
        """The address of a new TVM binding for ``bd``, written here (what the compiled
        writer declines)."""
        value = bd.value
        record = self.record
        if type(value) is Call and self.reuse.get(value) is None:
            tv = self.call(value, bd.var.ty)
            if record is not None:
                record[value] = self.keep.hold(tv)
        else:
            tv = self.expr(value)
        if type(bd) is VarBinding:
            nb = self.rx_ffi.VarBinding(self.def_var(bd.var), tv, None)
        elif type(bd) is MatchCast:
            nb = self.rx_ffi.MatchCast(self.def_var(bd.var), tv, self.ty(bd.ty), None)
        else:
            self.fail(f"binding {type(bd).__name__}")
        r = self.keep.hold(nb)
        if record is not None:
            record[bd] = r
        return r

    # ------------------------------------------------------------------ functions
    def function_addr(self, name, f) -> int:
        """The address of the TVM function written for ``f`` (reused when ``f`` is)."""
        r = self.reuse.get(f)
        if r is not None:
            return r
        self.where = f"function {name!r}"
        self.prims = dict(self.reuse.get((_SYMBOLIC, name), ()))  # the TVM vars reused nodes hold
        held = self.reuse.get((_PARAMS, id(f.params)))
        if held is not None and held[0] is f.params:  # the parameters it was read with: their Array
            params = self.obj(held[1])
        else:
            params = self.obj(_ffi_writer.array_of(self.keep, [self.def_var_addr(p) for p in f.params]))
        body = self.seq(f.body)
        attrs_key = (_ATTRS, id(f.attrs))
        held = self.reuse.get(attrs_key)
        if held is not None and held[0] is f.attrs:  # the attrs it was read or written with
            attrs = self.obj(held[1])
        else:
            attrs = self.api.ir.make_node("ir.DictAttrs", **{k: to_tvm_value(v, f"attribute {k!r} of {self.where}",
                                                                          self.attr_node)
                                                            for k, v in f.attrs.items()})
        if f.ret_ty is not None:
            ret = self.ty(f.ret_ty)
        elif f.body.ty is not None:  # TVM's constructor takes the body's type (well-defined in the signature)
            ret = None
        else:
            self.fail("a function with neither a return type nor a typed body")
        node = self.rx_ffi.Function(params, body, ret, f.is_pure, attrs, None)
        r = self.keep.hold(node)
        if self.record is not None:
            self.record[f] = r
            self.record[(_SYMBOLIC, name)] = dict(self.prims)
            if held is None or held[0] is not f.attrs:
                self.record[attrs_key] = (f.attrs, self.keep.hold(attrs))
        return r

    def prim_func(self, name, f):
        src = f.source
        if src is not None and isinstance(src, self.api.PrimFunc):
            return src
        if type(src) is TirKernel:
            built = self.kernel_prim_func(name, src, f.attrs, f.private)
            if built is not None:
                return built
        edited = self.edited_prim_func(name, f)
        if edited is not None:
            return edited
        from ..ir.text.prim_func_text import renamed_text, signature_only_text, signature_typevars, synced_text

        text = (
            signature_only_text(name, f)
            if f.text is None
            else synced_text(renamed_text(f.text, name), f.attrs, f.private)
        )
        typevars = "".join(f'{n} = TypeVar("{n}")\n' for n in signature_typevars(text))
        header = "# from typing import TypeVar\n# from tvm.script import tirx as T\n\n" + typevars
        try:
            return parse_script(self.api, header + text)
        except Exception as exc:  # noqa: BLE001 - TVM's parser refused memcore's PrimFunc text
            raise TVMConversionError(f"TVM could not read the text of PrimFunc {name!r}: {exc}") from exc

    def kernel_prim_func(self, name, kernel, attrs, private):
        """The PrimFunc of a :class:`TirKernel` (a function a memcore pass wrote) with the
        attributes ``attrs``, built as TVM objects (:mod:`.tir_writer`); None when this TVM
        has constructors the builder does not know (the text is parsed instead)."""
        values = {k: to_tvm_value(v, f"attribute {k!r} of PrimFunc {name!r}") for k, v in attrs.items()}
        if not private and "global_symbol" not in values:  # TVM's parser: a public PrimFunc's symbol is its name
            values["global_symbol"] = name
        try:
            return kernel_prim_func(self.api, kernel, values)
        except TVMConversionError:
            return None

    def edited_prim_func(self, name, f):
        """The TVM object of ``f`` when ``f`` is a PrimFunc from TVM with its attributes (or
        privacy) edited and its text not yet written (``with_attrs``: the
        :meth:`~memcore_py.ir.PrimFunc.unwritten_base` chain ends at a PrimFunc carrying its
        TVM object): that object with its definitions renewed (``s_tir.RenewDefs``: a
        function added next to the original defines its own variables and buffers, as TVM's
        AttachAttrLayoutFreeBuffers makes its copies) and the changed attributes set and the
        removed ones dropped (``WithAttr`` / ``WithoutAttr``). Its body is TVM's own; the text
        through TVM's parser would not always give it back (a region extent's dtype). None
        for any other PrimFunc, or when this TVM has no ``s_tir.RenewDefs``."""
        base = f.unwritten_base()
        while base is not None and base.unwritten_base() is not None:
            base = base.unwritten_base()
        if base is None:
            return None
        src = base.source
        if type(src) is TirKernel:
            return self.kernel_prim_func(name, src, f.attrs, f.private)
        if src is None or not isinstance(src, self.api.PrimFunc):
            return None
        renew = self.api.tvm.get_global_func("s_tir.RenewDefs", allow_missing=True)
        if renew is None:
            return None
        old, new = base.attrs, f.attrs
        node = renew(src)
        for k in old:
            if k not in new:
                node = node.without_attr(k)
        for k, v in new.items():
            if k not in old or not _same_value(old[k], v):
                node = node.with_attr(k, to_tvm_value(v, f"attribute {k!r} of PrimFunc {name!r}"))
        if f.private != base.private:  # TVM's parser: a public PrimFunc's symbol is its name
            if f.private:
                node = node.without_attr("global_symbol")
            elif "global_symbol" not in new:
                node = node.with_attr("global_symbol", name)
        return node

    def type_gvar(self, gvar_addr: int, func_addr: int):
        """Give the new GlobalVar at ``gvar_addr`` the type of its function (at ``func_addr``),
        as TVM does (``BlockBuilder.add_func``, the script parser): relax's normalizer rejects a
        call of a GlobalVar without one. The GlobalVar is updated in place, so the references
        already written to it see the type too."""
        type_global_var(self.api, self.obj(gvar_addr), self.obj(func_addr))

    def module(self, mod: IRModule):
        # GlobalVars and functions by address: the function map is built from addresses
        # (_ffi_writer.map_of), with no Python wrapper of a reused object
        reuse, record, keep, gvar_addrs = self.reuse, self.record, self.keep, self.gvar_addrs
        new_gvars = set()  # GlobalVars made here: typed with their function once it is written
        for gv in mod.functions:
            a = reuse.get(gv)
            if a is None:
                a = keep.hold(self.ir_ffi.GlobalVar(gv.name))
                new_gvars.add(gv)
            gvar_addrs[gv] = a
            if record is not None:
                record[gv] = a
        pairs = []
        for gv, f in mod.functions.items():
            if type(f) is Function:
                h = self.function_addr(gv.name, f)
            elif type(f) is PrimFunc:
                h = reuse.get(f)
                if h is None:
                    h = keep.hold(self.prim_func(gv.name, f))
                    if record is not None:
                        record[f] = h
            else:
                self.fail(f"module function {gv.name!r} of {type(f).__name__}")
            if gv in new_gvars:
                self.type_gvar(gvar_addrs[gv], h)
            pairs.append(gvar_addrs[gv])
            pairs.append(h)
        funcs = self.obj(_ffi_writer.map_of(keep, pairs))
        self.where = "the module"
        attrs = None
        if mod.attrs:
            attrs = self.api.ir.make_node(
                "ir.DictAttrs", **{k: to_tvm_value(v, "module attrs") for k, v in mod.attrs.items()}
            )
        infos = {}
        for key in mod.global_infos:
            if key != "vdevice":
                self.fail(f"module global info {key!r}")
            infos[key] = self.vdevices
        return self.ir_ffi.IRModule(funcs, attrs, infos)


#: memcore expression class -> the (unbound) _Writer method writing it. Unbound, so that a
#: writer holds no reference to itself and is freed as soon as the conversion ends.
_WRITERS = {
    Var: _Writer.var_ref,
    DataflowVar: _Writer.var_ref,
    Call: _Writer.call,
    ShapeExpr: _Writer.shape_expr,
    PrimValue: _Writer.prim_value,
    StringImm: _Writer.string_imm,
    DataTypeImm: _Writer.dtype_imm,
    Constant: _Writer.constant,
    Tuple: _Writer.tuple_expr,
    TupleGetItem: _Writer.tuple_get_item,
    If: _Writer.if_expr,
    SeqExpr: _Writer.seq,
    GlobalVar: _Writer.gvar,
    ExternFunc: _Writer.extern_func,
}


def _alloc_ty_args_implied(call, bound_ty) -> bool:
    """Whether TVM's parser would give ``R.builtin.alloc_tensor`` these ``ty_args`` without
    them being written (memcore's printer decides the same way): none, the binding's tensor
    annotation, or the arguments' own tensor type."""
    ty_args = call.ty_args
    if not ty_args:
        return True
    if len(ty_args) != 1:
        return False
    if type(bound_ty) is TensorType:
        return type_equal(ty_args[0], bound_ty)
    args = call.args
    return len(args) >= 2 and type_equal(ty_args[0], builtin_alloc_own_type(args[0], args[1]))


def _same_value(a, b) -> bool:
    """Whether the attribute values ``a`` and ``b`` are known equal (plain Python values and
    tuples of them compared by value, anything else by identity)."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is tuple or t is list:
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b))
    if t is int or t is bool or t is float or t is str:
        return a == b
    return False


def _target(target):
    """A TVM target from memcore's ``VDevice.target`` (a target dict or a string)."""
    from tvm.target import Target

    if isinstance(target, dict):
        return Target(_plain(target))
    return Target(target)


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def to_tvm(mod: IRModule):
    """Convert a memcore :class:`~memcore_py.ir.IRModule` into a ``tvm.IRModule``.

    Parameters
    ----------
    mod : IRModule

    Returns
    -------
    tvm.IRModule
        Structurally equal (``tvm.ir.assert_structural_equal``) to the module TVM's parser
        makes of ``mod.script()``; for ``mod = from_tvm(m)``, equal to ``m``.

    Raises
    ------
    TVMConversionError
        (an :class:`~memcore_py.errors.IRError`) for what TVM cannot hold: a constant without
        data, a vdevice not in the module, an op TVM does not register, ...
    """
    if not isinstance(mod, IRModule):
        raise TVMConversionError(f"to_tvm takes a memcore IRModule; got {type(mod).__name__}")
    with gc_paused():
        return _Writer(tvm_api(), mod).module(mod)


def to_tvm_reusing(mod: IRModule, reuse: dict, keep, record: dict | None = None):
    """:func:`to_tvm`, writing every node found in ``reuse`` (memcore node -> address of a
    TVM object that ``keep``, a :class:`~memcore_py.tvm._ffi_writer.Keep`, keeps alive) back
    as that object (module docstring). ``record``, when given, receives memcore node ->
    address for every node of the result (the ``reuse`` map of a next pass); the objects it
    points to are added to ``keep``."""
    return _Writer(tvm_api(), mod, reuse, record, keep).module(mod)
