"""``from_tvm``: a ``tvm.IRModule`` -> a memcore :class:`~memcore_py.ir.IRModule`, object by
object through TVM's Python API (no TVMScript text).

Node mapping (TVM 0.27 -> memcore), the inverse of :mod:`memcore_py.tvm.to_tvm`:

=====================================================  =========================================
TVM                                                    memcore
=====================================================  =========================================
``relax.expr.Function`` / ``tirx.PrimFunc``            ``Function`` / ``PrimFunc.lazy`` (the TVM
                                                       object carried as ``source``)
``VarBinding`` / ``MatchCast``, ``(Dataflow)Block``    same names
``ir.Var`` / ``relax.expr.DataflowVar``                ``Var`` / ``DataflowVar``; an undefined
                                                       ``ir.Var`` of a prim type is a symbolic
                                                       dim: ``PrimValue(PrimVar)``
``ir.Call`` (``Op``, ``GlobalVar``, ``ExternFunc``,    ``Call``; attributes through the op
``Var`` callee)                                        table's schema (:mod:`.values`)
``ir.IntImm`` / ``ir.FloatImm`` / ``prim.Add`` ...     ``PrimValue`` of the ``PrimExpr``
``prim.LT`` ... ``prim.And``/``Or``/``Not``/``Cast``/  ``LT`` ... ``And``/``Or``/``Not``/``Cast``/
``Select``; ``ir.Call`` of ``prim.if_then_else``        ``Select``; ``IfThenElse``
``ir.StringImm`` / ``ir.GenericConst`` (dtype)         ``StringImm`` / ``DataTypeImm``
``ir.GenericConst`` (tensor)                           ``Constant`` with its numpy data
``relax.expr.ShapeExpr``, ``ir.Tuple``,                ``ShapeExpr``, ``Tuple``, ``TupleGetItem``,
``ir.TupleGetItem``, ``relax.expr.If``,                ``If``, ``SeqExpr``, ``ExternFunc``,
``relax.expr.SeqExpr``, ``ExternFunc``, ``GlobalVar``  ``GlobalVar``
``relax.TensorType`` / ``ShapeType`` / ``AnyType`` /   ``TensorType`` / ``ShapeType`` /
``ir.TupleType`` / ``ir.PrimType`` / ``FuncType``      ``ObjectType`` / ``TupleType`` /
                                                       ``PrimType`` / ``FuncType``
missing type (``ir.Type``)                             None
``relax.VDevice`` in ``global_infos["vdevice"]``       ``VDevice``; a tensor's vdevice is
                                                       ``"kind:index:scope"`` as TVM prints it
=====================================================  =========================================

Anything else (``ir.StringType`` as a value's type, a ``TensorType`` whose shape is a
variable, nested functions, a TIR variable with an empty name, an attribute integer beyond
int64 (an ``ffi.BigInt``), TIR nodes memcore's symbolic arithmetic lacks such as
``prim.Ramp`` or a call of another TIR op, an op missing from memcore's op table, an attribute field outside an op's
schema) raises :class:`~memcore_py.tvm._api.TVMConversionError` naming it and the function
it sits in.

Speed: most of a module is read by the compiled reader (:mod:`memcore_py.tvm._ffi_reader`),
straight from TVM's memory through the C ABI of ``tvm/ffi/c_api.h`` and the field offsets of
tvm_ffi's reflection, checked on objects built through the Python API before first use:
bindings of calls and variable aliases, parameters, tensor and tuple types, dims that are
integers or known symbolic variables, and call arguments (variables, shapes, dtypes, strings,
integers). Whatever it declines (a first occurrence that needs the Python API -- an op, a
dtype, a symbolic variable, a composite dim --, MatchCast, If, tuples, constants ...) is read
here through TVM's Python API, which fills the memo tables the compiled reader then uses.
Through the Python API every field read and every array element is an FFI call with a
Python wrapper for its result (arrays are read with the FFI's size/get-item functions),
which made reading a whole model that way slow; reading from memory skips both. Types,
dtypes, ops and symbolic vars are memoised by the address of their TVM object
(``__chandle__``), valid while the object is alive: per conversion for types and variables,
across conversions (:class:`_Shared`, which keeps every keyed object alive) for ops, dtypes
and interned integers and nodes.
"""
from __future__ import annotations

import re
import sys

from ..ir._util import gc_paused
from ..ir.construct import (
    EMPTY_ATTRS,
    new_binding,
    new_block,
    new_call,
    new_function,
    new_if,
    new_match_cast,
    new_module,
    new_seq,
    new_shape_expr,
    new_shape_type,
    new_tuple,
    new_tuple_get_item,
    new_var,
)
from ..ir.expr import (
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    ExternFunc,
    GlobalVar,
    PrimFunc,
    PrimFuncParam,
    PrimValue,
    ShapeExpr,
    StringImm,
    Var,
)
from ..ir.memo import MEMO
from ..ir.module import IRModule, VDevice
from ..ir.op import get_op, is_registered, opaque_op
from ..ir.ops import builtin_alloc_implied_type, builtin_alloc_own_type
from ..ir.text.prim_func_text import type_spelled_bare
from ..ir.prim import EQ, GE, GT, LE, LT, NE, And, Cast, FloatImm, IfThenElse, IntImm, Not, Or, PrimVar, Select
from ..ir.types import FuncType, PrimType, ShapeType, TensorType, TupleType
from . import _ffi_reader, _ffi_writer, compat
from ._node_map import AddrMap
from ._api import TVMConversionError, tvm_api
from .values import _type_key, call_attrs_from_tvm, dict_attrs_from_tvm

__all__ = ["from_tvm"]

#: TVM PrimFunc attribute spelled in the decorator (``@T.prim_func(s_tir=True)``), which
#: memcore keeps in the PrimFunc's text rather than in ``attrs``.
_DECORATOR_ATTRS = ("s_tir",)
_OBJECT = _ffi_reader.OBJECT_TYPE  # the compiled reader's, so that both read R.Object as one node
#: Key of a function's symbolic vars (name -> TVM var) in a ``record`` map.
_SYMBOLIC = "symbolic-vars"
#: Key of a function's attrs in a ``record`` map: ``(_ATTRS, id(attrs dict))`` ->
#: ``(attrs dict, address of the TVM DictAttrs)`` (the dict is held, so its id stays its own), so
#: that a function rebuilt with the attrs it was read with writes them back as that object.
_ATTRS = "function-attrs"
#: Key of a function's parameters in a ``record`` map, as :data:`_ATTRS`: ``(_PARAMS, id(params
#: tuple))`` -> ``(params tuple, address of the TVM Array)``.
_PARAMS = "function-params"
_BUILTIN_ALLOC = get_op("relax.builtin.alloc_tensor")


def memcore_op(op):
    """memcore's :class:`~memcore_py.ir.op.Op` for TVM's ``tvm.ir.Op`` ``op``: the registered op
    of its name, else an opaque op as pure as TVM's ``FPurity`` says; None when an op memcore
    does not model declares no purity (TVM requires every Relax op called to declare it)."""
    name = str(op.name)
    if is_registered(name):
        return get_op(name)
    try:
        pure = op.get_attr("FPurity")
    except Exception:  # noqa: BLE001 - TVM raises when no op declares the attribute
        pure = None
    return opaque_op(name, pure=pure) if type(pure) is bool else None


class _Shared:
    """Memo tables shared by every conversion, so that a small module does not pay for
    reading TVM's ops, dtypes and integers through the Python API each time: dtype by
    ``PrimType`` address, op by ``Op`` address, interned ``IntImm`` by (value, ``PrimType``
    address), and the value-keyed interned nodes (tensor and shape types, dtype/string/prim
    leaves; memcore nodes are immutable, so modules may share them). Every TVM object whose
    address is a key is kept alive in ``keep``, so an address can never be reused by another
    object while its entry exists. The dict tables are a memo group (memcore_py.ir.memo),
    trimmed when a conversion starts (symbolic shapes make new keys per module); ``ops`` and
    ``keep`` are dropped with them."""

    __slots__ = ("group", "ops", "keep")

    def __init__(self):
        self.group = MEMO.group("tvm.from_tvm.shared", 3, on_clear=self._drop_objects)
        self._drop_objects()

    def _drop_objects(self):
        self.ops, self.keep = AddrMap(), []

    def tables(self):
        self.group.trim()
        dtypes, ints, interned = self.group.tables
        return dtypes, self.ops, ints, interned, self.keep


_SHARED = _Shared()


def _layout(api):
    """The compiled reader's :class:`~memcore_py.tvm._ffi_reader.Layout` for this TVM, or
    None when the compatibility gate turns the fast paths off (then everything is read
    through the Python API): :func:`memcore_py.tvm.compat.fast_layout`."""
    return compat.fast_layout(api)


_BINARY = {}

#: The binary PrimExprs of conditions (TVM class name in ``tvm.ir.prim.expr``, memcore node),
#: read here and written by :mod:`.to_tvm` (the compiled reader declines them).
CONDITION_PRIM_NODES = (("LT", LT), ("LE", LE), ("GT", GT), ("GE", GE), ("EQ", EQ), ("NE", NE), ("And", And),
                        ("Or", Or))
#: The op of TIR's ``if_then_else`` call in TVM 0.27 (:class:`~memcore_py.ir.prim.IfThenElse`).
IF_THEN_ELSE_OP = "prim.if_then_else"


def _binary_classes(api):
    """TVM binary PrimExpr class -> memcore's, built once per TVM."""
    r = _BINARY.get(id(api))
    if r is None:
        r = {getattr(api.prim, name): node for name, node in _ffi_reader.BINARY_PRIM_NODES + CONDITION_PRIM_NODES}
        _BINARY.clear()
        _BINARY[id(api)] = r
    return r


_EXPR_READERS = {}


def _expr_readers(api) -> dict:
    """TVM expression class -> the (unbound) :class:`_Reader` method reading it, built once.
    Unbound, so that a reader holds no reference to itself: it is freed as soon as the
    conversion ends (with a dict of bound methods it waited for the cyclic collector, holding
    the node map and every object it references)."""
    r = _EXPR_READERS.get(id(api))
    if r is None:
        R = _Reader
        r = {
            api.Var: R.var_ref,
            api.DataflowVar: R.var_ref,
            api.Call: R.call,
            api.ShapeExpr: R.shape_expr,
            api.StringImm: R.string_imm,
            api.GenericConst: R.generic_const,
            api.Tuple: R.tuple_expr,
            api.TupleGetItem: R.tuple_get_item,
            api.If: R.if_expr,
            api.SeqExpr: R.seq,
            api.GlobalVar: R.gvar,
            api.ExternFunc: R.extern_func,
            api.IntImm: R.prim_value,
            api.FloatImm: R.prim_value,
        }
        for cls in _binary_classes(api):
            r[cls] = R.prim_value
        for cls in (api.prim.Not, api.prim.Cast, api.prim.Select):
            r[cls] = R.prim_value
        _EXPR_READERS.clear()
        _EXPR_READERS[id(api)] = r
    return r


class _Reader:
    """One conversion: the memo tables and the per-kind readers."""

    def __init__(self, api, tvm_mod, record=None):
        ffi = api.ffi
        #: memcore node -> address of the TVM object it was read from, when given (the
        #: caller keeps ``tvm_mod`` alive as long as it uses the addresses)
        self.record = record
        self.prim_sources = {}
        self.api = api
        self.size = ffi.ArraySize
        self.get = ffi.ArrayGetItem
        # memo tables keyed by the address of a TVM object (AddrMap: no Python int per lookup)
        self.vars = AddrMap()
        self.leaves = AddrMap()
        self.gvars = {}
        self.types = AddrMap()
        self.prims = {}
        shared = _SHARED.tables()  # memo tables that outlive this conversion (_Shared)
        self.dtypes, self.ops, self.ints, self.interned, self.keep = shared
        self.callees = AddrMap()  # this module's GlobalVars by address (ops: the shared ``ops``)
        self.where = "the module"
        self.binary = _binary_classes(api)
        self.layout = _layout(api)
        self.has_infos = self.layout is None or _ffi_reader.module_has_global_infos(self.layout, tvm_mod.__chandle__())
        self.vdevices = self._vdevice_list(tvm_mod) if self.has_infos else []
        self.builtin_alloc = _BUILTIN_ALLOC
        self.expr_readers = _expr_readers(api)  # unbound: a dict of bound methods would make a cycle

    # ------------------------------------------------------------------ helpers
    def items(self, arr) -> list:
        get = self.get
        return [get(arr, i) for i in range(self.size(arr))]

    def fail(self, what: str):
        raise TVMConversionError(f"{what} (in {self.where}) is not modelled by memcore")

    def dtype(self, prim_type) -> str:
        h = prim_type.__chandle__()
        s = self.dtypes.get(h)
        if s is None:
            if type(prim_type) is not self.api.PrimType:
                self.fail(f"dtype {_type_key(prim_type)} {prim_type!r}")
            s = str(prim_type.dtype) or "void"  # TVM's Python dtype prints void as ""
            self.dtypes[h] = s
            self.keep.append(prim_type)  # its address keys the shared tables (_Shared)
        return s

    # ------------------------------------------------------------------ PrimExpr
    def prim(self, e):
        cls = type(e)
        api = self.api
        if cls is api.IntImm:
            t = e.ty
            dt = self.dtype(t)
            v = e.value
            key = (v, dt)
            r = self.ints.get(key)
            if r is None:
                r = self.ints[key] = IntImm(v, dt)
            self.ints[(v, t.__chandle__())] = r  # as the compiled reader looks it up
            return r
        if cls is api.Var:
            h = e.__chandle__()
            r = self.prims.get(h)
            if r is None:
                ty = e.ty
                if type(ty) is not api.PrimType:
                    self.fail(f"variable {e.name!r} of type {_type_key(ty)} inside a symbolic expression")
                if not str(e.name):  # TVM's text names it after its place in the module (a TypeVar ``v``)
                    self.fail("a symbolic variable with an empty name")
                r = self.prims[h] = PrimVar(str(e.name), self.dtype(ty))
                if self.record is not None:
                    self.prim_sources[h] = e
            return r
        b = self.binary.get(cls)
        if b is not None:
            return b(self.prim(e.a), self.prim(e.b))
        if cls is api.FloatImm:
            return FloatImm(e.value, self.dtype(e.ty))
        pe = api.prim
        if cls is pe.Cast:
            return Cast(self.dtype(e.ty), self.prim(e.value))
        if cls is pe.Select:
            return Select(self.prim(e.condition), self.prim(e.true_value), self.prim(e.false_value))
        if cls is pe.Not:
            return Not(self.prim(e.a))
        if cls is api.Call and self.is_if_then_else(e):
            c, t, f = e.args
            return IfThenElse(self.prim(c), self.prim(t), self.prim(f))
        self.fail(f"symbolic expression node {_type_key(e)} ({e})")

    def is_if_then_else(self, c) -> bool:
        """``c`` (an ``ir.Call``) is TIR's ``if_then_else`` as TVM builds it: the op
        :data:`IF_THEN_ELSE_OP`, three arguments, no attributes or type arguments, a prim type."""
        op = c.op
        return (type(op) is self.api.Op and str(op.name) == IF_THEN_ELSE_OP and len(c.args) == 3
                and c.attrs is None and len(c.ty_args) == 0 and type(c.ty) is self.api.PrimType)

    def prims_of(self, arr) -> tuple:
        """The PrimExprs of a TVM array; int64 ``IntImm`` (most dims) inline and interned."""
        layout = self.layout
        if layout is not None:
            dims = _ffi_reader.read_dims(layout, arr.__chandle__(), self.ints, self.prims)
            if dims is not None:
                return dims
        get = self.get
        int_cls = self.api.IntImm
        ints = self.ints
        out = []
        for i in range(self.size(arr)):
            e = get(arr, i)
            if type(e) is int_cls:
                v = e.value
                r = ints.get((v, e.ty.__chandle__()))
                if r is None:
                    r = self.prim(e)
                    ints[(v, e.ty.__chandle__())] = r
                out.append(r)
            else:
                out.append(self.prim(e))
        return tuple(out)

    def shape_type(self, dims):
        key = ("shape", dims)
        r = self.interned.get(key)
        if r is None:
            r = self.interned[key] = new_shape_type(dims)
        return r

    # ------------------------------------------------------------------ types
    def ty(self, t):
        if t is None:
            return None
        h = t.__chandle__()
        r = self.types.get(h)
        if r is not None:
            return r
        api = self.api
        cls = type(t)
        if cls is api.TensorType:
            shape = t.shape
            if shape is None:
                dims = None
            elif type(shape) is api.ShapeExpr:
                dims = self.prims_of(shape.values)
            else:
                self.fail(f"a tensor type whose shape is {_type_key(shape)} {shape}")
            vd = t.vdevice
            dtype = t.dtype  # None: no dtype (``R.Tensor((2, 3))``); ``void`` is spelled out
            key = (dims, "" if dtype is None else self.dtype(dtype), t.ndim,
                   None if vd is None else self.vdevice_name(vd))
            r = self.interned.get(key)
            if r is None:
                r = self.interned[key] = TensorType(*key)
        elif cls is api.TupleType:
            r = TupleType(tuple([self.ty(f) for f in self.items(t.fields)]))
        elif cls is api.AnyType:
            r = _OBJECT
        elif cls is api.ShapeType:
            vals = t.values
            r = ShapeType(None if vals is None else self.prims_of(vals), t.ndim)
        elif cls is api.PrimType:
            r = PrimType(self.dtype(t))
        elif cls is api.FuncType:
            params = t.params
            if t.derive_func is not None:
                self.fail(f"a function type with a derive_func ({t})")
            r = FuncType(None if params is None else [self.ty(p) for p in self.items(params)], self.ty(t.ret),
                         bool(t.purity))
        elif cls is api.Type:
            return None  # TVM's "missing" type
        else:
            self.fail(f"type {_type_key(t)} ({t})")
        self.types[h] = r
        return r

    # ------------------------------------------------------------------ vdevices
    def _vdevice_list(self, tvm_mod) -> list:
        infos = tvm_mod.global_infos
        if infos is None or "vdevice" not in infos:
            return []
        return self.items(infos["vdevice"])

    def vdevice_name(self, vd) -> str:
        """``"kind:index:scope"`` as TVM prints a tensor's vdevice: ``index`` counts the
        module's vdevices of the same target kind (TVM's ``LookupVDevice`` reads it back so;
        :meth:`~memcore_py.tvm.to_tvm._Writer.vdevice` too)."""
        h = vd.__chandle__()  # (VDevice.same_as recurses forever in TVM 0.27)
        found = next((x for x in self.vdevices if x.__chandle__() == h), None)
        if found is None:
            from tvm_ffi import structural_equal

            found = next((x for x in self.vdevices if structural_equal(x, vd)), None)
        if found is None:
            self.fail(f"a tensor vdevice {vd} that is not in the module's global_infos['vdevice']")
        kind = found.target.kind.name
        index = 0
        for x in self.vdevices:
            if x is found:
                break
            index += x.target.kind.name == kind
        return f"{kind}:{index}:{found.memory_scope}"

    def global_infos(self, tvm_mod) -> dict:
        infos = tvm_mod.global_infos
        out = {}
        if infos is None:
            return out
        for key in infos:
            key = str(key)
            if key != "vdevice":
                self.fail(f"module global info {key!r}")
            out[key] = [VDevice(_target_dict(vd.target), int(vd.vdevice_id), str(vd.memory_scope))
                        for vd in self.vdevices]
        return out

    # ------------------------------------------------------------------ expressions
    def expr(self, e):
        f = self.expr_readers.get(type(e))
        if f is None:
            self.fail(f"expression {_type_key(e)}")
        return f(self, e)

    def var_ref(self, v):
        r = self.vars.get(v.__chandle__())
        if r is not None:
            return r
        if type(v) is self.api.Var and type(v.ty) is self.api.PrimType:
            return PrimValue(self.prim(v))
        self.fail(f"use of variable {v.name!r} outside its scope")

    def def_var(self, v):
        cls = DataflowVar if type(v) is self.api.DataflowVar else Var
        r = new_var(cls, str(v.name), self.ty(v.ty))
        self.vars[v.__chandle__()] = r
        if self.record is not None:
            self.record[r] = v.__chandle__()
        return r

    def gvar(self, g):
        r = self.gvars.get(g.__chandle__())
        if r is None:
            self.fail(f"reference to the GlobalVar {g.name_hint!r} of another module")
        return r

    def op(self, op):
        h = op.__chandle__()
        r = self.ops.get(h)
        if r is None:
            r = memcore_op(op)
            if r is None:
                self.fail(f"operator {str(op.name)!r} without a declared purity (FPurity)")
            self.ops[h] = r
            self.keep.append(op)
        return r

    def call(self, c):
        api = self.api
        op = c.op
        h = op.__chandle__()
        callee = self.ops.get(h)  # ops, then GlobalVars, by address
        if callee is None:
            callee = self.callees.get(h)
        oc = type(op)
        if callee is None:
            if oc is api.Op:
                if self.is_if_then_else(c):  # a PrimValue: TVM 0.27's PrimValue is the PrimExpr
                    return self.prim_value(c)
                callee = self.op(op)
            elif oc is api.GlobalVar:
                callee = self.gvar(op)
            elif oc is api.ExternFunc:
                callee = ExternFunc(str(op.global_symbol))
            else:
                callee = self.expr(op)
        get = self.get
        a = c.args
        vars_get = self.vars.get
        record = self.record
        args = []
        for i in range(self.size(a)):
            x = get(a, i)
            m = vars_get(x.__chandle__())  # most arguments are variables (recorded where defined)
            if m is None:
                m = self.expr(x)
                if record is not None:
                    record[m] = x.__chandle__()
            args.append(m)
        args = tuple(args)
        attrs = c.attrs
        if attrs is None:
            attrs = EMPTY_ATTRS
        elif oc is api.Op:  # an opaque op has no attribute names: any attribute is refused
            attrs = call_attrs_from_tvm(callee, attrs, f"a call to {callee.name} in {self.where}", self.attr_node)
        else:
            if "sinfo_args" in attrs:
                raise TVMConversionError(
                    f"attribute 'sinfo_args' of a call in {self.where}: TVM 0.27's parser keeps the keyword as an "
                    "attribute, memcore's reads it as the call's ty_args (its meaning before 0.27); not modelled")
            attrs = dict_attrs_from_tvm(attrs, f"a call in {self.where}", self.attr_node)
        ta = c.ty_args
        n = self.size(ta)
        ty_args = tuple([self.ty(get(ta, i)) for i in range(n)]) if n else ()
        return new_call(callee, args, attrs, ty_args, self.ty(c.ty))

    def attr_node(self, v, where):
        """An attribute value that is an IR node, read as memcore's parser reads TVM's text of
        it: a type as the type, a variable as the variable in scope (a symbolic one as its
        ``PrimVar``), a symbolic expression as the ``PrimExpr`` (TVM prints ``foo=n + 1``),
        any other Relax expression as the expression. A type TVM prints as a bare name
        (``R.Tensor``, ``R.Tuple``, ``R.Any``, ``R.Callable``, ``T.int64``) is refused, as
        memcore's parser refuses that name: TVM's parser reads it back as the Python function
        of that name, not as the type."""
        api = self.api
        if isinstance(v, api.Type):
            t = None if type(v) is api.Type else self.ty(v)
            if t is None or type_spelled_bare(t):
                raise TVMConversionError(f"type value {v} of {where} is printed by TVM as a bare name, which reads "
                                         "back as a function; memcore does not model it as an attribute value")
            return t
        cls = type(v)
        if cls is api.Var or cls is api.DataflowVar:
            r = self.vars.get(v.__chandle__())
            if r is not None:
                return r
            if type(v.ty) is api.PrimType:
                return self.prim(v)
        elif self.expr_readers.get(cls) is _Reader.prim_value or (cls is api.Call and self.is_if_then_else(v)):
            return self.prim(v)
        return self.expr(v)

    def shape_expr(self, e):
        dims = self.prims_of(e.values)
        return new_shape_expr(dims, self.shape_type(dims))

    def prim_value(self, e):
        return PrimValue(self.prim(e))

    def string_imm(self, e):
        return StringImm(str(e.value))

    def generic_const(self, e):
        v = e.value
        if type(v).__name__ == "dtype":
            r = DataTypeImm(str(v))
            if self.layout is not None:
                _ffi_reader.register_dtype_imm(self.layout, self, e.__chandle__(), r)
            return r
        if isinstance(v, self.api.Tensor):
            return Constant(v.numpy(), self.ty(e.ty))
        self.fail(f"constant of {type(v).__name__} {v!r}")

    def tuple_expr(self, e):
        return new_tuple(tuple([self.expr(f) for f in self.items(e.fields)]), self.ty(e.ty))

    def tuple_get_item(self, e):
        return new_tuple_get_item(self.expr(e.tuple_value), int(e.index), self.ty(e.ty))

    def if_expr(self, e):
        return new_if(self.expr(e.cond), self.seq(e.true_branch), self.seq(e.false_branch), self.ty(e.ty))

    def extern_func(self, e):
        return ExternFunc(str(e.global_symbol))

    # ------------------------------------------------------------------ blocks
    def seq(self, s):
        if type(s) is not self.api.SeqExpr:
            self.fail(f"a branch body of {_type_key(s)} (TVM normalises branches to SeqExpr)")
        blocks = tuple([self.block(b) for b in self.items(s.blocks)])
        r = new_seq(blocks, self.expr(s.body), self.ty(s.ty))
        if self.record is not None:
            self.record[r] = s.__chandle__()
        return r

    def block(self, b):
        api = self.api
        cls = type(b)
        if cls is api.DataflowBlock:
            kind = DataflowBlock
        elif cls is api.BindingBlock:
            kind = BindingBlock
        else:
            self.fail(f"block {_type_key(b)}")
        out = []
        if self.layout is not None:
            _ffi_reader.read_bindings(self.layout, self, b.bindings, self.binding, out)
        else:
            for bd in self.items(b.bindings):
                out.append(self.binding(bd))
        nb = new_block(kind, tuple(out))
        record = self.record
        if record is not None:
            record[nb] = b.__chandle__()
        return nb

    def binding(self, bd):
        """A ``VarBinding`` or ``MatchCast`` read through the Python API."""
        t = type(bd)
        record = self.record
        if t is self.api.VarBinding:
            tv = bd.value
            value = self.expr(tv)
            var = self.def_var(bd.var)
            if type(value) is Call and value.op is _BUILTIN_ALLOC and not value.ty_args:
                value = self.implied_alloc_ty_args(value, var.ty)
            nb = new_binding(var, value)
            if record is not None:
                record[nb] = bd.__chandle__()
                record[value] = tv.__chandle__()
            return nb
        if t is self.api.MatchCast:
            value = self.expr(bd.value)
            ty = self.ty(bd.ty)
            nb = new_match_cast(self.def_var(bd.var), value, ty)
            if record is not None:
                record[nb] = bd.__chandle__()
            return nb
        self.fail(f"binding {_type_key(bd)}")

    def implied_alloc_ty_args(self, call, annotation):
        """``R.builtin.alloc_tensor`` bound to a variable annotated ``annotation``, as memcore's
        parser reads it: ``ty_args`` hold the type its text implies (TVM stores none;
        :func:`~memcore_py.ir.ops.builtin_alloc_implied_type`)."""
        shape, dtype = call.args[0], call.args[1]
        if type(shape) is ShapeExpr and type(dtype) is DataTypeImm:  # interned, as tensor types are
            key = (shape.values, dtype.value, len(shape.values), None)
            own = self.interned.get(key)
            if own is None:
                own = self.interned[key] = builtin_alloc_own_type(shape, dtype)
        else:
            own = builtin_alloc_own_type(shape, dtype)
        ty = builtin_alloc_implied_type(own, annotation)[0]
        return new_call(call.op, call.args, call.attrs, (ty,), call.ty)

    # ------------------------------------------------------------------ functions
    def function(self, name, f):
        self.where = f"function {name!r}"
        self.prims = {}
        self.leaves = AddrMap()  # the compiled reader's leaf arguments by address (they may hold this function's prims)
        tvm_params = f.params
        if self.layout is not None:
            params = []
            _ffi_reader.read_params(self.layout, self, tvm_params, self.def_var, params)
        else:
            params = [self.def_var(p) for p in self.items(tvm_params)]
        body = self.seq(f.body)
        attrs = None if self.layout is None else _ffi_reader.function_attrs(self.layout, f.__chandle__())
        if attrs is None:
            attrs = dict_attrs_from_tvm(f.attrs, self.where, self.attr_node)
        # TVM's function is well formed: the unchecked constructor, with the dict read here
        ret_ty, is_pure = self.ty(f.ret_ty), bool(f.is_pure)
        params = tuple(params)
        r = new_function(params, body, ret_ty, attrs, is_pure,
                         FuncType([p.ty for p in params], ret_ty if ret_ty is not None else body.ty, is_pure), True)
        if self.record is not None:
            self.record[r] = f.__chandle__()
            tvm_attrs = f.attrs
            if tvm_attrs is not None:
                self.record[(_ATTRS, id(r.attrs))] = (r.attrs, tvm_attrs.__chandle__())
            self.record[(_PARAMS, id(r.params))] = (r.params, tvm_params.__chandle__())
            # the function's symbolic vars by name: new nodes a pass builds must use these
            self.record[(_SYMBOLIC, name)] = {pv.name: self.prim_sources[h] for h, pv in self.prims.items()}
        return r

    def module(self, tvm_mod) -> IRModule:
        api = self.api
        # In TVM's iteration order (the order TVM's passes visit the functions in): a memcore
        # pass that names new functions (NameSupply) then names them as TVM's pass does on the
        # same module. (Module equality and memcore's printer do not depend on the order.)
        prim_func = api.PrimFunc
        entries = []
        read = None if self.layout is None else _ffi_reader.module_functions(self.layout, tvm_mod.__chandle__())
        if read is not None:  # compiled: a wrapper per function only (object_at)
            object_at = _ffi_writer.object_at
            for e in read:
                entries.append((e.name, e.gvar, object_at(e.func)))
        else:
            for gv, f in tvm_mod.functions.items():
                entries.append((str(gv.name_hint), gv.__chandle__(), f))
        record = self.record
        gvars = []
        for name, h, _ in entries:
            g = GlobalVar(name)
            self.gvars[h] = g
            self.callees[h] = g
            if record is not None:
                record[g] = h
            gvars.append(g)
        funcs = {}
        for g, (name, _, f) in zip(gvars, entries):
            cls = type(f)
            if cls is api.Function:
                funcs[g] = self.function(name, f)
            elif cls is prim_func:
                _check_prim_func(f, name)
                body = _TIRBody(f)
                pf = funcs[g] = PrimFunc.lazy(_PrimFuncSignature(f, name, body), f, body)
                if record is not None:  # written back by address while the pass keeps it
                    record[pf] = f.__chandle__()
            else:
                raise TVMConversionError(f"module function {name!r} of {_type_key(f)} is not modelled by memcore")
        self.where = "the module"
        attrs = None if self.layout is None else _ffi_reader.module_attrs(self.layout, tvm_mod.__chandle__())
        if attrs is None:
            attrs = dict_attrs_from_tvm(tvm_mod.attrs, "the module")
        # TVM's module holds one function per name, every one checked above
        return new_module(funcs, attrs, self.global_infos(tvm_mod) if self.has_infos else {})


def _target_dict(target) -> dict:
    """A TVM target as memcore reads ``I.vdevice({...})`` from TVM's text: its exported dict
    with keys sorted (TVM prints them so), lists kept as lists."""
    return _sorted_value(target.export())


def _sorted_value(v):
    api = tvm_api()
    if isinstance(v, (dict, api.Map)):
        return {str(k): _sorted_value(v[k]) for k in sorted(v, key=str)}
    if isinstance(v, (list, tuple, api.Array)):
        return [_sorted_value(x) for x in v]
    return v


_WALK: dict = {}


def _walker(kind: str):
    """tvm_ffi's compiled structural walk calling back on every object of a TVM type
    (``walk(root, callback)``): ``kind`` is a class of :func:`~memcore_py.tvm._api.tvm_api`
    (``"GlobalVar"``) or an FFI type key (``"ffi.BigInt"``). The walk's entry point is taken
    with its callback type resolved once (the public ``structural_walk`` resolves it per
    call); when this tvm_ffi lacks that entry point, the public one is used for a class, and
    for a type key without a Python class the walk finds nothing."""
    w = _WALK.get(kind)
    if w is None:
        import tvm_ffi

        cls = None if "." in kind else getattr(tvm_api(), kind)
        try:
            from tvm_ffi import _ffi_api, core

            if cls is None:
                index = core._object_type_key_to_index(kind)
            else:
                index = core.TypeSchema.from_annotation(cls).origin_type_index
            order = int(tvm_ffi.structural.WalkOrder.POSTORDER)
            walk = _ffi_api.StructuralWalk
            w = _WALK[kind] = lambda root, cb: walk(root, [(index, cb)], [], order)
        except (AttributeError, ImportError, TypeError):
            if cls is None:
                w = _WALK[kind] = lambda root, cb: None
            else:
                w = _WALK[kind] = lambda root, cb: tvm_ffi.structural_walk(root, (cls, cb))
    return w


def global_var_names(obj) -> list:
    """The names of the GlobalVars the TVM object ``obj`` refers to (every occurrence, in walk
    order), found by tvm_ffi's compiled structural walk."""
    names = []
    _walker("GlobalVar")(obj, lambda gv: names.append(str(gv.name_hint)))
    return names


def _check_prim_func(func, name: str):
    """Raise :class:`TVMConversionError` for what memcore cannot read in the PrimFunc
    ``func``'s signature, although the signature is read on demand (``PrimFunc.lazy``): a
    variable of its parameters (a parameter, a dim of its buffer type) with an empty name,
    as a dim written ``T.int64()`` inside a parameter's ``T.Buffer`` has (memcore's IR names
    every symbolic variable; TVM's text names this one after its place in the whole module,
    a module ``v = TypeVar("v")``, ``v_1``, ..., which TVM's parser reads as a variable of
    that name: DIFFERENCES.md, the bridge, ``unnamed-tir-variable``); an attribute holding an
    integer beyond int64 (an ``ffi.BigInt``, which TVM's text spells as metadata:
    :func:`~memcore_py.tvm.values.from_tvm_value`). Both found by tvm_ffi's compiled walk of
    the parameters and the attrs, not of the body."""
    unnamed = []
    _walker("Var")(func.params, lambda v: None if str(v.name) else unnamed.append(v))
    if unnamed:
        raise TVMConversionError(
            f"a TIR variable with an empty name (in the parameters of PrimFunc {name!r}) is not modelled by "
            "memcore: it names every symbolic variable, and TVM's text names this one after its place in "
            "the module")
    attrs = func.attrs
    if attrs is not None:
        big = []
        _walker("ffi.BigInt")(attrs, big.append)
        if big:  # read through the Python API, which names the attribute in its refusal
            dict_attrs_from_tvm(attrs, f"PrimFunc {name!r}")
            raise TVMConversionError(f"integer {big[0]} in the attrs of PrimFunc {name!r} is beyond int64 (an "
                                     "ffi.BigInt), which memcore does not model")


class _TIRBody:
    """A TVM PrimFunc's body as ``PrimFunc.lazy`` views it: what the GlobalVars it refers to
    are named (tvm_ffi's compiled structural walk), and whether another TVM PrimFunc has the
    same decorator, parameters, body and return type (TVM's structural equality of the two
    functions without the attributes memcore compares itself), with no text printed."""

    __slots__ = ("func", "bare", "names")

    def __init__(self, func):
        self.func = func
        self.bare = None
        self.names = None

    def callees(self) -> list:
        if self.names is None:  # walked once: the text and DeadCodeElimination both ask
            self.names = global_var_names(self.func)
        return list(self.names)

    def _bare(self):
        """The function without the attributes memcore compares itself (those the decorator
        spells, ``s_tir``, stay: they are part of the text)."""
        if self.bare is None:
            f = self.func
            kept = {k: f.attrs[k] for k in _DECORATOR_ATTRS if k in f.attrs}
            attrs = tvm_api().ir.make_node("ir.DictAttrs", **kept) if kept else None
            self.bare = type(f)(f.params, f.body, f.ret_type, attrs)
        return self.bare

    def equal(self, other) -> bool:
        import tvm_ffi

        return type(other) is _TIRBody and tvm_ffi.structural_equal(self._bare(), other._bare())


#: The names TVM's printer defines before a function's own (``PrinterConfig::GetBuiltinKeywords``:
#: the ``I``, ``T`` and ``R`` prefixes and the module alias ``cls``).
PRINTER_KEYWORDS = ("I", "T", "R", "cls")


def printed_param_names(names) -> list:
    """The names TVM's printer gives PrimFunc parameters named ``names`` (in order), as
    memcore's parser reads them back from its text: each non-alphanumeric byte made ``_``,
    then ``_1``, ``_2``, ... appended until the name differs from :data:`PRINTER_KEYWORDS`
    and the earlier parameters' (``GenerateUniqueName``, src/script/printer/utils.h): a
    parameter named ``I`` is printed ``I_1``."""
    defined = set(PRINTER_KEYWORDS)
    out = []
    for name in names:
        hint = "".join(c if c == "_" or (c.isascii() and c.isalnum()) else "_" * len(c.encode("utf-8"))
                       for c in name)
        printed, i = hint, 1
        while printed in defined:
            printed = f"{hint}_{i}"
            i += 1
        defined.add(printed)
        out.append(printed)
    return out


class _PrimFuncSignature:
    """Loader of a TVM PrimFunc's memcore fields (``PrimFunc.lazy``): params from the
    parameter vars' buffer types, attrs without decorator keywords and ``private`` when there
    is no ``global_symbol`` first; the text TVM prints for it (decorator to last line) when it
    is first read (:meth:`text`)."""

    __slots__ = ("func", "name", "body")

    def __init__(self, func, name, body):
        self.func = func
        self.name = name
        self.body = body  # the function's _TIRBody

    def __call__(self):
        api = tvm_api()
        reader = _Reader.__new__(_Reader)
        reader.api = api
        reader.dtypes = {}
        reader.prims = {}
        reader.ints = {}
        reader.keep = []
        reader.binary = _binary_classes(api)
        reader.layout = None
        reader.where = f"PrimFunc {self.name!r}"
        reader.record = None
        params = []
        tvm_params = list(self.func.params)
        for p, name in zip(tvm_params, printed_param_names([str(p.name) for p in tvm_params])):
            ty = p.ty
            if type(ty) is api.PrimType:
                params.append(PrimFuncParam(name, reader.dtype(ty), None))
            elif hasattr(ty, "shape") and hasattr(ty, "dtype"):
                params.append(PrimFuncParam(name, reader.dtype(ty.dtype), tuple(reader.prim(d) for d in ty.shape)))
            else:
                params.append(PrimFuncParam(name, "handle", None))
        attrs = dict_attrs_from_tvm(self.func.attrs, reader.where)
        private = "global_symbol" not in attrs
        for k in _DECORATOR_ATTRS:
            attrs.pop(k, None)
        if attrs.get("global_symbol") == self.name:  # implied by the name (TVM does not print it)
            del attrs["global_symbol"]
        return params, attrs, PrimFunc.TEXT_LATER, private

    def text(self, params, attrs, private):
        return _prim_func_text(self.func, self.name, params, attrs, private, self.body)


def _prim_func_text(func, name, params, attrs, private, body):
    """The PrimFunc's TVMScript as memcore's parser keeps it: TVM's printed text from the
    decorator to the last line, named ``name``; None when that is exactly the
    signature-only form (``prim_func_text.read_prim_func``'s rule)."""
    from ..ir.text.prim_func_text import renamed_text, signature_only_text, synced_text

    lines = func.script().split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.startswith("@")), 0)
    # TVM prints a function alone without the attrs its module context implies (e.g. a
    # global_symbol other than its name): sync the text with the attrs read from the object
    text = synced_text(renamed_text("\n".join(lines[start:]).rstrip("\n") + "\n", name), attrs, private)
    # and a call of another module function bare (``f(x)``), where the module's text (what
    # memcore's parser keeps) spells it through the module's class (``Module.f(x)``)
    for callee in dict.fromkeys(body.callees()):
        text = re.sub(rf"(?<![\w.]){re.escape(callee)}\(", f"Module.{callee}(", text)
    if text.endswith("T.evaluate(0)\n") and text == signature_only_text(name, PrimFunc(params, attrs, None, private)):
        return None
    return text


def from_tvm(tvm_mod) -> IRModule:
    """Convert a ``tvm.IRModule`` into a memcore :class:`~memcore_py.ir.IRModule`.

    Objects are read through TVM's Python API (no TVMScript text); PrimFuncs are carried as
    the TVM objects themselves (``PrimFunc.source``) with their signature read on demand.

    Parameters
    ----------
    tvm_mod : tvm.IRModule

    Returns
    -------
    IRModule
        Structurally equal to ``memcore_py.parse(tvm_mod.script())``.

    Raises
    ------
    TVMConversionError
        (an :class:`~memcore_py.errors.IRError`) for anything memcore does not model, naming
        it and the function it is in; for an expression nested deeper than Python's recursion
        limit lets the reader follow (the reader recurses into nested expressions, as
        memcore's parser and printer do).
    """
    api = tvm_api()
    if not isinstance(tvm_mod, api.IRModule):
        raise TVMConversionError(f"from_tvm takes a tvm.IRModule; got {type(tvm_mod).__name__}")
    reader = _Reader(api, tvm_mod)
    with gc_paused():
        try:
            return reader.module(tvm_mod)
        except RecursionError:
            where = reader.where
        raise TVMConversionError(
            f"an expression in {where} is nested too deeply for memcore (deeper than Python's recursion "
            f"limit, {sys.getrecursionlimit()}, lets the reader follow)"
        )

