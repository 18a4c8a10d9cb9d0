"""TVMScript printer: memcore IR -> text that Apache TVM 0.27's parser accepts.

Design
------
The output imitates what TVM 0.27.0.post1 itself prints (``IRModule.script()``), so a module
printed here and a module printed by TVM differ only where TVM's own text would not parse
back, or would lose information. Layout::

    # from typing import TypeVar                      (only when TypeVars are printed)
    # from tvm.script import ir as I
    # from tvm.script import tirx as T                (when T. is used)
    # from tvm.tirx.layout import Axis
    # from tvm.script import relax as R

    n = TypeVar("n")                                  symbolic vars of function signatures
    @I.ir_module
    class Module:
        I.module_attrs({...})                         (when present)
        I.module_global_infos({...})
        @T.prim_func(private=True, s_tir=True)        PrimFuncs first, by name: their text
        def add(...): <opaque text>                   as read (or a signature-only form)

        @R.function(pure=False, private=True)         then Relax functions by name, main last
        def main(x: R.Tensor((n, 4), dtype="float32")) -> R.Tensor((n, 4), dtype="float32"):
            R.func_attr({...})                        attrs, sorted; global_symbol hidden
            k = T.int64()                             symbolic vars only used in the body
            cls = Module                              when a GlobalVar is referenced
            alloc: R.Tensor((n, 4), dtype="float32") = R.builtin.alloc_tensor(...)
            cls.add(x, x, alloc)                      a void binding no one uses: hidden
            with R.dataflow():
                lv = R.call_tir(cls.f, (x,), out_ty=R.Tensor((n, 4), dtype="float32"))
                R.output(lv)
            if c:
                r: T = <then result>
            else:
                r: T = <else result>
            return (a, b)

Node mapping (the inverse of :mod:`memcore_py.ir.text.parser`; see its docstring for the full
table): ``Call(op relax.call_tir, (gv, Tuple), ty_args=(T,))`` prints
``R.call_tir(cls.gv, (..), out_ty=T)`` (a TupleType output prints as a list); ``Call`` whose
callee is an :class:`ExternFunc` prints ``R.call_packed("sym", ..., ty_args=(T,))``; a
GlobalVar callee prints ``cls.f(..)``; ``R.builtin.alloc_tensor`` is printed *without* its
``ty_args`` (TVM prints them, but its parser rejects them; the parser re-derives them);
``PrimValue`` prints as the bare expression (``0``, ``n + 1``; ``T.int32(4)`` for
non-int64 literals, where TVM's own ``4`` would lose the dtype); a scalar ``Constant``
prints ``R.const(1.5, "float32")`` (non-finite: ``R.const(float("-inf"), "float32")``,
where TVM prints ``R.const("-inf", ...)`` that its parser rejects); a tensor constant read
as a metadata reference prints that reference back, one with data prints as a nested
list ``R.const([[1.0, 2.0]], "float32")`` (TVM accepts it); ``ObjectType`` is ``R.Any``.
A call of an op with a schema (every high-level op) prints its arguments positionally and then
*every* attribute in TVM's order, defaults included (``R.nn.conv2d(x, w, strides=[1, 1], ...,
out_dtype=None)``), as TVM does; ``double`` attributes, float constants and ``FloatImm``
values are written with TVM's 17 significant digits (``epsilon=1.0000000000000001e-05``), so
the importer's text of a real model prints back byte for byte.

A PrimFunc read from text is printed from that text, except that its decorator's
``private=`` and its ``T.func_attr`` line are made to agree with the node (a pass may have
changed ``attrs``, e.g. ``layout_free_buffers``); a signature-only PrimFunc (``text`` None)
prints its signature, ``T.func_attr`` and ``T.evaluate(0)``, which the parser reads back as
signature-only. All of that, and the TVMScript spelling of PrimExprs and attribute values,
is :mod:`memcore_py.ir.text.prim_func_text`; this module does not import the parser.

Where TVM 0.27 differs and why
------------------------------
- ``ty_args=`` on ``R.builtin.alloc_tensor``: omitted (TVM's parser fails on it).
- Non-finite scalar constants: ``float("inf")`` form (TVM's ``"inf"`` string fails).
- Module ``TypeVar`` lines are printed like TVM for signature vars, but a body-only symbolic
  var whose name is also a module TypeVar cannot be declared with ``T.int64()`` (TVM's
  parser: "Cannot redefine a non-PrimType object"); such a var is printed renamed
  (``n_1``) in that function. TVM prints the failing form.
- Non-int64 literals in Relax expressions keep their dtype (``T.int32(4)``), unless the
  other operand of their node gives it (``T.Cast("int32", n) < 3``, printed as TVM prints it).
- A comparison whose operand is a comparison prints as TVM prints it (``s < 0 == (n > 2)``),
  which Python, and both parsers, read as a chained comparison.
- A PrimValue argument of a call to a module function or a function value prints as
  ``R.prim_value(3)``: TVM prints ``cls.f(x, 3)``, which its parser rejects.
- A Prim type inside ``R.Tuple(...)``/``R.Callable(...)`` prints ``R.Prim("int64")``: TVM
  prints ``T.int64`` there, which its parser evaluates as a call and rejects.
- A ``call_tir`` with a third (``tir_vars``) argument prints ``tir_vars=R.shape([...])``,
  which TVM 0.27 no longer accepts (its ``call_tir`` passes symbolic args in the tuple).
- An ``IntImm`` attribute value prints as ``T.int64(128)`` (TVM: ``128``), so it reads
  back as an IntImm and not as a Python int.
- TVM's ``I.StringType()`` (the type of ``R.str`` values) has no memcore counterpart; the
  parser reads it as ``ObjectType``, printed ``R.Any``.

Binding annotations follow TVM: every binding is annotated with its var's type except a
void binding (type ``R.Tuple()``) whose var is never used (printed as an expression
statement), and ``R.call_tir``/``R.call_dps_packed`` results whose type equals the
``out_ty`` (TVM elides those). A var without a type prints without annotation.

Performance
-----------
One list of lines per function joined once; no recursion per binding (blocks are walked
with loops; expressions recurse only through their own nesting). Type strings are cached
per Type object (types are shared, the parser interns them), PrimExpr printing has an
``IntImm`` fast path, and expression printing dispatches on ``type(e)`` through a dict.
Unused void vars are detected without a pre-pass: their binding line is printed hidden and
rewritten if a later use appears. The cyclic GC is paused while printing (speed against
TVM's printer: bench/README.md, "IR text").
"""
from __future__ import annotations


from ...errors import IRError
from .._util import gc_paused
from ..expr import (
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    PrimFunc,
    PrimValue,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
)
from ..module import IRModule
from ..op import Op
from ..op_schema import format_float_attr
from ..ops import builtin_alloc_own_type
from ..prim import FloatImm, IntImm, PrimVar
from .prim_func_text import (
    RESERVED_NAMES,
    format_attr_dict,
    format_attr_value,
    format_prim,
    identifier as _ident,
    renamed_text,
    signature_only_text,
    signature_typevars,
    str_literal as _str_lit,
    synced_text,
)
from ..types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type, type_equal

__all__ = ["script", "format_binding", "format_expr", "format_type", "format_prim"]

_INDENT = "    "

#: Names the printed text itself uses; a Relax var with one of these names is renamed, a
#: symbolic var too (see :meth:`_ScriptPrinter.relax_function`).
_RESERVED = RESERVED_NAMES

#: Ops printed as ``R.<name>(gv_or_symbol, (args), out_ty=...)``.
_DPS_OPS = frozenset({"relax.call_tir", "relax.call_tir_inplace", "relax.call_tir_with_grad", "relax.call_dps_packed"})
#: Ops whose binding annotation TVM elides when the var's type is the output type.
_ELIDE_ANNOTATION_OPS = frozenset({"relax.call_tir", "relax.call_dps_packed"})
#: Ops printed as ``R.<name>("symbol", args..., attrs, ty_args=(...))``.
_PACKED_OPS = frozenset({"relax.call_pure_packed", "relax.call_inplace_packed"})
#: Ops whose TVMScript wrapper does not accept ``ty_args`` (the parser re-derives them).
_NO_TY_ARGS_OPS = frozenset({"relax.builtin.alloc_tensor"})


def _float_imm(p) -> str:
    """A FloatImm as TVM prints it: ``T.float32(0.54000000000000004)`` (17 digits)."""
    return f"T.{p.dtype}({format_float_attr(p.value)})"


def _prim_names(e, out: dict) -> None:
    """Collect PrimVar name -> dtype of ``e`` into ``out`` (first occurrence order)."""
    stack = [e]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is PrimVar:
            if x.name not in out:
                out[x.name] = x.dtype
        else:
            stack.extend(reversed(x.operands))


def _type_prim_names(ty, out: dict) -> None:
    """PrimVar names (-> dtype) used in a type, in first-occurrence order."""
    if ty is None:
        return
    t = type(ty)
    if t is TensorType:
        if ty.shape is not None:
            for d in ty.shape:
                if type(d) is not IntImm:
                    _prim_names(d, out)
    elif t is TupleType:
        for f in ty.fields:
            _type_prim_names(f, out)
    elif t is ShapeType:
        if ty.values is not None:
            for d in ty.values:
                if type(d) is not IntImm:
                    _prim_names(d, out)
    elif t is PrimType:
        if ty.value is not None:
            _prim_names(ty.value, out)
    elif t is FuncType:
        for p in ty.params or ():
            _type_prim_names(p, out)
        _type_prim_names(ty.ret, out)


# ------------------------------------------------------------------------------ types
class _TypePrinter:
    """Formats types; caches ``(type, text, symbolic names)`` per Type object (and per
    signature/body mode)."""

    __slots__ = ("cache", "sig_cache", "rename")

    def __init__(self, rename=None):
        self.cache = {}
        self.sig_cache = {}
        self.rename = rename

    def entry(self, ty):
        """``(ty, text, prims)``; ``prims`` is a dict name -> dtype or None."""
        hit = self.cache.get(id(ty))
        if hit is not None and hit[0] is ty:
            return hit
        prims = {}
        _type_prim_names(ty, prims)
        hit = (ty, self._fmt(ty, False), prims or None)
        self.cache[id(ty)] = hit
        return hit

    def fmt(self, ty) -> str:
        hit = self.cache.get(id(ty))
        if hit is not None and hit[0] is ty:
            return hit[1]
        return self.entry(ty)[1]

    def fmt_sig(self, ty) -> str:
        """Signature spelling: compound dims are quoted (``R.Tensor(("n * 2", 4))``), as TVM."""
        hit = self.sig_cache.get(id(ty))
        if hit is not None and hit[0] is ty:
            return hit[1]
        s = self._fmt(ty, True)
        self.sig_cache[id(ty)] = (ty, s)
        return s

    def _dim(self, d, sig):
        t = type(d)
        if t is IntImm and d.dtype == "int64":
            return str(d.value)
        s = format_prim(d, False, self.rename)
        if sig and t is not PrimVar:
            return _str_lit(s)
        return s

    def _dims(self, dims, sig, brackets):
        parts = [self._dim(d, sig) for d in dims]
        if brackets:
            return "[" + ", ".join(parts) + "]"
        if len(parts) == 1:
            return "(" + parts[0] + ",)"
        return "(" + ", ".join(parts) + ")"

    def _nested(self, ty, sig):
        """A type inside ``R.Tuple``/``R.Callable``: TVM evaluates a nested ``T.int64`` as a
        call (and fails on its own output), so Prim types print as ``R.Prim("int64")``."""
        if type(ty) is PrimType:
            return f'R.Prim("{ty.dtype}")'
        return self._fmt(ty, sig)

    def _fmt(self, ty, sig):
        t = type(ty)
        if t is TensorType:
            parts = []
            if ty.shape is not None:
                parts.append(self._dims(ty.shape, sig, False))
            if ty.dtype:
                parts.append(f'dtype="{ty.dtype}"')
            if ty.shape is None and ty.ndim != -1:
                parts.append(f"ndim={ty.ndim}")
            if ty.vdevice:
                parts.append(f"vdevice={_str_lit(ty.vdevice)}")
            return "R.Tensor(" + ", ".join(parts) + ")" if parts else "R.Tensor"
        if t is TupleType:
            if not ty.fields:
                return "R.Tuple"
            return "R.Tuple(" + ", ".join(self._nested(f, sig) for f in ty.fields) + ")"
        if t is ObjectType:
            return "R.Any"
        if t is ShapeType:
            if ty.values is not None:
                return "R.Shape(" + self._dims(ty.values, sig, True) + ")"
            return f"R.Shape(ndim={ty.ndim})"
        if t is PrimType:
            return f"T.{ty.dtype}"
        if t is FuncType:
            if ty.params is None:
                return "R.Callable"
            params = ", ".join(self._nested(p, sig) for p in ty.params)
            if len(ty.params) == 1:
                params += ","
            ret = self._nested(ty.ret, sig) if ty.ret is not None else "R.Any"
            return f"R.Callable(({params}), {ret}, {bool(ty.purity)})"
        if ty is None:
            raise IRError("printer: missing type")
        raise IRError(f"printer: unsupported type {ty!r}")


def format_type(ty: Type) -> str:
    """TVMScript annotation text of a type (``R.Tensor((2, 3), dtype="float32")``)."""
    return _TypePrinter().fmt(ty)


# ------------------------------------------------------------------------------ attrs
def _type_text(v):
    """Attribute values outside the literal spelling of :func:`format_attr_value`: types."""
    return format_type(v) if isinstance(v, Type) else None


def _sort_key(item):
    gv, func = item
    return (not isinstance(func, PrimFunc), gv.name == "main", gv.name)


# ------------------------------------------------------------------------------ functions
class _FunctionPrinter:
    """Prints one Relax function; state: var names, referenced flags, symbolic names."""

    def __init__(self, tp: _TypePrinter, reserved, prim_rename=None):
        self.tp = tp
        self.names = {}
        self.used = set(reserved)
        self.counters = {}
        self.uses_cls = False
        self.void_pending = {}  # void var -> (lines list, index, statement text, indent, ty)
        self.prim_rename = prim_rename
        self.body_prims = {}
        self.binding_ty = None  # (value, var type) of the binding being printed
        self._expr_table = {
            Var: self._var,
            DataflowVar: self._var,
            Call: self._call,
            Tuple: self._tuple,
            TupleGetItem: self._get_item,
            ShapeExpr: self._shape,
            PrimValue: self._prim_value,
            StringImm: self._string,
            DataTypeImm: self._dtype,
            Constant: self._constant,
            GlobalVar: self._global_var,
            ExternFunc: self._extern,
        }

    # ---------------------------------------------------------------- names
    def fresh(self, hint: str) -> str:
        name = _ident(hint)
        used = self.used
        if name not in used:
            used.add(name)
            return name
        k = self.counters.get(name, 0)
        while True:
            k += 1
            cand = f"{name}_{k}"
            if cand not in used:
                break
        self.counters[name] = k
        used.add(cand)
        return cand

    def define(self, var) -> str:
        name = self.fresh(var.name)
        self.names[var] = name
        return name

    # ---------------------------------------------------------------- types
    def type_str(self, ty) -> str:
        """Annotation text of ``ty``; records the symbolic vars it uses."""
        hit = self.tp.cache.get(id(ty))
        if hit is None or hit[0] is not ty:
            hit = self.tp.entry(ty)
        if hit[2] is not None:
            self.body_prims.update(hit[2])
        return hit[1]

    # ---------------------------------------------------------------- expressions
    def expr(self, e) -> str:
        fn = self._expr_table.get(type(e))
        if fn is None:
            if isinstance(e, Var):
                return self._var(e)
            raise IRError(f"printer: cannot print a {type(e).__name__} as a Relax expression")
        return fn(e)

    def _var(self, v) -> str:
        name = self.names.get(v)
        if name is None:
            pending = self.void_pending.pop(v, None)
            if pending is not None:
                return self._reveal(v, pending)
            # a free var (printing a lone binding or expression): use its own name
            name = self.define(v)
        return name

    def _reveal(self, v, pending) -> str:
        """A hidden void binding turned out to be used: print it as a named binding."""
        lines, index, stmt, indent, ty = pending
        name = self.define(v)
        lines[index] = f"{indent}{name}: {self.type_str(ty)} = {stmt}"
        return name

    def _global_var(self, gv) -> str:
        self.uses_cls = True
        return "cls." + _ident(gv.name)

    def _extern(self, e) -> str:
        return f"R.ExternFunc({_str_lit(e.global_symbol)})"

    def _string(self, e) -> str:
        return f"R.str({_str_lit(e.value)})"

    def _dtype(self, e) -> str:
        return f'R.dtype("{e.value}")'

    def _prim(self, p) -> str:
        if type(p) is IntImm and p.dtype == "int64":
            return str(p.value)
        if type(p) is FloatImm:
            return _float_imm(p)
        if type(p) is not IntImm and type(p) is not FloatImm:
            _prim_names(p, self.body_prims)
        return format_prim(p, False, self.prim_rename)

    def _prim_value(self, e) -> str:
        return self._prim(e.value)

    def _shape(self, e) -> str:
        vals = e.values
        parts = []
        for d in vals:
            if type(d) is IntImm and d.dtype == "int64":
                parts.append(str(d.value))
            else:
                parts.append(self._prim(d))
        return "R.shape([" + ", ".join(parts) + "])"

    def _tuple(self, e) -> str:
        fields = e.fields
        if not fields:
            return "R.tuple()"
        expr = self.expr
        if len(fields) == 1:
            return "(" + expr(fields[0]) + ",)"
        return "(" + ", ".join([expr(f) for f in fields]) + ")"

    def _tuple_bare(self, e) -> str:
        """A tuple as a binding value or branch result: no parentheses (TVM)."""
        fields = e.fields
        if len(fields) < 2:
            return self._tuple(e)
        expr = self.expr
        return ", ".join([expr(f) for f in fields])

    def _get_item(self, e) -> str:
        return f"{self.expr(e.tuple_value)}[{e.index}]"

    def _constant(self, c) -> str:
        if c.meta is not None:
            key, index = c.meta
            return f"metadata[{_str_lit(key)}][{index}]"
        data = c.data
        dtype = str(data.dtype)
        if data.ndim == 0:
            return f'R.const({_scalar_lit(data.item())}, "{dtype}")'
        return f'R.const({_nested_lit(data.tolist())}, "{dtype}")'

    def _args(self, args) -> list:
        expr = self.expr
        return [expr(a) for a in args]

    def _attrs(self, call, op=None) -> list:
        attrs = call.attrs
        if not attrs:
            return []
        order = list(op.attr_names) if op is not None else []
        keys = [k for k in order if k in attrs] + [k for k in attrs if k not in order]
        hook = self._attr_text
        return [f"{k}={format_attr_value(attrs[k], hook)}" for k in keys]

    def _attr_text(self, v):
        """Attribute values outside the literal spelling: types and Relax expressions."""
        if isinstance(v, Type):
            return format_type(v)
        if isinstance(v, Expr):
            return self.expr(v)
        return None

    def _ty_args(self, call) -> list:
        ty_args = call.ty_args
        if not ty_args:
            return []
        parts = [self.type_str(t) for t in ty_args]
        if len(parts) == 1:
            return ["ty_args=(" + parts[0] + ",)"]
        return ["ty_args=(" + ", ".join(parts) + ")"]

    def _ty_args_implied(self, call) -> bool:
        """Whether the parser gives ``R.builtin.alloc_tensor``'s ``ty_args`` back without
        them being written (TVM's parser refuses them): they are the binding's annotation
        (the call is a binding's whole value, :attr:`binding_ty`) or the arguments' own
        tensor type. Otherwise they are written, and memcore reads them back."""
        ty_args = call.ty_args
        if not ty_args:
            return True
        if len(ty_args) != 1:
            return False
        bound = self.binding_ty
        if bound is not None and bound[0] is call and type(bound[1]) is TensorType:
            return type_equal(ty_args[0], bound[1])
        args = call.args
        return len(args) >= 2 and type_equal(ty_args[0], builtin_alloc_own_type(args[0], args[1]))

    def _call(self, call) -> str:
        op = call.op
        top = type(op)
        if top is Op:
            name = op.name
            if name in _DPS_OPS:
                return self._dps_call(call, op)
            if name in _PACKED_OPS:
                return self._packed_op_call(call, op)
            if name == "relax.assert_op" and len(call.args) >= 2:
                # stored (cond, format, *format_args); written with format as a keyword
                parts = self._args((call.args[0],) + tuple(call.args[2:]))
                return "R.assert_op(" + ", ".join(parts + [f"format={self.expr(call.args[1])}"]) + ")"
            if op.schema is not None:
                return self._schema_call(call, op)
            parts = self._args(call.args)
            parts += self._attrs(call, op)
            if name not in _NO_TY_ARGS_OPS or not self._ty_args_implied(call):
                parts += self._ty_args(call)
            return f"{op.script_name}(" + ", ".join(parts) + ")"
        if top is GlobalVar:
            self.uses_cls = True
            return "cls." + _ident(op.name) + "(" + ", ".join(self._callee_args(call.args)) + ")"
        if top is ExternFunc:
            parts = [_str_lit(op.global_symbol)] + self._args(call.args)
            parts += self._attrs(call)
            parts += self._ty_args(call)
            return "R.call_packed(" + ", ".join(parts) + ")"
        return self.expr(op) + "(" + ", ".join(self._callee_args(call.args)) + ")"

    def _schema_call(self, call, op) -> str:
        """A call of an op with a schema: arguments positionally, then every attribute in
        TVM's order (defaults filled), ``double`` attributes with TVM's 17 digits; a bool
        scalar argument bare (``True``), as TVM prints an op's arguments."""
        parts = [
            str(bool(a.value.value))
            if type(a) is PrimValue and type(a.value) is IntImm and a.value.dtype == "bool"
            else p
            for a, p in zip(call.args, self._args(call.args))
        ]
        attrs = op.complete_attrs(call.attrs, call.args)
        hook = self._attr_text
        for a in op.schema.attrs:
            v = attrs[a.name]
            if a.kind == "float" and type(v) is float:
                parts.append(f"{a.name}={format_float_attr(v)}")
            elif type(v) is FloatImm:
                parts.append(f"{a.name}={_float_imm(v)}")
            elif a.kind == "fimms" and type(v) is tuple and all(type(x) is FloatImm for x in v):
                parts.append(f"{a.name}=[" + ", ".join(_float_imm(x) for x in v) + "]")
            else:
                parts.append(f"{a.name}={format_attr_value(v, hook)}")
        parts += self._ty_args(call)
        return f"{op.script_name}(" + ", ".join(parts) + ")"

    def _callee_args(self, args) -> list:
        """Arguments of a call to a function value: TVM's parser does not convert plain
        numbers there (it fails on its own ``cls.f(x, 3)``), so PrimValues are explicit."""
        expr = self.expr
        return [expr(a) if type(a) is not PrimValue else f"R.prim_value({self._prim(a.value)})" for a in args]

    def _callee_text(self, e) -> str:
        if type(e) is ExternFunc:
            return _str_lit(e.global_symbol)
        return self.expr(e)

    def _dps_call(self, call, op) -> str:
        args = call.args
        if len(args) < 2:
            raise IRError(f"printer: {op.name} needs a callee and an argument tuple; got {len(args)} arguments")
        parts = [self._callee_text(args[0])]
        inner = args[1]
        parts.append(self._tuple(inner) if type(inner) is Tuple else self.expr(inner))
        if call.ty_args:
            out = call.ty_args[0]
            if type(out) is TupleType and len(call.ty_args) == 1:
                text = "[" + ", ".join(self.type_str(f) for f in out.fields) + "]"
            elif len(call.ty_args) == 1:
                text = self.type_str(out)
            else:
                text = "[" + ", ".join(self.type_str(f) for f in call.ty_args) + "]"
            parts.append("out_ty=" + text)
        parts += self._attrs(call, op)
        if len(args) > 2:
            parts.append("tir_vars=" + self.expr(args[2]))
        return f"{op.script_name}(" + ", ".join(parts) + ")"

    def _packed_op_call(self, call, op) -> str:
        args = call.args
        if not args:
            raise IRError(f"printer: {op.name} needs a callee argument")
        parts = [self._callee_text(args[0])] + self._args(args[1:])
        parts += self._attrs(call, op)
        parts += self._ty_args(call)
        return f"{op.script_name}(" + ", ".join(parts) + ")"

    # ---------------------------------------------------------------- bindings
    def seq(self, seq, lines, indent, result_name=None, result_ty=None):
        """Print the blocks of ``seq``; then ``return body`` or (in a branch) the result line."""
        for block in seq.blocks:
            if type(block) is DataflowBlock:
                lines.append(indent + "with R.dataflow():")
                inner = indent + _INDENT
                self.bindings(block.bindings, lines, inner)
                outs = [self.names[b.var] for b in block.bindings if type(b.var) is Var and b.var in self.names]
                lines.append(inner + "R.output(" + ", ".join(outs) + ")")
            else:
                self.bindings(block.bindings, lines, indent)
        body = seq.body
        if result_name is None:
            text = self._tuple(body) if type(body) is Tuple else self.expr(body)
            lines.append(f"{indent}return {text}")
        else:
            text = self._tuple_bare(body) if type(body) is Tuple else self.expr(body)
            if result_ty is None:
                lines.append(f"{indent}{result_name} = {text}")
            else:
                lines.append(f"{indent}{result_name}: {self.type_str(result_ty)} = {text}")

    def bindings(self, bindings, lines, indent):
        expr = self.expr
        names = self.names
        type_str = self.type_str
        fresh = self.fresh
        append = lines.append
        for b in bindings:
            var = b.var
            value = b.value
            vt = var.ty
            tb = type(b)
            if tb is MatchCast:
                text = f"R.match_cast({expr(value)}, {type_str(b.ty)})"
                name = fresh(var.name)
                names[var] = name
                append(f"{indent}{name}: {type_str(b.ty)} = {text}")
                continue
            if tb is not VarBinding:
                raise IRError(f"printer: unsupported binding {type(b).__name__}")
            tv = type(value)
            if tv is If:
                self._if(var, value, lines, indent)
                continue
            if tv is Tuple:
                text = self._tuple_bare(value)
            elif (
                tv is PrimValue
                and type(vt) is PrimType
                and type(value.value) is IntImm
                and value.value.dtype == vt.dtype
            ):
                text = str(value.value.value) if vt.dtype != "bool" else str(bool(value.value.value))
            elif tv is PrimValue and vt is None and type(value.value) in (IntImm, FloatImm):
                text = f"R.prim_value({self._prim(value.value)})"
            else:
                self.binding_ty = (value, vt)
                text = expr(value)
                self.binding_ty = None
            if vt is None:
                name = fresh(var.name)
                names[var] = name
                append(f"{indent}{name} = {text}")
                continue
            if type(vt) is TupleType and not vt.fields:
                # void: hidden unless a later binding uses it
                self.void_pending[var] = (lines, len(lines), text, indent, vt)
                append(indent + text)
                continue
            ts = type_str(vt)
            name = fresh(var.name)
            names[var] = name
            if tv is Call and type(value.op) is Op and value.op.name in _ELIDE_ANNOTATION_OPS and value.ty_args:
                if ts == self._dps_out_str(value):
                    append(f"{indent}{name} = {text}")
                    continue
            append(f"{indent}{name}: {ts} = {text}")

    def _dps_out_str(self, call) -> str:
        ty_args = call.ty_args
        if len(ty_args) == 1:
            return self.type_str(ty_args[0])
        return "R.Tuple(" + ", ".join(self.type_str(t) for t in ty_args) + ")"

    def _if(self, var, value, lines, indent):
        cond = self.expr(value.cond)
        lines.append(f"{indent}if {cond}:")
        name = self.fresh(var.name)
        inner = indent + _INDENT
        vt = var.ty
        self.seq(value.true_branch, lines, inner, name, vt)
        lines.append(f"{indent}else:")
        self.seq(value.false_branch, lines, inner, name, vt)
        self.names[var] = name


def _scalar_lit(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float_attr(v)  # TVM's 17 significant digits
    if isinstance(v, complex):
        raise IRError(f"printer: complex constants are not supported; got {v!r}")
    return repr(v)


def _nested_lit(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_nested_lit(x) for x in v) + "]"
    return _scalar_lit(v)


# ------------------------------------------------------------------------------ module
class _ModulePrinter:
    def __init__(self, module_name="Module"):
        self.module_name = module_name
        self.tp = _TypePrinter()

    # ---------------------------------------------------------------- signatures
    def _signature_prims(self, func) -> dict:
        names = {}
        if isinstance(func, Function):
            for p in func.params:
                _type_prim_names(p.ty, names)
            _type_prim_names(_ret_type(func), names)
        elif isinstance(func, PrimFunc):
            if func.text is not None:
                for n in signature_typevars(func.text):
                    names.setdefault(n, "int64")
            else:
                for p in func.params:
                    for d in p.shape or ():
                        _prim_names(d, names)
        return names

    def relax_function(self, name, func, typevars, indent):
        """Lines of a Relax function (decorator first), at ``indent``."""
        sig_prims = self._signature_prims(func)
        reserved = _RESERVED | set(typevars) | set(sig_prims) | {self.module_name}
        inner = indent + _INDENT
        fp, params, body_lines = self._print_body(name, func, self.tp, reserved, None, inner)
        decls = {n: dt for n, dt in fp.body_prims.items() if n not in sig_prims}
        # A body-only symbolic var named like a module TypeVar cannot be declared in TVM
        # (``n = T.int64()`` fails); nor can one named like a Relax var of the function.
        # Such vars are printed renamed (rare; see the module doc).
        relax_names = set(fp.names.values())
        clashes = [n for n in decls if n in typevars or n in relax_names or n in _RESERVED or n == self.module_name]
        bad = [n for n in sig_prims if n in _RESERVED]
        if bad:
            # a signature symbolic var is a module-level TypeVar: renaming it would rename it
            # in PrimFunc texts too; the parser refuses such names, so only built IR gets here
            raise IRError(
                f"printer: symbolic var {bad[0]!r} in the signature of function {name!r} has a name the "
                f"printed text uses itself ({bad[0]} = TypeVar(...) would shadow it); rename it"
            )
        if clashes:
            rename = {}
            taken = set(typevars) | set(sig_prims) | set(decls) | relax_names
            for n in clashes:
                k = 1
                while f"{n}_{k}" in taken:
                    k += 1
                rename[n] = f"{n}_{k}"
                taken.add(rename[n])
            reserved = reserved | set(rename.values())
            fp, params, body_lines = self._print_body(name, func, _TypePrinter(rename), reserved, rename, inner)
            decls = {rename.get(n, n): dt for n, dt in fp.body_prims.items() if n not in sig_prims}
        out = []
        flags = []
        if not func.is_pure:
            flags.append("pure=False")
        if "global_symbol" not in func.attrs:
            flags.append("private=True")
        out.append(indent + ("@R.function(" + ", ".join(flags) + ")" if flags else "@R.function"))
        ret = _ret_type(func)
        head = f"{indent}def {_ident(name)}(" + ", ".join(params) + ")"
        if ret is not None:
            head += " -> " + self.tp.fmt_sig(ret)
        out.append(head + ":")
        attrs = func.attrs
        skip = ("global_symbol",) if attrs.get("global_symbol") == name else ()
        if any(k not in skip for k in attrs):
            out.append(f"{inner}R.func_attr({format_attr_dict(attrs, fp._attr_text, skip)})")
        for n, dt in decls.items():
            out.append(f"{inner}{n} = T.{dt}()")
        if fp.uses_cls:
            out.append(f"{inner}cls = {self.module_name}")
        out.extend(body_lines)
        return out

    def _print_body(self, name, func, tp, reserved, rename, inner):
        fp = _FunctionPrinter(tp, reserved, rename)
        params = []
        for p in func.params:
            pname = fp.define(p)
            if p.ty is None:
                raise IRError(f"printer: parameter {p.name!r} of function {name!r} has no type")
            params.append(f"{pname}: {self.tp.fmt_sig(p.ty)}")
        body_lines = []
        fp.seq(func.body, body_lines, inner)
        return fp, params, body_lines

    def prim_function(self, name, func, indent):
        """Lines of a PrimFunc at ``indent``: its text renamed to ``name`` and synced with its
        attrs and ``private``, or its signature-only form (:mod:`~memcore_py.ir.text.prim_func_text`)."""
        if func.text is None:
            text = signature_only_text(name, func)
        else:
            text = synced_text(renamed_text(func.text, name), func.attrs, func.private)
        return [indent + line if line.strip() else "" for line in text.rstrip("\n").split("\n")]

    def module(self, mod: IRModule, sort_functions=True) -> str:
        items = list(mod.functions.items())
        if sort_functions:
            items.sort(key=_sort_key)
        typevars = {}
        for _gv, func in items:
            for n in sorted(self._signature_prims(func)):  # TVM's order
                typevars.setdefault(n, None)
        body = [f"class {self.module_name}:"]
        ind = _INDENT
        if mod.attrs:
            body.append(f"{ind}I.module_attrs({format_attr_dict(mod.attrs, _type_text)})")
        if mod.global_infos:
            body.append(f"{ind}I.module_global_infos({format_attr_dict(mod.global_infos, _type_text)})")
        first = True
        for gv, func in items:
            if not first:
                body.append("")
            first = False
            if isinstance(func, PrimFunc):
                body.extend(self.prim_function(gv.name, func, ind))
            elif isinstance(func, Function):
                body.extend(self.relax_function(gv.name, func, typevars, ind))
            else:
                raise IRError(f"printer: cannot print function {gv.name!r} of type {type(func).__name__}")
        if len(body) == 1:
            body.append(f"{ind}pass")  # an empty module, as TVM prints it
        text = "\n".join(body)
        head = _header(typevars, "T." in text, any(isinstance(f, Function) for f in mod.functions.values()))
        return head + "@I.ir_module\n" + text + "\n"

    def function(self, func, name) -> str:
        typevars = dict.fromkeys(sorted(self._signature_prims(func)))
        if isinstance(func, PrimFunc):
            lines = self.prim_function(name, func, "")
        else:
            lines = self.relax_function(name, func, typevars, "")
        text = "\n".join(lines)
        has_relax = isinstance(func, Function)
        return _header(typevars, "T." in text, has_relax, module=False) + text + "\n"


def _header(typevars, uses_t, uses_r, module=True) -> str:
    lines = []
    if typevars:
        lines.append("# from typing import TypeVar")
    if module:
        lines.append("# from tvm.script import ir as I")
    if uses_t:
        lines.append("# from tvm.script import tirx as T")
        lines.append("# from tvm.tirx.layout import Axis")
    if uses_r:
        lines.append("# from tvm.script import relax as R")
    lines.append("")
    for n in typevars:
        lines.append(f'{n} = TypeVar("{n}")')
    return "\n".join(lines) + "\n"


def _ret_type(func):
    if func.ret_ty is not None:
        return func.ret_ty
    return func.body.ty


# ------------------------------------------------------------------------------ API
def script(obj, module_name: str = "Module", sort_functions: bool = True, name: str | None = None) -> str:
    """TVMScript text of a module or function that Apache TVM 0.27's parser accepts.

    Parameters
    ----------
    obj : IRModule, Function or PrimFunc
    module_name : str, default "Module"
        Name of the printed ``@I.ir_module`` class (also the ``cls = ...`` alias).
    sort_functions : bool, default True
        Print functions in TVM's order (PrimFuncs by name, then Relax functions by name
        with ``main`` last); False keeps the module's order.
    name : str, optional
        Name of a lone function (default: its ``global_symbol`` attribute, else ``"main"``).

    Returns
    -------
    str

    Raises
    ------
    IRError
        An object or node the printer does not know (e.g. a nested function).

    Examples
    --------
    >>> from memcore_py.ir import Function, SeqExpr, TensorType, Var
    >>> x = Var("x", TensorType((2, 3), "float32"))
    >>> print(script(Function([x], SeqExpr([], x), attrs={"global_symbol": "main"})), end="")
    # from tvm.script import relax as R
    <BLANKLINE>
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        return x
    """
    if not isinstance(module_name, str) or _ident(module_name) != module_name:
        raise IRError(f"module_name must be an identifier; got {module_name!r}")
    printer = _ModulePrinter(module_name)
    with gc_paused():  # many short-lived strings; generational GC would only cost time here
        if isinstance(obj, IRModule):
            return printer.module(obj, sort_functions)
        if isinstance(obj, (Function, PrimFunc)):
            if name is None:
                name = obj.attrs.get("global_symbol") or "main"
            return printer.function(obj, name)
    raise IRError(f"script() takes an IRModule, Function or PrimFunc; got {type(obj).__name__}")


def format_binding(binding) -> str:
    """One-line text of a binding (``y: R.Tensor((2, 3), dtype="float32") = R.add(x, x)``),
    for messages. Vars print with their own names."""
    fp = _FunctionPrinter(_TypePrinter(), ())
    lines = []
    if isinstance(binding.value, If):
        return f"{binding.var.name} = if {fp.expr(binding.value.cond)}: ... else: ..."
    fp.bindings([binding], lines, "")
    return lines[0] if lines else ""


def format_expr(expr) -> str:
    """Text of one expression, vars printed with their own names."""
    return _FunctionPrinter(_TypePrinter(), ()).expr(expr)
