"""Relax calls: ``name(...)`` dispatched to a module function, a handler or a registered op.

Design
------
:meth:`_Calls.call` resolves a call by its callee: a Relax variable or ``cls.f`` is a call of
that function; a name in :data:`_HANDLERS` runs its handler (the constructs that are not
plain op calls: types, ``R.shape``, ``R.const``, the ``call_tir`` family, packed calls,
``T.*`` prim calls, module and function attributes, ...); ``R.<name>`` is the registered op
``relax.<name>``. An op with a schema (:mod:`~memcore_py.ir.op_schema`) binds its values in
its wrapper's signature order or by name, converts arguments by kind and checks, converts
and completes every attribute (:meth:`_Calls.schema_call`); an op without one takes
``n_args`` arguments, then fills ``attr_names`` in order, with TVM's defaults for trailing
arguments (:meth:`_Calls.op_call`). The Relax value handlers are here; the type handlers are
:mod:`memcore_py.ir.text.parse_types` and the prim ones :mod:`memcore_py.ir.text.parse_prim`.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import IRError
from ..expr import Call, DataTypeImm, Expr, ExternFunc, GlobalVar, PrimValue, ShapeExpr, StringImm, Tuple, Var
from ..module import VDevice
from ..op import get_op, is_registered
from ..op_schema import ABSENT, REQUIRED, convert_attr
from ..ops import builtin_alloc_implied_type, builtin_alloc_own_type
from ..prim import FloatImm, IntImm, PrimExpr
from ..types import PrimType, ShapeType, TupleType, type_contradiction
from .parse_core import _Err
from .parse_prim import _h_cast, _h_min_max, _h_not, _h_prim_call, _h_select
from .parse_types import (
    _h_callable,
    _h_object,
    _h_prim_type,
    _h_shape_type,
    _h_string_type,
    _h_tensor,
    _h_tuple_type,
)
from .parse_values import _MatchCastPair, _attr_value, _bound_args, _constant, _describe, _no_more
from .prim_func_text import DTYPE_NAMES, PRIM_CALLS, float_value


class _Calls:
    """Call dispatch and op calls (a mixin of the parser)."""

    def call(self, tok, pos):
        """``tok(...)``: self.pos is at '('."""
        if "." not in tok:
            v = self.scope.get(tok)
            if v is not None:
                self.used_var = True
                args, kwargs = self.call_args()
                if kwargs:
                    raise _Err("keyword arguments are not allowed in a call of a function value", pos)
                return Call(v, [self.as_expr(a, pos) for a in args])
            if tok == "float":
                args, kwargs = self.call_args()
                try:
                    return float_value(args, kwargs)
                except ValueError as e:
                    raise _Err(str(e), pos) from None
            if tok in ("TypeVar",):
                raise _Err("TypeVar(...) is only allowed at module level", pos)
            raise _Err(f"undefined function {tok!r}", pos)
        head = tok[: tok.index(".")]
        if head in self.cls_names:
            gv = self.global_var(tok[len(head) + 1:], pos)
            args, kwargs = self.call_args()
            if kwargs:
                raise _Err("keyword arguments are not allowed in a call of a module function", pos)
            return Call(gv, [self.as_expr(a, pos) for a in args])
        handler = _HANDLERS.get(tok)
        if handler is not None:
            args, kwargs = self.call_args()
            return handler(self, args, kwargs, pos)
        if head == "R":
            opname = "relax." + tok[2:]
            if is_registered(opname):
                args, kwargs = self.call_args()
                return self.op_call(get_op(opname), tok, args, kwargs, pos)
            raise _Err(f"unknown operator {tok!r} (no {opname!r} in the op registry)", pos)
        if head == "T":
            dt = tok[2:]
            if dt in DTYPE_NAMES:
                args, kwargs = self.call_args()
                return self.t_dtype(dt, args, kwargs, pos)
        raise _Err(f"unknown function {tok!r}", pos)

    def schema_call(self, op, tok, args, kwargs, pos):
        """A call of an op with a schema (:mod:`~memcore_py.ir.op_schema`): positional values
        bound in the wrapper's signature order, keywords by name, Relax arguments converted
        by kind, every attribute checked, converted and present (defaults filled)."""
        schema = op.schema
        sig = schema.signature
        if len(args) > len(sig):
            n_attr = len(schema.attrs)
            raise _Err(
                f"{tok} takes at most {len(schema.args)} arguments"
                + (f" and {n_attr} attributes" if n_attr else "")
                + f"; got {len(args)} ({', '.join(sig)})",
                pos,
            )
        bound = dict(zip(sig, args))
        ty_args = ()
        for k, v in kwargs.items():
            if k in ("ty_args", "sinfo_args"):
                ty_args = self.types_of(v, pos)
            elif k not in sig:
                attrs = ", ".join(a.name for a in schema.attrs) or "none"
                raise _Err(f"{tok}: unknown attribute or argument {k!r} (its attributes: {attrs})", pos)
            elif k in bound:
                raise _Err(f"{tok}: {k!r} given twice", pos)
            else:
                bound[k] = v
        if schema.prepare is not None:
            schema.prepare(bound)
        exprs = []
        for a in schema.args:
            v = bound.get(a.name)
            if v is None:
                if a.default is REQUIRED:
                    lo, hi = op.n_args
                    want = f"{lo}" if lo == hi else f"{lo} to {hi}"
                    given = sum(1 for x in schema.args if bound.get(x.name) is not None)
                    raise _Err(f"{tok} takes {want} arguments; got {given} (missing {a.name!r})", pos)
                if a.default is ABSENT:
                    if any(bound.get(b.name) is not None for b in schema.args[len(exprs) + 1:]):
                        raise _Err(f"{tok}: argument {a.name!r} may only be left out after the last one", pos)
                    continue
                v = a.default
            exprs.append(self.schema_arg(a, v, tok, pos))
        attrs = {}
        for a in schema.attrs:
            if a.name in bound:
                try:
                    attrs[a.name] = convert_attr(op.script_name, a, _attr_value(bound[a.name]))
                except _Err as e:
                    raise _Err(f"{tok}: attribute {a.name!r}: {e.msg}", pos) from None
                except IRError as e:
                    raise _Err(str(e), pos) from None
        try:
            attrs = op.complete_attrs(attrs, exprs)
        except IRError as e:
            raise _Err(str(e).replace(op.name, tok, 1), pos) from None
        return Call(op, exprs, attrs, ty_args)

    def schema_arg(self, a, v, tok, pos):
        """A Relax argument of kind ``a.kind`` from the written value ``v``."""
        kind = a.kind
        if kind == "shape":
            if isinstance(v, (tuple, list)):
                return ShapeExpr([self.as_dim(d, pos) for d in v])
            if type(v) is int:
                return ShapeExpr([IntImm(v)])
            e = self.as_expr(v, pos)
            if not isinstance(e.ty, ShapeType) and e.ty is not None:
                raise _Err(f"{tok}: argument {a.name!r} must be a shape (R.shape([...])); got {_describe(v)}", pos)
            return e
        if kind == "tuple":
            if isinstance(v, (tuple, list)):
                return Tuple([self.as_expr(x, pos) for x in v])
            e = self.as_expr(v, pos)
            if not isinstance(e.ty, TupleType) and e.ty is not None:
                raise _Err(f"{tok}: argument {a.name!r} must be a tuple; got {_describe(v)}", pos)
            return e
        if kind == "prim":
            if isinstance(v, (tuple, list, str)):
                raise _Err(f"{tok}: argument {a.name!r} must be a scalar (PrimValue); got {_describe(v)}", pos)
            if type(v) is bool:  # a scalar argument written True / False: TVM's op builders make it a bool
                return PrimValue(IntImm(int(v), "bool"))
            e = self.as_expr(v, pos)
            if e.ty is not None and not isinstance(e.ty, PrimType):
                raise _Err(f"{tok}: argument {a.name!r} must be a scalar (PrimValue); got {_describe(v)}", pos)
            return e
        e = self.as_expr(v, pos)
        if isinstance(v, (tuple, list)):
            raise _Err(f"{tok}: argument {a.name!r} must be a Relax value, not a list; got {_describe(v)}", pos)
        return e

    def op_call(self, op, tok, args, kwargs, pos):
        if op.schema is not None:
            return self.schema_call(op, tok, args, kwargs, pos)
        lo, hi = op.n_args
        n_attr = len(op.attr_names)
        if hi is not None and len(args) > hi:
            extra = args[hi:]
            args = args[:hi]
            if len(extra) > n_attr:
                raise _Err(
                    f"{tok} takes at most {hi} arguments"
                    + (f" and {n_attr} attributes" if n_attr else "")
                    + f"; got {hi + len(extra)}",
                    pos,
                )
            attrs = {}
            for k, v in zip(op.attr_names, extra):
                attrs[k] = _attr_value(v)
        else:
            attrs = {}
        ty_args = ()
        for k, v in kwargs.items():
            if k in ("ty_args", "sinfo_args"):
                ty_args = self.types_of(v, pos)
            elif k in attrs:
                raise _Err(f"{tok}: attribute {k!r} given twice", pos)
            else:
                attrs[k] = _attr_value(v)
        if len(args) < lo:
            want = f"{lo}" if lo == hi else (f"{lo} to {hi}" if hi is not None else f"at least {lo}")
            raise _Err(f"{tok} takes {want} arguments; got {len(args)}", pos)
        fill = _DEFAULT_ARGS.get(op.name)
        if fill is not None and len(args) < len(fill):
            args = list(args) + [None] * (len(fill) - len(args))
        conv = _ARG_KINDS.get(op.name)
        exprs = []
        as_expr = self.as_expr
        for i, a in enumerate(args):
            if a is None and fill is not None and i < len(fill) and fill[i] is not None:
                exprs.append(fill[i]())
                continue
            kind = conv[i] if conv is not None and i < len(conv) else None
            if kind is not None and type(a) is str:
                exprs.append(DataTypeImm(a) if kind == "dtype" else StringImm(a))
            else:
                exprs.append(as_expr(a, pos))
        if op.name == "relax.builtin.alloc_tensor" and len(exprs) >= 2:
            ty_args = self.alloc_ty_args(exprs, ty_args, pos)
        return Call(op, exprs, attrs, ty_args)

    def alloc_ty_args(self, args, ty_args, pos):
        """``ty_args`` of ``R.builtin.alloc_tensor``: as written, else the binding
        annotation (as CallTIRRewrite makes them), else the shape and dtype arguments'
        tensor. Written or annotated types that contradict those arguments are refused."""
        own = builtin_alloc_own_type(args[0], args[1])
        if ty_args:
            what, why = "its ty_args", type_contradiction(ty_args[0], own)
        else:
            what = "the annotation"
            implied, why = builtin_alloc_implied_type(own, self.ann if self.depth == 0 else None)
            ty_args = (implied,)
        if why is not None:
            raise _Err(f"R.builtin.alloc_tensor: the type given by {what} contradicts its shape and dtype "
                       f"arguments: {why}", pos)
        return ty_args


# ------------------------------------------------------------------------------ handlers
def _h_shape(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or not isinstance(args[0], (list, tuple)):
        raise _Err("R.shape takes one list of dimensions", pos)
    return ShapeExpr([p.as_dim(d, pos) for d in args[0]])


def _h_prim_value(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    _no_more(kwargs, "R.prim_value", pos)
    if len(args) != 1:
        raise _Err("R.prim_value takes one value", pos)
    v = args[0]
    if type(v) is int:
        if dtype is not None and type(dtype) is str and dtype.startswith("float"):
            return PrimValue(FloatImm(float(v), dtype))
        return PrimValue(IntImm(v, dtype or "int64"))
    if type(v) is bool:
        return PrimValue(IntImm(int(v), "bool"))
    if type(v) is float:
        return PrimValue(FloatImm(v, dtype or "float64"))
    if isinstance(v, PrimExpr):
        return PrimValue(v)
    raise _Err(f"R.prim_value takes a number or a symbolic expression; got {_describe(v)}", pos)


def _h_str(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or type(args[0]) is not str:
        raise _Err("R.str takes one string", pos)
    return StringImm(args[0])


def _h_dtype(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or type(args[0]) is not str:
        raise _Err("R.dtype takes one dtype string", pos)
    return DataTypeImm(args[0])


def _h_const(p, args, kwargs, pos):
    (value, dtype), args = _bound_args(args, kwargs, ("value", "dtype"), "R.const", pos)
    if args or value is None:
        raise _Err("R.const takes a value and an optional dtype", pos)
    if dtype is not None and type(dtype) is not str:
        raise _Err(f"R.const: dtype must be a string; got {_describe(dtype)}", pos)
    return _constant(_const_data(value, dtype, pos))


_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan, "+inf": math.inf}


def _const_data(v, dtype, pos):
    if type(v) is str:
        if v in _NONFINITE:
            v = _NONFINITE[v]
        else:
            raise _Err(f"R.const: unsupported value {v!r}", pos)
    if dtype is None:
        if isinstance(v, bool):
            dtype = "bool"
        elif isinstance(v, int):
            dtype = "int32"
        elif isinstance(v, float):
            dtype = "float32"
        else:
            dtype = "float32"
    if (
        dtype not in DTYPE_NAMES
        or dtype == "handle"
        or dtype in ("int4", "uint4", "bfloat16", "float8_e4m3fn", "float8_e5m2")
    ):
        raise _Err(f"R.const: unsupported dtype {dtype!r}", pos)

    def fix(x):
        if isinstance(x, list):
            return [fix(y) for y in x]
        if type(x) is str:
            if x in _NONFINITE:
                return _NONFINITE[x]
            raise _Err(f"R.const: unsupported value {x!r}", pos)
        if isinstance(x, (int, float, bool)):
            return x
        raise _Err(f"R.const: values must be numbers; got {_describe(x)}", pos)

    v = fix(v)
    try:
        with np.errstate(all="ignore"):
            arr = np.array(v, dtype=dtype)
    except (ValueError, OverflowError, TypeError) as e:
        raise _Err(f"R.const: {e}", pos) from None
    if arr.dtype == object:
        raise _Err("R.const: ragged nested lists", pos)
    return arr


def _h_tuple(p, args, kwargs, pos):
    if kwargs:
        raise _Err("R.tuple takes no keyword arguments", pos)
    return Tuple([p.as_expr(a, pos) for a in args])


def _h_extern(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or type(args[0]) is not str:
        raise _Err("R.ExternFunc takes one symbol name", pos)
    return ExternFunc(args[0])


def _h_match_cast(p, args, kwargs, pos):
    if kwargs or len(args) != 2:
        raise _Err("R.match_cast takes a value and a type", pos)
    return _MatchCastPair(args[0], p.as_type(args[1], pos))


def _callee_symbol(v, pos, tok):
    if type(v) is str:
        return ExternFunc(v)
    if isinstance(v, (ExternFunc, GlobalVar, Var)):
        return v
    raise _Err(f"{tok}: the callee must be a function name string; got {_describe(v)}", pos)


def _h_call_packed(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    if not args:
        raise _Err("R.call_packed needs a function name", pos)
    fn = args[0]
    if type(fn) is not str:
        raise _Err(f"R.call_packed: the function name must be a string; got {_describe(fn)}", pos)
    ty_args = ()
    for k in ("ty_args", "sinfo_args"):
        if k in kwargs:
            ty_args = p.types_of(kwargs.pop(k), pos)
    kwargs.pop("attrs_type_key", None)
    attrs = {k: _attr_value(v) for k, v in kwargs.items()}
    return Call(ExternFunc(fn), [p.as_expr(a, pos) for a in args[1:]], attrs, ty_args)


def _dps_args(p, v, pos, tok):
    if isinstance(v, (tuple, list)):
        return Tuple([p.as_expr(x, pos) for x in v])
    if isinstance(v, Expr):
        return v
    raise _Err(f"{tok}: the arguments must be a tuple; got {_describe(v)}", pos)


def _out_type(p, v, pos, tok):
    if isinstance(v, list):
        return TupleType([p.as_type(x, pos) for x in v])
    if v is None:
        raise _Err(f"{tok} needs out_ty=...", pos)
    return p.as_type(v, pos)


def _make_dps_handler(opname, tok, attr_names, callee_is_symbol):
    def handler(p, args, kwargs, pos):
        kwargs = dict(kwargs)
        args = list(args)
        if not args:
            raise _Err(f"{tok} needs a callee", pos)
        callee = args.pop(0)
        callee = _callee_symbol(callee, pos, tok) if callee_is_symbol else callee
        if not isinstance(callee, Expr):
            raise _Err(f"{tok}: the callee must be a module function (cls.f); got {_describe(callee)}", pos)
        call_args = kwargs.pop("args", None)
        if args:
            if call_args is not None:
                raise _Err(f"{tok}: args given twice", pos)
            call_args = args.pop(0)
        if call_args is None:
            raise _Err(f"{tok} takes (callee, args, out_ty=...)", pos)
        out = None
        for k in ("out_ty", "out_sinfo"):
            if k in kwargs:
                out = kwargs.pop(k)
        if args and out is None:
            out = args.pop(0)
        tir_vars = kwargs.pop("tir_vars", None)
        if args and tir_vars is None:
            tir_vars = args.pop(0)
        attrs = {}
        for name in attr_names:
            if name in kwargs:
                attrs[name] = _attr_value(kwargs.pop(name))
            elif args:
                attrs[name] = _attr_value(args.pop(0))
        if args:
            raise _Err(f"{tok}: too many arguments", pos)
        _no_more(kwargs, tok, pos)
        if "inplace_indices" in attrs:
            v = attrs["inplace_indices"]
            attrs["inplace_indices"] = (v,) if type(v) is int else v
        call_args_expr = _dps_args(p, call_args, pos, tok)
        exprs = [callee, call_args_expr]
        if tir_vars is not None:
            exprs.append(
                p.as_expr(tir_vars, pos)
                if not isinstance(tir_vars, (list, tuple))
                else ShapeExpr([p.as_prim(d, pos) for d in tir_vars])
            )
        return Call(get_op(opname), exprs, attrs, (_out_type(p, out, pos, tok),))

    return handler


def _make_packed_op_handler(opname, tok, attr_names):
    def handler(p, args, kwargs, pos):
        kwargs = dict(kwargs)
        if not args:
            raise _Err(f"{tok} needs a function name", pos)
        callee = _callee_symbol(args[0], pos, tok)
        ty_args = ()
        for k in ("ty_args", "sinfo_args"):
            if k in kwargs:
                ty_args = p.types_of(kwargs.pop(k), pos)
        attrs = {}
        for name in attr_names:
            if name in kwargs:
                v = _attr_value(kwargs.pop(name))
                attrs[name] = (v,) if name == "inplace_indices" and type(v) is int else v
        _no_more(kwargs, tok, pos)
        return Call(get_op(opname), [callee] + [p.as_expr(a, pos) for a in args[1:]], attrs, ty_args)

    return handler


def _h_call_tir_dyn(p, args, kwargs, pos):
    if kwargs or len(args) != 2:
        raise _Err("R.vm.call_tir_dyn takes (callee, args)", pos)
    callee = args[0]
    if not isinstance(callee, Expr):
        raise _Err(f"R.vm.call_tir_dyn: the callee must be a module function; got {_describe(callee)}", pos)
    return Call(get_op("relax.vm.call_tir_dyn"), [callee, _dps_args(p, args[1], pos, "R.vm.call_tir_dyn")])


def _h_assert_op(p, args, kwargs, pos):
    """``R.assert_op(cond, *format_args, format=R.str("..."))`` -> ``(cond, format, *format_args)``."""
    kwargs = dict(kwargs)
    if not args:
        raise _Err("R.assert_op needs a condition", pos)
    fmt = kwargs.pop("format", "")
    _no_more(kwargs, "R.assert_op", pos)
    if isinstance(fmt, str):
        fmt = StringImm(fmt)
    if not isinstance(fmt, StringImm):
        raise _Err(f"R.assert_op: format must be a string (R.str(...)); got {_describe(fmt)}", pos)
    return Call(get_op("relax.assert_op"), [p.as_expr(args[0], pos), fmt] + [p.as_expr(a, pos) for a in args[1:]])


def _h_vdevice(p, args, kwargs, pos):
    kwargs = dict(kwargs)
    args = list(args)
    target = kwargs.pop("target", args.pop(0) if args else None)
    vid = kwargs.pop("vdevice_id", args.pop(0) if args else 0)
    scope = kwargs.pop("memory_scope", args.pop(0) if args else "global")
    if args or kwargs:
        raise _Err("I.vdevice takes (target, vdevice_id, memory_scope)", pos)
    if type(vid) is not int or type(scope) is not str:
        raise _Err("I.vdevice: vdevice_id must be an int and memory_scope a string", pos)
    return VDevice(target, vid, scope)


def _h_module_dict(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or not isinstance(args[0], dict):
        raise _Err("takes one dict", pos)
    return {k: _attr_value(v) for k, v in args[0].items()}


def _h_func_attr(p, args, kwargs, pos):
    if kwargs or len(args) != 1 or not isinstance(args[0], dict):
        raise _Err("takes one dict", pos)
    return {k: _attr_value(v) for k, v in args[0].items()}


def _h_not_here(name):
    def handler(p, args, kwargs, pos):
        raise _Err(f"{name}(...) is only valid as a statement of its own", pos)

    return handler


def _h_attention(p, args, kwargs, pos):
    """``R.nn.attention(query, key, value, bias=None, scale=None, causal_mask=None,
    window_size=None)``: TVM's wrapper builds ``relax.nn.attention_bias`` (four arguments) when
    a bias is given, else ``relax.nn.attention`` (three)."""
    args, kwargs = list(args), dict(kwargs)
    if len(args) > 3:
        if "bias" in kwargs:
            raise _Err("R.nn.attention: 'bias' given twice", pos)
        bias = args.pop(3)
    else:
        bias = kwargs.pop("bias", None)
    if bias is None:
        return p.op_call(get_op("relax.nn.attention"), "R.nn.attention", args, kwargs, pos)
    return p.op_call(get_op("relax.nn.attention_bias"), "R.nn.attention", args[:3] + [bias] + args[3:], kwargs, pos)


def _prim_value0():
    return PrimValue(IntImm(0))


def _global_scope():
    return StringImm("global")


#: Default values TVM's op wrappers fill in for trailing arguments.
_DEFAULT_ARGS = {
    "relax.builtin.alloc_tensor": (None, None, None, _global_scope),
    "relax.memory.alloc_tensor": (None, None, None, None, _prim_value0),
    "relax.vm.alloc_storage": (None, None, None, _global_scope),
    "relax.vm.alloc_tensor": (None, None, None, None, _prim_value0),
}

#: Which positional args are dtype / string (scope) when written as a bare string.
_ARG_KINDS = {
    "relax.builtin.alloc_tensor": (None, "dtype", None, "str"),
    "relax.memory.alloc_storage": (None, None, "str", "dtype"),
    "relax.memory.alloc_tensor": (None, None, None, "dtype", None),
    "relax.vm.alloc_storage": (None, None, "dtype", "str"),
    "relax.vm.alloc_tensor": (None, None, None, "dtype", None),
    "relax.memory.view": (None, None, "dtype", None),
}


_HANDLERS = {
    "R.Tensor": _h_tensor,
    "R.Tuple": _h_tuple_type,
    "R.Shape": _h_shape_type,
    "R.Prim": _h_prim_type,
    "R.Object": _h_object,
    "R.Any": _h_object,
    "R.Callable": _h_callable,
    "I.StringType": _h_string_type,
    "R.shape": _h_shape,
    "R.prim_value": _h_prim_value,
    "R.str": _h_str,
    "R.dtype": _h_dtype,
    "R.const": _h_const,
    "R.tuple": _h_tuple,
    "R.ExternFunc": _h_extern,
    "R.match_cast": _h_match_cast,
    "R.call_packed": _h_call_packed,
    "R.call_tir": _make_dps_handler("relax.call_tir", "R.call_tir", (), False),
    "R.call_tir_inplace": _make_dps_handler(
        "relax.call_tir_inplace", "R.call_tir_inplace", ("inplace_indices",), False
    ),
    "R.call_tir_with_grad": _make_dps_handler(
        "relax.call_tir_with_grad", "R.call_tir_with_grad", ("te_grad_name", "te_grad_kwargs"), False
    ),
    "R.call_dps_packed": _make_dps_handler("relax.call_dps_packed", "R.call_dps_packed", (), True),
    "R.call_pure_packed": _make_packed_op_handler("relax.call_pure_packed", "R.call_pure_packed", ()),
    "R.call_inplace_packed": _make_packed_op_handler(
        "relax.call_inplace_packed", "R.call_inplace_packed", ("inplace_indices",)
    ),
    "R.vm.call_tir_dyn": _h_call_tir_dyn,
    "R.nn.attention": _h_attention,
    "R.assert_op": _h_assert_op,
    "T.min": _h_min_max("T.min"),
    "T.max": _h_min_max("T.max"),
    **{name: _h_prim_call(name) for name in PRIM_CALLS},
    "T.Not": _h_not,
    "T.Cast": _h_cast,
    "T.Select": _h_select("T.Select"),
    "T.if_then_else": _h_select("T.if_then_else"),
    "I.vdevice": _h_vdevice,
    "I.module_attrs": _h_module_dict,
    "I.module_global_infos": _h_module_dict,
    "R.func_attr": _h_func_attr,
    "R.output": _h_not_here("R.output"),
    "R.dataflow": _h_not_here("R.dataflow"),
}
