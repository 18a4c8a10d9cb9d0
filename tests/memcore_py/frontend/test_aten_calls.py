"""memcore_py/frontend/_aten_calls.pyx: the compiled call builder of the importers.

A :class:`CallBuilder` is used here directly, without torch: its calls are checked against
the op's type rule run on the call rebuilt with the checked constructors, a memo hit must
hand out the very type object of the first call, the memo keys must tell apart what the
rules tell apart, and what a converter writes wrong must be an :class:`IRError`.
"""
import gc

import numpy as np
import pytest

from memcore_py._compiled import load_compiled
from memcore_py.errors import IRError
from memcore_py.frontend._aten_context import AtenContext
from memcore_py.ir import Var
from memcore_py.ir.builder import BlockBuilder
from memcore_py.ir.expr import Call, DataflowVar, PrimValue, ShapeExpr, Tuple
from memcore_py.ir.infer import infer_type
from memcore_py.ir.op import get_op
from memcore_py.ir.prim import IntImm, PrimVar
from memcore_py.ir.structural import structural_equal
from memcore_py.ir.types import PrimType, ShapeType, TensorType, TupleType, type_equal

CALLS = load_compiled("memcore_py.frontend._aten_calls")


class _Node:
    """A stand-in FX node class (``value`` looks instances up in ``env``)."""


@pytest.fixture
def builder():
    bb = BlockBuilder()
    env = {}
    calls = CALLS.CallBuilder(bb, env, _Node)
    with bb.function("main", []):
        with bb.dataflow():
            yield calls
            bb.emit_output(ShapeExpr([1]))
        bb.emit_func_output(ShapeExpr([1]))


def _x(shape=(2, 3), dtype="float32", name="x"):
    return Var(name, TensorType(shape, dtype))


def _checked_type(call):
    """The op's rule on the call rebuilt with the checked constructor."""
    return infer_type(Call(call.op, list(call.args), dict(call.attrs)), None)


def test_a_call_has_the_rules_type_and_the_checked_constructors_fields(builder):
    x = _x()
    call = builder.call("permute_dims", x, axes=[1, 0])
    assert call.op is get_op("relax.permute_dims")
    assert call.args == (x,)
    assert call.attrs["axes"] == (1, 0)
    assert [d.value for d in call.ty.shape] == [3, 2] and call.ty.dtype == "float32"
    assert type_equal(call.ty, _checked_type(call))
    checked = Call(get_op("relax.permute_dims"), [x], {"axes": [1, 0]})
    assert structural_equal(call, Call(checked.op, checked.args, call.attrs, (), _checked_type(checked)))


def test_a_memo_hit_returns_the_same_type_object(builder):
    x, y = _x(), _x(name="y")
    first = builder.call("add", x, x)
    assert builder.call("add", x, x).ty is first.ty
    # another variable of an equal type: one shared type object, so the same memo entry
    assert builder.shared_type(y.ty) is builder.shared_type(x.ty)
    assert builder.call("add", first, builder.call("add", y, y)).ty is first.ty
    op = get_op("relax.add")
    assert builder.call_type(op, (x, x), {}) is first.ty


def test_literal_arguments_are_keyed_by_value_and_dtype(builder):
    x = _x()
    assert [d.value for d in builder.call("reshape", x, [3, 2]).ty.shape] == [3, 2]
    assert [d.value for d in builder.call("reshape", x, [6]).ty.shape] == [6]
    # equal values in two ShapeExpr objects: one key
    op = get_op("relax.reshape")
    a = builder.call_type(op, (x, ShapeExpr([3, 2])), {})
    assert builder.call_type(op, (x, ShapeExpr([3, 2])), {}) is a
    assert CALLS.literal_key(ShapeExpr([3, 2])) == CALLS.literal_key(ShapeExpr([IntImm(3), IntImm(2)]))
    assert CALLS.literal_key(PrimValue(IntImm(1, "int32"))) != CALLS.literal_key(PrimValue(IntImm(1)))
    assert CALLS.dim_key(IntImm(7)) == 7
    assert CALLS.dim_key(IntImm(7, "int32")) == (7, "int32")
    n = PrimVar("n")
    assert CALLS.dim_key(n) is n
    assert CALLS.literal_key(x) is x.ty
    t = Tuple([PrimValue(IntImm(1)), PrimValue(IntImm(2))])
    assert CALLS.literal_key(t) == CALLS.literal_key(Tuple([PrimValue(IntImm(1)), PrimValue(IntImm(2))]))


def _counting_rules(monkeypatch):
    """The list the compiled builder appends each call it runs a type rule on to."""
    ran = []

    def counting(call, mod=None):
        ran.append(call.op.name)
        return infer_type(call, mod)

    monkeypatch.setattr(CALLS, "infer_type", counting)
    return ran


def test_a_memo_hit_runs_no_rule(builder, monkeypatch):
    ran = _counting_rules(monkeypatch)
    x = _x()
    builder.call("add", x, x)
    builder.call("add", x, x)
    builder.call("reshape", x, [3, 2])
    builder.call("reshape", x, [3, 2])
    assert ran == ["relax.add", "relax.reshape"]


def test_constants_are_keyed_by_their_type(builder, monkeypatch):
    """Each scalar a converter writes is a new Constant: calls on constants of equal types
    share the rule's type, constants of other types do not."""
    ran = _counting_rules(monkeypatch)
    x = _x()
    first = builder.call("multiply", x, AtenContext.const(0.5, "float32"))
    again = builder.call("multiply", x, AtenContext.const(2.0, "float32"))
    assert again.ty is first.ty and type_equal(first.ty, _checked_type(first))
    assert ran == ["relax.multiply"]
    assert CALLS.literal_key(AtenContext.const(1.0, "float32")) == CALLS.literal_key(AtenContext.const(3.0, "float32"))
    assert CALLS.literal_key(AtenContext.const(1.0, "float32")) != CALLS.literal_key(AtenContext.const(1.0, "float16"))
    assert CALLS.literal_key(AtenContext.const([1.0, 2.0], "float32")) != CALLS.literal_key(AtenContext.const(1.0, "float32"))
    widened = builder.call("multiply", _x((2, 3), "float64"), AtenContext.const(0.5, "float64"))
    assert widened.ty.dtype == "float64" and widened.ty is not first.ty
    vector = builder.call("multiply", x, AtenContext.const([1.0, 2.0, 3.0], "float32"))
    assert [d.value for d in vector.ty.shape] == [2, 3] and vector.ty is first.ty
    with pytest.raises(IRError, match="cannot be broadcast"):
        builder.call("multiply", x, AtenContext.const([1.0, 2.0], "float32"))
    assert CALLS.tensor_type_key(TensorType((2, 3), "float32")) == CALLS.tensor_type_key(x.ty)
    assert CALLS.tensor_type_key(TensorType(None, "float32", 2)) == ("float32", None, None, 2)


def test_symbolic_dims_are_told_apart(builder):
    n, m = PrimVar("n"), PrimVar("m")
    a = builder.call("add", _x((n, 3)), _x((n, 3), name="y"))
    b = builder.call("add", _x((m, 3)), _x((m, 3), name="y"))
    assert a.ty.shape[0] is n and b.ty.shape[0] is m


def test_a_reshapes_minus_one_is_stored_resolved(builder):
    call = builder.call("reshape", _x(), [-1, 2])
    assert [d.value for d in call.args[1].values] == [3, 2]
    assert [d.value for d in call.ty.shape] == [3, 2]


def test_written_values_become_relax_arguments(builder):
    x = _x((4, 6))
    sliced = builder.call("strided_slice", x, [1], [np.int64(1)], [5], [2])
    assert all(type(a) is Tuple for a in sliced.args[1:])
    assert [f.value.value for f in sliced.args[2].fields] == [1]
    assert [d.value for d in sliced.ty.shape] == [4, 2]
    assert type_equal(sliced.ty, _checked_type(sliced))


def test_literal_arguments_are_the_checked_constructors_nodes(builder):
    """Shapes, tuples of scalars and int scalars are written slot by slot: each field and
    type must be what ``ShapeExpr``, ``Tuple`` and ``PrimValue`` store."""
    x = _x((4, 6))
    shape = builder.call("reshape", x, [6, 4]).args[1]
    checked_shape = ShapeExpr([6, 4])
    assert type(shape) is ShapeExpr and type(shape.ty) is ShapeType
    assert [d.value for d in shape.values] == [6, 4] and shape.ty.values == shape.values
    assert shape.ty.ndim == checked_shape.ty.ndim == 2
    resolved = builder.call("reshape", x, [-1, 3]).args[1]
    assert [d.value for d in resolved.values] == [8, 3] and resolved.ty.values == resolved.values
    assert resolved.ty.ndim == 2
    begin = builder.call("strided_slice", x, [1], [2], [5], [1]).args[2]
    checked_begin = Tuple([PrimValue(IntImm(2))])
    assert type(begin) is Tuple and type(begin.ty) is TupleType and len(begin.ty.fields) == 1
    (field,) = begin.fields
    assert type(field) is PrimValue and field.value.value == 2 and field.value.dtype == "int64"
    assert type(field.ty) is PrimType and field.ty.dtype == checked_begin.fields[0].ty.dtype
    assert field.ty.value is None and begin.ty.fields[0] is field.ty
    assert structural_equal(begin, checked_begin) and structural_equal(shape, checked_shape)
    assert not any(gc.is_tracked(o) for o in (shape, shape.ty, begin, begin.ty, field, field.ty))


def test_op_emits_the_call(builder):
    x = _x()
    var = builder.op("add", x, x)
    assert type(var) is DataflowVar and var.name == "lv"
    bound = builder.bb.lookup_binding(var)
    assert bound.op is get_op("relax.add") and var.ty is bound.ty


def test_calls_are_untracked_by_the_collector(builder):
    x = _x()
    assert not gc.is_tracked(builder.call("add", x, x))


def test_values_of_nodes_are_looked_up(builder):
    node, other = _Node(), _Node()
    x = _x()
    env = {node: x}
    calls = CALLS.CallBuilder(builder.bb, env, _Node)
    assert calls.value(node) is x
    assert calls.value([node, 2, (node, None)]) == [x, 2, (x, None)]
    with pytest.raises(KeyError):
        calls.value(other)
    assert CALLS.CallBuilder(builder.bb, {}, ()).value(node) is node  # () : no node class


@pytest.mark.parametrize("build, message", [
    (lambda c, x: c.call("no_such_op", x), "unknown operator"),
    (lambda c, x: c.call("add", x, x, x), "takes at most 2 arguments"),
    (lambda c, x: c.call("add", x), "needs the argument"),
    (lambda c, x: c.call("add", x, [1]), "expected a Relax expression"),
    (lambda c, x: c.call("reshape", x, [True, 2]), "shape dimension must be an int"),
    (lambda c, x: c.call("reshape", x, ["a"]), "shape dimension must be an int"),
    (lambda c, x: c.call("strided_slice", x, [1], ["a"], [2]), "expected a scalar"),
    (lambda c, x: c.call("nn.softmax", x, axis=True), "must be an int"),
    (lambda c, x: c.call("add", x, _x((4, 5), name="y")), "cannot be broadcast"),
])
def test_bad_input_is_an_ir_error_every_time(builder, build, message):
    x = _x()
    for _ in range(2):  # a failing call is not remembered
        with pytest.raises(IRError, match=message):
            build(builder, x)


def test_describe():
    assert CALLS.describe(3) == "int 3"
    assert CALLS.describe(_x()).startswith("Var of type TensorType(")
