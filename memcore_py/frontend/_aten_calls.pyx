"""The typed calls the ATen and ONNX converters build, and the per-import memo of their
types (built by ``setup.py``; no fallback).

Design
------
:class:`CallBuilder` is the call-building half of
:class:`~memcore_py.frontend._aten_context.AtenContext`: the context binds its ``call``,
``op``, ``value``, ``args``, ``tensor_type`` and ``shared_type`` to one builder's methods,
so the converters reach this code without a Python frame of their own. It holds what one
import remembers:

- per op name, the :class:`~memcore_py.ir.op.Op`, its schema's argument kinds and defaults,
  and whether its attributes can be remembered (no default derived from the arguments);
- per distinct written attributes of such an op, the op table's converted, complete dict
  (attribute dicts are never changed, so calls share them);
- per int, its int64 ``IntImm`` (IntImms are immutable and compared by value);
- per (op, attribute values, argument keys), the type the op's rule gave (:meth:`CallBuilder.call_type`);
- per (dtype, vdevice, dims), the one ``TensorType`` of that value (:meth:`CallBuilder.shared_type`).

A call is made as the TVMScript parser makes it: the arguments in schema order, a written
value converted as TVM's Python wrappers convert it (a list where a shape is expected
becomes a ``ShapeExpr``, a list where a tuple is expected a ``Tuple`` of ``PrimValue``, an
int an int64 ``PrimValue``, a float a float64 one), the attributes converted and completed
by the op table (:meth:`~memcore_py.ir.op.Op.convert_attrs`), the type from the op's rule
(:func:`~memcore_py.ir.infer.infer_type`). A model repeats its layers, so most calls are a
call made before on arguments of the same types: the rule runs once per distinct key, and
the same type object is handed out again. A type rule reads the op, the converted attribute
values (compared by ``==``: no type depends on the sign of a float attribute's zero), the
arguments' types and the values of literal arguments (a ``ShapeExpr``, ``PrimValue`` or
``Tuple`` of those; :func:`literal_key`), which make the key (a constant is read through its
type alone, so its type is keyed by value: the converters' scalar constants are new objects
each time); the inputs' types and the
rules' results are one object per distinct tensor type, so a layer's calls find its
predecessor's when argument types are compared by identity. A call whose rule fails is not
remembered (each raises). A reshape's ``-1`` is stored resolved, as TVM's reshape
constructor (``ConvertNewShapeToExpr``) stores it.

The finished call and the literal arguments it is given (shapes, tuples of scalars, int
scalars, with their types) are written with :mod:`memcore_py.ir._nodes` (every slot set,
untracked by the cyclic collector, as the checked constructors would store them) and emitted
with the builder's compiled binding step (:func:`memcore_py.ir._block_emit.emit`). Written values
that are not what their kind takes raise :class:`~memcore_py.errors.IRError`; the importer
turns every error into a :class:`~memcore_py.errors.FrontendError` naming the node.
"""
cimport cython
from libc.math cimport copysign

from memcore_py.ir._block_emit cimport emit
from memcore_py.ir._nodes cimport (
    call_node, prim_type_node, prim_value_node, shape_expr_node, shape_type_node, tuple_node,
    tuple_type_node,
)

import numpy as np

from memcore_py.errors import IRError
from memcore_py.ir.construct import EMPTY_ATTRS, new_call
from memcore_py.ir.expr import Constant, DataflowVar, Expr, PrimValue, ShapeExpr, Tuple, Var
from memcore_py.ir.infer import infer_type
from memcore_py.ir.op import get_op
from memcore_py.ir.op_schema import ABSENT, REQUIRED
from memcore_py.ir.prim import FloatImm, IntImm, PrimExpr
from memcore_py.ir.types import TensorType

__all__ = ["CallBuilder", "literal_key", "tensor_type_key", "dim_key", "describe"]

cdef object _IntImm = IntImm
cdef object _ShapeExpr = ShapeExpr
cdef object _Constant = Constant
cdef object _PrimValue = PrimValue
cdef object _Tuple = Tuple
cdef object _Var = Var
cdef object _DataflowVar = DataflowVar
cdef object _TensorType = TensorType
cdef object _Expr = Expr
cdef object _ABSENT = ABSENT
cdef object _REQUIRED = REQUIRED

# argument kinds of an op schema, as small ints
cdef enum ArgKind:
    KIND_EXPR
    KIND_SHAPE
    KIND_TUPLE
    KIND_PRIM


cdef ArgKind _arg_kind(str kind):
    """The ``ArgKind`` of a schema argument kind (``"shape"``, ``"tuple"``, ``"expr"``,
    anything else a scalar, ``"prim"``)."""
    if kind == "shape":
        return KIND_SHAPE
    if kind == "tuple":
        return KIND_TUPLE
    if kind == "expr":
        return KIND_EXPR
    return KIND_PRIM


cdef class _OpEntry:
    """One op of the import: the Op, its arguments' kinds, names and defaults, whether it has
    attributes and whether they can be remembered."""
    cdef object op
    cdef tuple kinds        # ArgKind of each schema argument, as Python ints
    cdef tuple arg_names
    cdef tuple defaults
    cdef Py_ssize_t n_args
    cdef bint has_attrs
    cdef bint fixed_attrs   # no attribute default derived from the arguments
    cdef bint is_reshape

    def __init__(self, str name):
        op = get_op("relax." + name)
        attr_specs = op.schema.attrs
        specs = op.schema.args
        self.op = op
        self.kinds = tuple([<int>_arg_kind(s.kind) for s in specs])
        self.arg_names = tuple([s.name for s in specs])
        self.defaults = tuple([s.default for s in specs])
        self.n_args = len(specs)
        self.has_attrs = bool(attr_specs)
        self.fixed_attrs = not any(callable(a.default) for a in attr_specs)
        self.is_reshape = name == "reshape"


cpdef object dim_key(d):
    """The part of a memo key for one dimension: an int64 constant as its value, other
    constants with their dtype, anything else (a symbolic dim, a float) itself."""
    if type(d) is _IntImm:
        return d.value if d.dtype == "int64" else (d.value, d.dtype)
    return d


cpdef tuple tensor_type_key(ty):
    """The key of a ``TensorType`` ``ty`` by value: its dtype, vdevice and dims
    (:func:`dim_key`), or its rank when its shape is unknown (:meth:`CallBuilder.shared_type`)."""
    cdef list key
    shape = ty.shape
    if shape is None:
        return (ty.dtype, ty.vdevice, None, ty.ndim)
    key = [ty.dtype, ty.vdevice]
    for d in shape:
        key.append(dim_key(d))
    return tuple(key)


cpdef object literal_key(e):
    """The part of :meth:`CallBuilder.call_type`'s key for one argument: a variable's type
    (by identity); a constant's tensor type by value (no type rule reads a constant's data,
    only its type); the values of a literal shape, scalar or tuple; any other expression
    itself (by identity)."""
    cdef list key
    cls = type(e)
    if cls is _Var or cls is _DataflowVar:
        return e.ty
    if cls is _Constant and type(e.ty) is _TensorType:
        return (_Constant, *tensor_type_key(e.ty))
    if cls is _ShapeExpr:
        key = [_ShapeExpr]
        for d in e.values:
            key.append(dim_key(d))
        return tuple(key)
    if cls is _PrimValue:
        return (_PrimValue, dim_key(e.value))
    if cls is _Tuple:
        key = [_Tuple]
        for f in e.fields:
            key.append(literal_key(f))
        return tuple(key)
    return e


cpdef str describe(v):
    """A value for an error message: an expression with its type, anything else with its
    class and repr."""
    if isinstance(v, _Expr):
        return f"{type(v).__name__} of type {v.ty!r}"
    return f"{type(v).__name__} {v!r}"


cdef bint _has_minus_one(shape):
    """Whether ``shape`` is a ``ShapeExpr`` with a constant ``-1`` dimension."""
    if type(shape) is _ShapeExpr:
        for d in shape.values:
            if type(d) is _IntImm and d.value == -1:
                return True
    return False


cdef object _checked_dim(d):
    """A written shape dimension (not an int) as a PrimExpr."""
    if isinstance(d, PrimExpr):
        return d
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise IRError(f"a shape dimension must be an int or a symbolic expression; got {describe(d)}")
    return IntImm(int(d))


cdef object _scalar_or_expr(v):
    """A written scalar (not an int) as a ``PrimValue``; an expression as it is."""
    if isinstance(v, _Expr):
        return v
    if isinstance(v, PrimExpr):
        return PrimValue(v)
    if isinstance(v, bool):
        return PrimValue(IntImm(int(v), "bool"))
    if isinstance(v, (int, np.integer)):
        return PrimValue(IntImm(int(v)))
    if isinstance(v, (float, np.floating)):
        return PrimValue(FloatImm(float(v), "float64"))
    raise IRError(f"expected a scalar or a Relax expression; got {describe(v)}")


@cython.final
cdef class CallBuilder:
    """Typed calls of one import, and what the import remembers to build them.

    Parameters
    ----------
    bb : BlockBuilder
        The import's builder: calls are emitted into it (:meth:`op`) and type rules look
        functions up in it.
    env : dict
        The import's FX node -> value table, read by :meth:`value`.
    fx_node : type or tuple
        The class of FX nodes (``torch.fx.Node``), or ``()`` when values are no FX nodes.
    """
    cdef readonly object bb
    cdef dict env
    cdef object fx_node
    cdef dict ops           # op name -> _OpEntry
    cdef dict attrs         # (op, attributes as written) -> converted, complete attributes
    cdef dict int_imms      # int -> its int64 IntImm
    cdef dict types         # (op, attribute values, argument keys) -> the rule's type
    cdef dict tensor_types  # (dtype, vdevice, dims) -> the one TensorType of that value

    def __init__(self, bb, dict env, fx_node):
        self.bb = bb
        self.env = env
        self.fx_node = fx_node
        self.ops = {}
        self.attrs = {}
        self.int_imms = {}
        self.types = {}
        self.tensor_types = {}

    # ------------------------------------------------------------------------- values
    cpdef object value(self, arg):
        """The Relax-side value of an FX argument: nodes looked up in ``env``, lists and
        tuples element-wise, anything else (ints, floats, None, dtypes) unchanged."""
        if type(arg) is int:
            return arg
        if isinstance(arg, self.fx_node):
            return self.env[arg]
        if isinstance(arg, tuple):
            return tuple([self.value(a) for a in <tuple>arg])
        if isinstance(arg, list):
            return [self.value(a) for a in <list>arg]
        return arg

    def args(self, node):
        """``node.args`` with :meth:`value` applied."""
        return [self.value(a) for a in node.args]

    # ------------------------------------------------------------------------- calls
    def call(self, str name, *args, **attrs):
        """An unemitted, typed call of ``relax.<name>``: ``args`` in the op's schema order,
        ``attrs`` by name (converted and completed by the op table).

        Raises
        ------
        IRError
            Unknown op, too many arguments, a required one missing, a written value its
            kind does not take, an attribute the op table rejects, or the type rule's error.
        """
        return self.typed_call(name, args, attrs)

    def op(self, str name, *args, **attrs):
        """Emit ``relax.<name>(*args, **attrs)`` in the builder's open block (see :meth:`call`)."""
        return emit(self.bb, self.typed_call(name, args, attrs), "")

    cdef object typed_call(self, str name, tuple args, dict attrs):
        """:meth:`call` with its arguments as a tuple and its attributes as a dict."""
        cdef _OpEntry entry = self.ops.get(name)
        cdef Py_ssize_t i, n = len(args)
        cdef int kind
        cdef list exprs
        if entry is None:
            entry = _OpEntry(name)
            self.ops[name] = entry
        if n > entry.n_args:
            raise IRError(f"relax.{name} takes at most {entry.n_args} arguments; got {n}")
        exprs = []
        for i in range(entry.n_args):
            v = args[i] if i < n else entry.defaults[i]
            if isinstance(v, _Expr):  # every argument kind takes an expression as it is
                exprs.append(v)
                continue
            if v is _ABSENT:
                break
            if v is _REQUIRED:
                raise IRError(f"relax.{name} needs the argument {entry.arg_names[i]!r}")
            kind = entry.kinds[i]
            exprs.append(self.written_arg(<ArgKind>kind, v))
        op = entry.op
        if attrs or entry.has_attrs:  # else none to convert or complete
            attrs = self.converted_attrs(op, attrs, exprs) if entry.fixed_attrs else op.convert_attrs(attrs, exprs)
        exprs_t = tuple(exprs)  # all Relax expressions (written_arg)
        ty = self.call_type(op, exprs_t, attrs)
        if entry.is_reshape and len(exprs_t) > 1 and _has_minus_one(exprs_t[1]) and ty.shape is not None:
            # TVM's reshape constructor (ConvertNewShapeToExpr) stores the -1 resolved, as the
            # type rule resolves it
            resolved = tuple(ty.shape)  # PrimExprs
            exprs_t = (exprs_t[0], shape_expr_node(resolved, shape_type_node(resolved)))
            ty = self.call_type(op, exprs_t, attrs)
        return call_node(op, exprs_t, attrs if attrs else EMPTY_ATTRS, (), ty)

    cdef object written_arg(self, ArgKind kind, v):
        """The Relax argument of kind ``kind`` written as ``v`` (not an expression): a list
        of dims as a ``ShapeExpr``, a list of scalars as a ``Tuple``, a scalar as a ``PrimValue``."""
        cdef list types
        if kind == KIND_SHAPE:
            values = tuple([self.dim(d) for d in v])  # PrimExprs
            return shape_expr_node(values, shape_type_node(values))
        if kind == KIND_TUPLE:
            fields = tuple([self.scalar(x) for x in v])  # expressions
            types = [f.ty for f in fields]
            return tuple_node(fields, tuple_type_node(tuple(types))) if None not in types else Tuple(fields)
        if kind == KIND_EXPR:
            raise IRError(f"expected a Relax expression; got {describe(v)}")
        return self.scalar(v)

    cdef object dim(self, d):
        """A shape dimension as a PrimExpr (an int as its shared IntImm)."""
        if type(d) is int:
            imm = self.int_imms.get(d)
            if imm is None:
                imm = self.int_imms[d] = IntImm(d)
            return imm
        return _checked_dim(d)

    cdef object scalar(self, v):
        """A scalar argument as a ``PrimValue`` (an int of the shared IntImm); expressions as
        they are."""
        if type(v) is int:
            return prim_value_node(self.dim(v), prim_type_node("int64"))  # PrimValue(IntImm(v))
        return _scalar_or_expr(v)

    cdef dict converted_attrs(self, op, dict attrs, list exprs):
        """``op.convert_attrs(attrs, exprs)`` of an op without derived defaults, one dict per
        distinct written attributes in the import. Remembered only for values of exact types
        whose conversion depends on their value alone: ints, strings, bools, None, floats
        (not nan) and lists or tuples of ints (``True == 1`` and ``-0.0 == 0.0`` must not
        meet in a key)."""
        cdef list key = [op]
        cdef double f
        for k, v in attrs.items():
            t = type(v)
            if t is int or t is str or t is bool or v is None:
                key.append((k, t, v))
            elif t is float and v == v:  # the sign tells -0.0 from 0.0; a nan is not remembered
                f = v
                key.append((k, t, v, copysign(1.0, f)))
            elif (t is list or t is tuple) and all([type(x) is int for x in v]):
                key.append((k, t, *v))
            else:
                return op.convert_attrs(attrs, exprs)
        key_t = tuple(key)
        out = self.attrs.get(key_t)
        if out is None:
            out = self.attrs[key_t] = op.convert_attrs(attrs, exprs)
        return out

    cpdef object call_type(self, op, tuple exprs, dict attrs):
        """The type :func:`~memcore_py.ir.infer.infer_type` gives the call ``op(*exprs)``
        with ``attrs``, the rule run once per import for each distinct key (the op, the
        attribute values, :func:`literal_key` of each argument). A call whose rule fails is
        not remembered (each raises).

        Raises
        ------
        IRError
            The type rule's error.
        """
        cdef list key = [op]
        key.extend(attrs.values())
        for e in exprs:
            cls = type(e)
            key.append(e.ty if cls is _Var or cls is _DataflowVar else literal_key(e))
        key_t = tuple(key)
        try:
            ty = self.types.get(key_t)
        except TypeError:  # an attribute value that is no key (a list): the rule itself
            return infer_type(new_call(op, exprs, attrs), self.bb)
        if ty is None:
            ty = self.types[key_t] = self.shared_type(infer_type(new_call(op, exprs, attrs), self.bb))
        return ty

    # ------------------------------------------------------------------------- types
    def tensor_type(self, shape, dtype):
        """``TensorType(shape, dtype)`` as :meth:`shared_type` shares it (``shape``: ints
        and PrimExprs)."""
        cdef list key = [dtype, None]
        for d in shape:
            key.append(d if type(d) is int else dim_key(d))  # shared_type's key
        key_t = tuple(key)
        ty = self.tensor_types.get(key_t)
        if ty is None:
            ty = self.tensor_types[key_t] = TensorType(shape, dtype)
        return ty

    cpdef object shared_type(self, ty):
        """The first tensor type of the import equal to ``ty`` (same dtype, vdevice and dims,
        constant dims by value, symbolic ones by identity), else ``ty`` itself, so that
        equal types are one object and :meth:`call_type` knows the calls on them for equal."""
        if type(ty) is not _TensorType:
            return ty
        key_t = tensor_type_key(ty)
        return self.tensor_types.setdefault(key_t, ty)
