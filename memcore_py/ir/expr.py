"""Relax expression, binding and function nodes.

Every node is immutable (``__slots__``, assignment raises) and compared by identity, so
nodes can be dict keys (a ``Var`` is its own identity: two vars named ``x`` are different
vars). Structural comparison is :func:`memcore_py.ir.structural_equal`.

The shape of a function follows TVM Relax::

    Function(params, body=SeqExpr(blocks=[BindingBlock | DataflowBlock, ...], body=expr))
    BindingBlock(bindings=[VarBinding(var, value) | MatchCast(var, value, ty), ...])

``ty`` on an expression is its type (TVM ``struct_info``); the type of a bound value is its
binding var's ``ty``. Calls carry ``op`` (an :class:`~memcore_py.ir.op.Op`, a
:class:`GlobalVar`, an :class:`ExternFunc` or a :class:`Var`), ``args``, ``attrs`` (a dict,
never mutated after construction) and ``ty_args`` (TVM ``sinfo_args``).
"""
from __future__ import annotations

from ..errors import IRError
from .prim import PrimExpr, as_prim
from .types import FuncType, ObjectType, PrimType, ShapeType, TensorType, TupleType, Type

__all__ = [
    "Node",
    "Expr",
    "Var",
    "DataflowVar",
    "GlobalVar",
    "ExternFunc",
    "Constant",
    "ShapeExpr",
    "PrimValue",
    "StringImm",
    "DataTypeImm",
    "Call",
    "Tuple",
    "TupleGetItem",
    "If",
    "SeqExpr",
    "Binding",
    "VarBinding",
    "MatchCast",
    "BindingBlock",
    "DataflowBlock",
    "BaseFunc",
    "Function",
    "PrimFuncParam",
    "PrimFunc",
]

_set = object.__setattr__

_EMPTY = {}


class Node:
    """Base of all IR nodes: immutable, identity hash and equality."""

    __slots__ = ()

    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable; build a new node instead")

    __hash__ = object.__hash__


class Expr(Node):
    """A Relax expression; ``ty`` is its type or None when not (yet) known."""

    __slots__ = ("ty",)


def _check_type(ty, what):
    if ty is not None and not isinstance(ty, Type):
        raise IRError(f"{what} must be a Type or None; got {type(ty).__name__}")
    return ty


def _check_expr(e, what):
    if not isinstance(e, Expr):
        raise IRError(f"{what} must be a Relax Expr; got {type(e).__name__} {e!r}")
    return e


class Var(Expr):
    """A Relax variable. ``name`` is a hint (TVM ``name_hint``); identity is the object."""

    __slots__ = ("name",)

    def __init__(self, name: str, ty: Type | None = None):
        if not isinstance(name, str):
            raise IRError(f"Var name must be a str; got {type(name).__name__}")
        _set(self, "name", name)
        _set(self, "ty", _check_type(ty, f"type of Var {name!r}"))

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class DataflowVar(Var):
    """A variable local to a dataflow block (not visible after it)."""

    __slots__ = ()


class GlobalVar(Expr):
    """Reference to a function of the module by name."""

    __slots__ = ("name",)

    def __init__(self, name: str, ty: Type | None = None):
        if not isinstance(name, str) or not name:
            raise IRError(f"GlobalVar name must be a non-empty str; got {name!r}")
        _set(self, "name", name)
        _set(self, "ty", ty)

    @property
    def name_hint(self):
        return self.name

    def __repr__(self):
        return f"GlobalVar({self.name!r})"


class ExternFunc(Expr):
    """A packed function by global symbol (the callee of ``R.call_packed``)."""

    __slots__ = ("global_symbol",)

    def __init__(self, global_symbol: str, ty: Type | None = None):
        if not isinstance(global_symbol, str):
            raise IRError(f"ExternFunc symbol must be a str; got {global_symbol!r}")
        _set(self, "global_symbol", global_symbol)
        _set(self, "ty", ty)

    def __repr__(self):
        return f"ExternFunc({self.global_symbol!r})"


class Constant(Expr):
    """A tensor constant.

    Attributes
    ----------
    data : numpy.ndarray or None
        The value, when known. None for a constant read from text as a metadata reference
        whose array was not supplied.
    meta : tuple of (str, int) or None
        ``("relax.expr.Constant", 3)`` for a constant printed as ``metadata[key][3]``; kept
        so that printing writes the same reference back.
    ty : TensorType
    """

    __slots__ = ("data", "meta")

    def __init__(self, data=None, ty: Type | None = None, meta=None):
        if data is None and meta is None:
            raise IRError("Constant needs data or a metadata reference")
        if ty is None:
            if data is None:
                raise IRError("a Constant without data needs an explicit type")
            ty = TensorType(tuple(int(d) for d in data.shape), str(data.dtype))
        _set(self, "data", data)
        _set(self, "meta", meta)
        _set(self, "ty", _check_type(ty, "Constant type"))

    def __repr__(self):
        if self.meta is not None:
            return f"Constant(metadata[{self.meta[0]!r}][{self.meta[1]}])"
        return f"Constant({self.data!r})"


class ShapeExpr(Expr):
    """A shape value ``R.shape([2, n])``; ``values`` is a tuple of :class:`PrimExpr`."""

    __slots__ = ("values",)

    def __init__(self, values):
        values = tuple(as_prim(v) for v in values)
        _set(self, "values", values)
        _set(self, "ty", ShapeType(values))

    def __repr__(self):
        return f"ShapeExpr({list(self.values)!r})"


class PrimValue(Expr):
    """A scalar value ``R.prim_value(3)``; ``value`` is a :class:`PrimExpr`.

    Its type is ``PrimType(value.dtype)`` without the value, as TVM 0.27's (whose
    ``PrimType`` has no value): ``(0,)`` is an ``R.Tuple(T.int64)``, so a type derived from
    it equals the type TVM reads for the same text."""

    __slots__ = ("value",)

    def __init__(self, value):
        value = as_prim(value) if not isinstance(value, PrimExpr) else value
        _set(self, "value", value)
        _set(self, "ty", PrimType(value.dtype))

    def __repr__(self):
        return f"PrimValue({self.value!r})"


class StringImm(Expr):
    """A string literal ``R.str("global")``."""

    __slots__ = ("value",)

    def __init__(self, value: str):
        if not isinstance(value, str):
            raise IRError(f"StringImm value must be a str; got {type(value).__name__}")
        _set(self, "value", value)
        _set(self, "ty", ObjectType())

    def __repr__(self):
        return f"StringImm({self.value!r})"


class DataTypeImm(Expr):
    """A dtype literal ``R.dtype("float32")``."""

    __slots__ = ("value",)

    def __init__(self, value: str):
        if not isinstance(value, str):
            raise IRError(f"DataTypeImm value must be a str; got {type(value).__name__}")
        _set(self, "value", value)
        _set(self, "ty", ObjectType())

    def __repr__(self):
        return f"DataTypeImm({self.value!r})"


class Call(Expr):
    """A call. ``op`` is an Op, GlobalVar, ExternFunc or Var; ``attrs`` a dict (read-only by
    convention); ``ty_args`` a tuple of types (TVM ``sinfo_args``)."""

    __slots__ = ("op", "args", "attrs", "ty_args")

    def __init__(self, op, args=(), attrs=None, ty_args=(), ty: Type | None = None):
        args = tuple(args)
        for i, a in enumerate(args):
            if not isinstance(a, Expr):
                raise IRError(
                    f"argument {i} of a call to {_callee_name(op)} must be a Relax Expr; got {type(a).__name__}"
                )
        _set(self, "op", op)
        _set(self, "args", args)
        _set(self, "attrs", attrs if attrs else _EMPTY)
        _set(self, "ty_args", tuple(ty_args))
        _set(self, "ty", ty)

    def __repr__(self):
        return f"Call({_callee_name(self.op)}, {list(self.args)!r})"


def _callee_name(op):
    for attr in ("name", "global_symbol"):
        v = getattr(op, attr, None)
        if isinstance(v, str):
            return v
    return type(op).__name__


class Tuple(Expr):
    """A tuple literal ``(a, b)``."""

    __slots__ = ("fields",)

    def __init__(self, fields, ty: Type | None = None):
        fields = tuple(_check_expr(f, "tuple field") for f in fields)
        if ty is None and all(f.ty is not None for f in fields):
            ty = TupleType([f.ty for f in fields])
        _set(self, "fields", fields)
        _set(self, "ty", ty)

    def __repr__(self):
        return f"Tuple({list(self.fields)!r})"


class TupleGetItem(Expr):
    """``t[i]``."""

    __slots__ = ("tuple_value", "index")

    def __init__(self, tuple_value: Expr, index: int, ty: Type | None = None):
        _check_expr(tuple_value, "TupleGetItem tuple")
        if not isinstance(index, int) or index < 0:
            raise IRError(f"TupleGetItem index must be a non-negative int; got {index!r}")
        if ty is None and isinstance(tuple_value.ty, TupleType):
            if index >= len(tuple_value.ty.fields):
                raise IRError(f"tuple index {index} is out of range for a tuple of {len(tuple_value.ty.fields)} fields")
            ty = tuple_value.ty.fields[index]
        _set(self, "tuple_value", tuple_value)
        _set(self, "index", index)
        _set(self, "ty", ty)

    def __repr__(self):
        return f"TupleGetItem({self.tuple_value!r}, {self.index})"


class SeqExpr(Expr):
    """Blocks followed by a result expression (a function body or an If branch)."""

    __slots__ = ("blocks", "body")

    def __init__(self, blocks, body: Expr, ty: Type | None = None):
        blocks = tuple(blocks)
        for i, b in enumerate(blocks):
            if not isinstance(b, BindingBlock):
                raise IRError(f"SeqExpr block {i} must be a BindingBlock; got {type(b).__name__}")
        _check_expr(body, "SeqExpr body")
        _set(self, "blocks", blocks)
        _set(self, "body", body)
        _set(self, "ty", ty if ty is not None else body.ty)


class If(Expr):
    """``if cond: true_branch else: false_branch``; branches are :class:`SeqExpr`."""

    __slots__ = ("cond", "true_branch", "false_branch")

    def __init__(self, cond: Expr, true_branch: SeqExpr, false_branch: SeqExpr, ty: Type | None = None):
        _check_expr(cond, "If condition")
        for name, br in (("true", true_branch), ("false", false_branch)):
            if not isinstance(br, SeqExpr):
                raise IRError(f"If {name} branch must be a SeqExpr; got {type(br).__name__}")
        _set(self, "cond", cond)
        _set(self, "true_branch", true_branch)
        _set(self, "false_branch", false_branch)
        _set(self, "ty", ty if ty is not None else true_branch.ty)


class Binding(Node):
    """Base of bindings: ``var`` and ``value``."""

    __slots__ = ("var", "value")


class VarBinding(Binding):
    """``var = value``."""

    __slots__ = ()

    def __init__(self, var: Var, value: Expr):
        if not isinstance(var, Var):
            raise IRError(f"a binding must bind a Var; got {type(var).__name__}")
        _check_expr(value, f"value bound to {var.name!r}")
        _set(self, "var", var)
        _set(self, "value", value)

    def __repr__(self):
        return f"VarBinding({self.var.name!r}, {self.value!r})"


class MatchCast(Binding):
    """``var = R.match_cast(value, ty)``: checks ``value`` against ``ty`` at run time and may
    define new symbolic variables."""

    __slots__ = ("ty",)

    def __init__(self, var: Var, value: Expr, ty: Type):
        if not isinstance(var, Var):
            raise IRError(f"a match_cast must bind a Var; got {type(var).__name__}")
        _check_expr(value, f"value matched into {var.name!r}")
        if not isinstance(ty, Type):
            raise IRError(f"match_cast type must be a Type; got {type(ty).__name__}")
        _set(self, "var", var)
        _set(self, "value", value)
        _set(self, "ty", ty)

    def __repr__(self):
        return f"MatchCast({self.var.name!r}, {self.value!r})"


class BindingBlock(Node):
    """A sequence of bindings with side effects allowed."""

    __slots__ = ("bindings",)

    def __init__(self, bindings):
        bindings = tuple(bindings)
        for i, b in enumerate(bindings):
            if not isinstance(b, Binding):
                raise IRError(f"binding {i} of a block must be a Binding; got {type(b).__name__}")
        _set(self, "bindings", bindings)

    def __repr__(self):
        return f"{type(self).__name__}(<{len(self.bindings)} bindings>)"


class DataflowBlock(BindingBlock):
    """A side-effect-free block; its ``DataflowVar`` bindings are local to it."""

    __slots__ = ()


class BaseFunc(Expr):
    """Base of module-level functions; ``attrs`` is a dict (read-only by convention)."""

    __slots__ = ("attrs",)


class Function(BaseFunc):
    """A Relax function.

    Attributes
    ----------
    params : tuple of Var
    body : SeqExpr
    ret_ty : Type or None
        Declared return type (``-> R.Tensor(...)``).
    attrs : dict
        Function attributes (``R.func_attr``), e.g. ``"global_symbol"``,
        ``"tir_var_upper_bound"``, ``"relax.force_pure"``.
    is_pure : bool
        ``@R.function(pure=False)`` when False.
    """

    __slots__ = ("params", "body", "ret_ty", "is_pure")

    def __init__(self, params, body: SeqExpr, ret_ty: Type | None = None, attrs=None, is_pure: bool = True):
        params = tuple(params)
        for i, p in enumerate(params):
            if not isinstance(p, Var):
                raise IRError(f"function parameter {i} must be a Var; got {type(p).__name__}")
        if not isinstance(body, SeqExpr):
            raise IRError(f"function body must be a SeqExpr; got {type(body).__name__}")
        _set(self, "params", params)
        _set(self, "body", body)
        _set(self, "ret_ty", ret_ty)
        _set(self, "attrs", dict(attrs) if attrs else {})
        _set(self, "is_pure", bool(is_pure))
        _set(self, "ty", FuncType([p.ty for p in params], ret_ty if ret_ty is not None else body.ty, is_pure))


class PrimFuncParam(Node):
    """One PrimFunc parameter: a buffer (``shape`` and ``dtype``) or a scalar (``shape`` None).

    Attributes
    ----------
    name : str
    dtype : str
    shape : tuple of PrimExpr or None
        None for a scalar parameter such as ``n: T.int64``.
    """

    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name: str, dtype: str, shape=None):
        _set(self, "name", name)
        _set(self, "dtype", dtype)
        _set(self, "shape", None if shape is None else tuple(as_prim(d) for d in shape))

    @property
    def is_buffer(self):
        return self.shape is not None

    def __repr__(self):
        return f"PrimFuncParam({self.name!r}, {self.dtype!r}, {self.shape!r})"


class PrimFunc(BaseFunc):
    """A TIR function, kept as a signature plus opaque text.

    Attributes
    ----------
    params : tuple of PrimFuncParam
    attrs : dict
        ``T.func_attr`` contents.
    text : str or None
        The function's TVMScript source exactly as read (decorator to last body line,
        dedented), printed back unchanged. None for a signature-only PrimFunc (importers make
        these); it prints as a valid PrimFunc with that signature and an empty body.
    private : bool
        ``@T.prim_func(private=True)``.
    source : object or None
        What the body is made from when the function is written to TVM, carried opaque and
        never read by memcore's IR: the ``tvm.tirx.PrimFunc`` that
        :func:`memcore_py.tvm.from_tvm` converted it from (:func:`memcore_py.tvm.to_tvm`
        writes that object back untouched), or the
        :class:`~memcore_py.transform.legalize_elementwise.TirKernel` a pass wrote the text
        from (the TVM writer builds the objects from it). None otherwise.

    Notes
    -----
    :meth:`lazy` makes a PrimFunc whose ``params``, ``attrs``, ``text`` and ``private`` are
    computed on first access (the TVM bridge reads a TVM PrimFunc's signature only when a
    pass, the printer or structural equality asks for it, since planning never does). The
    fields are slots left unset until then; ``__getattr__``, which Python calls only for an
    unset slot, fills all four at once, so a loaded PrimFunc costs nothing extra.
    :meth:`lazy_text` defers only the text.
    """

    __slots__ = ("params", "text", "private", "source", "_load", "_base", "_body")

    _LAZY_FIELDS = ("params", "attrs", "text", "private")

    #: what a :meth:`lazy` loader returns for ``text`` when the text is loaded on its own, by
    #: the loader's ``text(params, attrs, private)``, the first time it is read
    TEXT_LATER = object()

    def __init__(self, params, attrs=None, text: str | None = None, private: bool = False, source=None):
        params = tuple(params)
        for i, p in enumerate(params):
            if not isinstance(p, PrimFuncParam):
                raise IRError(f"PrimFunc parameter {i} must be a PrimFuncParam; got {type(p).__name__}")
        _set(self, "params", params)
        _set(self, "attrs", dict(attrs) if attrs else {})
        _set(self, "text", text)
        _set(self, "private", bool(private))
        _set(self, "source", source)
        _set(self, "_load", None)
        _set(self, "_base", None)
        _set(self, "_body", None)
        _set(self, "ty", ObjectType())

    @classmethod
    def lazy(cls, load, source, body=None) -> "PrimFunc":
        """A PrimFunc whose ``params``, ``attrs``, ``text`` and ``private`` are
        ``load() -> (params, attrs, text, private)``, called once on first access (checked
        as the constructor checks them). A loader that returns :attr:`TEXT_LATER` for the
        text loads it separately, by ``load.text(params, attrs, private)``, when the text is
        first read (a signature costs less than a text). ``body``: a view of the body in the
        object it was read from, which answers without a text what the text would: its
        ``callees()`` (the names of the module functions it refers to) and ``equal(other)``
        (whether another view's function has the same parameters and body); see
        :meth:`source_body`."""
        if not callable(load):
            raise IRError(f"PrimFunc.lazy needs a callable loader; got {type(load).__name__}")
        f = object.__new__(cls)
        _set(f, "source", source)
        _set(f, "_load", load)
        _set(f, "_base", None)
        _set(f, "_body", body)
        _set(f, "ty", ObjectType())
        return f

    @classmethod
    def lazy_text(cls, params, attrs, private: bool, text_of, base: "PrimFunc") -> "PrimFunc":
        """A PrimFunc whose ``params``, ``attrs`` and ``private`` are set (and checked) now
        and whose ``text`` is ``text_of()``, called once on first access: for a text that an
        edit of the decorator and attribute line derives from ``base``'s
        (:func:`~memcore_py.ir.text.prim_func_text.with_attrs`), which a pass need not write unless
        the text is read (printing, structural equality); see :meth:`reference_text`."""
        if not callable(text_of):
            raise IRError(f"PrimFunc.lazy_text needs a callable; got {type(text_of).__name__}")
        if type(base) is not PrimFunc:
            raise IRError(f"PrimFunc.lazy_text needs the PrimFunc the text derives from; got {type(base).__name__}")
        f = cls(params, attrs, None, private)
        p, a, pr = f.params, f.attrs, f.private
        cls.text.__delete__(f)
        _set(f, "_load", lambda: (p, a, text_of(), pr))
        _set(f, "_base", base)
        return f

    def unwritten_base(self):
        """The PrimFunc a :meth:`lazy_text` function's text derives from while that text is
        unwritten; None otherwise."""
        if object.__getattribute__(self, "_load") is None:
            return None
        return object.__getattribute__(self, "_base")

    def source_body(self):
        """The view of the body :meth:`lazy` was given (for a :meth:`lazy_text` copy, its
        base's: the copy's body is its base's); None for a PrimFunc memcore made."""
        f = self
        while f.unwritten_base() is not None:
            f = f.unwritten_base()
        return object.__getattribute__(f, "_body")

    def reference_text(self):
        """A text with the same references to other functions (``cls.name``) as ``text``:
        ``text`` itself, or, while a :meth:`lazy_text` function's text is unwritten, the
        reference text of the function it derives from (an edit of the decorator and the
        attribute line leaves the body, and what it calls, as it was)."""
        f = self
        while f.unwritten_base() is not None:
            f = f.unwritten_base()
        return f.text

    def __getattr__(self, name):
        if name not in PrimFunc._LAZY_FIELDS:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        load = object.__getattribute__(self, "_load")
        if load is None:
            raise AttributeError(f"PrimFunc field {name!r} is not set")
        params, attrs, text, private = load()
        later = text is PrimFunc.TEXT_LATER
        checked = PrimFunc(params, attrs, None if later else text, private)
        for k in PrimFunc._LAZY_FIELDS:
            if not (later and k == "text"):
                _set(self, k, object.__getattribute__(checked, k))
        if later:  # the text slot stays unset: read by the loader when first asked for
            p, a, pr = checked.params, checked.attrs, checked.private
            _set(self, "_load", lambda: (p, a, load.text(p, a, pr), pr))
            return getattr(self, name)
        _set(self, "_load", None)
        _set(self, "_base", None)
        return object.__getattribute__(self, name)
