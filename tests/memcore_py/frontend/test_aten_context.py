"""memcore_py.frontend._aten_context.AtenContext.call: the calls the ATen (and ONNX)
converters build, whose types and attributes are remembered per import.

Each test builds calls in a fresh context (no torch needed) and checks that what is
remembered never shows: a type equals the op's rule's, an error is raised every time, and
values that Python finds equal but the op table converts differently stay apart.
"""
import math

import pytest

from memcore_py.errors import IRError
from memcore_py.frontend._aten_context import AtenContext
from memcore_py.ir import Var
from memcore_py.ir.construct import new_call
from memcore_py.ir.infer import infer_type
from memcore_py.ir.prim import PrimVar
from memcore_py.ir.structural import structural_equal
from memcore_py.ir.types import TensorType, type_equal


@pytest.fixture
def ctx():
    c = AtenContext(None)
    with c.bb.function("main", []):
        with c.bb.dataflow():
            yield c
            c.bb.emit_output(c.const(0.0))
        c.bb.emit_func_output(c.const(0.0))


def _rule_type(call):
    return infer_type(new_call(call.op, call.args, call.attrs), None)


def test_calls_on_equal_types_share_the_rules_type(ctx):
    x = Var("x", TensorType((2, 3), "float32"))
    y = Var("y", TensorType((2, 3), "float32"))  # an equal type, another object
    a = ctx.call("add", x, x)
    b = ctx.call("add", y, y)
    assert type_equal(a.ty, _rule_type(a)) and type_equal(b.ty, _rule_type(b))
    assert ctx.shared_type(y.ty) is ctx.shared_type(x.ty)
    assert ctx.call("add", a, b).ty is ctx.call("add", b, a).ty


def test_symbolic_dims_are_told_apart(ctx):
    n, m = PrimVar("n"), PrimVar("m")
    a = ctx.call("add", Var("x", TensorType((n, 3), "float32")), Var("y", TensorType((n, 3), "float32")))
    b = ctx.call("add", Var("x", TensorType((m, 3), "float32")), Var("y", TensorType((m, 3), "float32")))
    assert a.ty.shape[0] is n and b.ty.shape[0] is m


def test_literal_arguments_are_keyed_by_value(ctx):
    x = Var("x", TensorType((2, 3), "float32"))
    assert [d.value for d in ctx.call("reshape", x, [3, 2]).ty.shape] == [3, 2]
    assert [d.value for d in ctx.call("reshape", x, [6]).ty.shape] == [6]
    assert [d.value for d in ctx.call("reshape", x, [3, 2]).ty.shape] == [3, 2]
    resolved = ctx.call("reshape", x, [-1, 2])
    assert [d.value for d in resolved.args[1].values] == [3, 2]  # -1 stored resolved, as TVM
    sliced = ctx.call("strided_slice", x, [1], [0], [2], [1])
    assert [d.value for d in sliced.ty.shape] == [2, 2]
    assert [d.value for d in ctx.call("strided_slice", x, [1], [1], [2], [1]).ty.shape] == [2, 1]


def test_a_failing_rule_raises_every_time(ctx):
    x = Var("x", TensorType((2, 3), "float32"))
    y = Var("y", TensorType((4, 5), "float32"))
    for _ in range(2):
        with pytest.raises(IRError, match="cannot be broadcast"):
            ctx.call("add", x, y)


def test_written_attributes_are_converted_by_exact_value(ctx):
    x = Var("x", TensorType((2, 3), "float32"))
    assert ctx.call("nn.softmax", x, axis=1).attrs["axis"] == 1
    with pytest.raises(IRError, match="must be an int"):
        ctx.call("nn.softmax", x, axis=True)  # True == 1, but a bool is no int
    assert ctx.call("permute_dims", x, axes=[1, 0]).attrs["axes"] == (1, 0)
    with pytest.raises(IRError, match="list of ints"):
        ctx.call("permute_dims", x, axes=[True, False])
    g = Var("g", TensorType((3,), "float32"))
    zero = ctx.call("nn.layer_norm", x, g, g, axes=[-1], epsilon=0.0).attrs["epsilon"]
    negative_zero = ctx.call("nn.layer_norm", x, g, g, axes=[-1], epsilon=-0.0).attrs["epsilon"]
    assert math.copysign(1.0, zero) == 1.0 and math.copysign(1.0, negative_zero) == -1.0


def test_calls_equal_the_unremembered_build(ctx):
    x = Var("x", TensorType((2, 3), "float32"))
    first = ctx.call("permute_dims", x, axes=[1, 0])
    again = ctx.call("permute_dims", x, axes=[1, 0])
    fresh = AtenContext(None).call("permute_dims", x, axes=[1, 0])
    assert structural_equal(first, again) and structural_equal(first, fresh)
